// SPDX-License-Identifier: BSD-3-Clause
// seed: seed notebooks run on every launch of a kernel.
#include "gateway/seed.h"

#include <strings.h>

#include <filesystem>

#include <boost/asio/this_coro.hpp>
#include <fmt/core.h>

#include "gateway/exec_collector.h"
#include "gateway/kernel_hub.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using common::Errc;
using common::make_error;

namespace {

constexpr auto kDeathPoll = std::chrono::milliseconds(250);

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

std::shared_ptr<const Seed> make_seed(const launcher::Notebook& nb, const std::string& label,
                                      const std::function<bool(const std::string&)>& keep) {
  auto seed = std::make_shared<Seed>();
  seed->label = label;
  seed->language = nb.language();
  seed->kernel_name = nb.kernel_name();
  for (auto& cell : nb.code_cells())
    if (!blank(cell.source) && keep(cell.source)) seed->cells.push_back(std::move(cell));
  return seed;
}

common::Result<std::shared_ptr<const Seed>> load_seed(const std::string& path) {
  auto nb = launcher::load_notebook(path);
  if (!nb) return make_error(nb.error().code, "seed notebook " + nb.error().message);
  return make_seed(nb.value(), std::filesystem::path(path).filename().string(), [](const std::string&) { return true; });
}

bool seed_applies(const Seed& seed, const launcher::KernelSpec& spec) {
  if (!seed.language.empty() && !spec.language.empty())
    return ::strcasecmp(seed.language.c_str(), spec.language.c_str()) == 0;
  return !seed.kernel_name.empty() && seed.kernel_name == spec.name;
}

common::Result<std::shared_ptr<const Seed>> seed_for(const launcher::KernelSpec& spec,
                                                     const std::shared_ptr<const Seed>& global) {
  auto md = spec.metadata.find("cellgate");
  if (md != spec.metadata.end() && md->is_object()) {
    auto s = md->find("seed");
    if (s != md->end() && !s->is_null()) {
      if (!s->is_string() || s->get<std::string>().empty())
        return make_error(Errc::kInternal, "kernelspec " + spec.name + ": metadata.cellgate.seed must be a path");
      std::filesystem::path p(s->get<std::string>());
      if (p.is_relative()) p = std::filesystem::path(spec.dir) / p;
      auto seed = load_seed(p.string());
      if (!seed) return make_error(Errc::kInternal, "kernelspec " + spec.name + ": " + seed.error().message);
      const auto& lang = seed.value()->language;
      if (!lang.empty() && !spec.language.empty() && ::strcasecmp(lang.c_str(), spec.language.c_str()) != 0)
        return make_error(Errc::kInternal, fmt::format("kernelspec {}: seed notebook {} is {}, the kernel is {}",
                                                       spec.name, seed.value()->label, lang, spec.language));
      return seed;
    }
  }
  if (global && seed_applies(*global, spec)) return global;
  return std::shared_ptr<const Seed>();
}

nlohmann::json SeedFailure::to_json() const {
  return {{"notebook", notebook}, {"cell", cell}, {"ename", ename}, {"evalue", evalue}};
}

asio::awaitable<common::Status> run_seed(std::weak_ptr<KernelHub> weak, std::shared_ptr<const Seed> seed,
                                         std::chrono::seconds timeout, std::shared_ptr<SeedFailure> failure) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto ex = co_await asio::this_coro::executor;
  for (const auto& cell : seed->cells) {
    auto hub = weak.lock();
    if (!hub) co_return make_error(Errc::kInternal, "kernel went away while seeding");
    std::string msg_id;
    // Not silent: IRkernel answers a silent execute "ok" whatever the code did. Hidden instead: clients
    // see none of the seed's outputs, and the cell leaves no history.
    auto msg = make_execute_request(cell.source, /*silent=*/false, /*store_history=*/false, msg_id);
    auto collector = std::make_shared<ExecCollector>(ex, 64 << 10, nullptr);
    auto fail = [&](Errc code, std::string ename, std::string evalue) {
      hub->unwatch(msg_id);
      if (failure) *failure = SeedFailure{seed->label, cell.index, ename, evalue};
      return make_error(code, fmt::format("seed notebook {}: cell {} failed: {}{}{}", seed->label, cell.index + 1, ename,
                                          evalue.empty() ? "" : ": ", evalue));
    };
    if (!hub->send_watched(launcher::Channel::kShell, msg, msg_id, collector,
                           {.now = true, .hidden = true, .origin = journal::Origin{"", journal::client::kSeed, ""}}))
      co_return fail(Errc::kInternal, "KernelDied", "the kernel's channels are closed");
    // While starting, a kernel's death is not a state change: watch the process as well.
    while (!collector->done() && std::chrono::steady_clock::now() < deadline && hub->kernel().process().pid > 0)
      co_await collector->wait_until(std::min(deadline, std::chrono::steady_clock::now() + kDeathPoll));
    if (!collector->done() && hub->kernel().process().pid <= 0)
      co_return fail(Errc::kInternal, "KernelDied", "the kernel died while running the seed");
    if (collector->died_) co_return fail(Errc::kInternal, "KernelDied", collector->death_reason_);
    if (!collector->done())
      co_return fail(Errc::kTimeout, "Timeout", fmt::format("the seed did not finish within {} s", timeout.count()));
    if (collector->reply_status_ != "ok" || collector->saw_error_)
      co_return fail(Errc::kInternal, collector->ename_.empty() ? "Error" : collector->ename_, collector->evalue_);
    hub->unwatch(msg_id);
  }
  co_return common::ok();
}

}  // namespace cellgate::gateway
