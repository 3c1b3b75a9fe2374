// SPDX-License-Identifier: BSD-3-Clause
// seed: seed notebooks (Kernel Gateway's seed_uri). A seed's code cells run on a kernel after every
// launch — start, restart and auto-restart — before the kernel is declared ready.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "kernel-launcher/kernelspec.h"
#include "kernel-launcher/notebook_file.h"

namespace cellgate::gateway {

class KernelHub;

struct Seed {
  std::string label;        // the notebook's file name, for messages
  std::string language;     // lower-case; "" when the notebook declares none
  std::string kernel_name;  // metadata.kernelspec.name, or ""
  std::vector<launcher::NotebookCell> cells;  // the code cells to run, with their index in the notebook
};

// A seed holding every non-empty code cell of the notebook at path. Errors name the path.
common::Result<std::shared_ptr<const Seed>> load_seed(const std::string& path);
// A seed from an already parsed notebook, keeping only the code cells `keep` accepts.
std::shared_ptr<const Seed> make_seed(const launcher::Notebook& nb, const std::string& label,
                                      const std::function<bool(const std::string&)>& keep);

// Whether a seed is for kernels of this spec: the languages match (case-insensitive) when both are
// declared; otherwise the notebook's kernelspec name must be the spec's (Kernel Gateway's rule).
bool seed_applies(const Seed& seed, const launcher::KernelSpec& spec);

// The seed a kernel of this spec gets: its kernel.json metadata.cellgate.seed (a path, relative to the
// kernelspec's dir) if any, else `global` if it applies, else null. A kernelspec seed that cannot be read
// or whose language is not the spec's is an error.
common::Result<std::shared_ptr<const Seed>> seed_for(const launcher::KernelSpec& spec,
                                                     const std::shared_ptr<const Seed>& global);

// Why a seed failed: the cell's index in the notebook and the kernel's error.
struct SeedFailure {
  std::string notebook;
  size_t cell = 0;  // index into the notebook's cells (0-based); messages say "cell N" counting from 1
  std::string ename, evalue;
  nlohmann::json to_json() const;
};

// Runs the seed's cells in order (hidden from clients, no history), each on the kernel while it is
// still starting. Stops at the first error; the whole seed must finish within `timeout`. On failure
// the error message names the notebook, the cell and the error, and `failure` (if set) gets the details.
boost::asio::awaitable<common::Status> run_seed(std::weak_ptr<KernelHub> hub, std::shared_ptr<const Seed> seed,
                                                std::chrono::seconds timeout,
                                                std::shared_ptr<SeedFailure> failure);

}  // namespace cellgate::gateway
