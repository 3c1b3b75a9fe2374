// SPDX-License-Identifier: BSD-3-Clause
// reproduce: re-runs a kernel's journal on a new kernel of the same kernelspec, on a new workspace
// restored from the journal's baseline snapshot, and says cell by cell whether the outputs match
// (journal/compare.h) and which cell diverged first.
#pragma once

#include <cstdint>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "journal/render.h"
#include "state/journal_records.h"
#include "state/users.h"

namespace cellgate::state {
class Database;
}
namespace cellgate::workspace {
class WorkspaceManager;
}

namespace cellgate::gateway {

class KernelManager;
class Offload;

struct ReproduceRequest {
  int64_t upto = INT64_MAX;  // the last journal seq to re-run
  bool keep = false;         // leave the kernel and its workspace running for inspection
};

// Parses {"upto"?: N, "keep"?: bool}; kBadRequest on anything else.
common::Result<ReproduceRequest> parse_reproduce_request(const std::string& body);

struct ReproduceServices {
  KernelManager& kernels;
  workspace::WorkspaceManager& workspaces;
  Offload& offload;
  state::Database& db;
  journal::BlobReader read;  // the journal's outputs kept in the store (called on the offload pool)
};

// The kernel and workspace are the caller's (their quota pays). Errors: kConflict (no baseline, or
// the baseline snapshot is gone), kForbidden (quota), kNotFound (the kernelspec is gone), kInternal.
// Cells the kernel aborted in the recording are skipped; the kernel's recorded restarts and deaths
// restart the reproduction's kernel at the same point. Io thread only.
boost::asio::awaitable<common::Result<nlohmann::json>> reproduce(ReproduceServices services, state::User caller,
                                                                 state::JournalRow journal, ReproduceRequest request);

}  // namespace cellgate::gateway
