// SPDX-License-Identifier: BSD-3-Clause
// journal_api: a kernel's execution journal.
#include "gateway/api/journal_api.h"

#include <charconv>

#include "gateway/kernel_manager.h"
#include "gateway/offload.h"
#include "gateway/reproduce.h"
#include "journal/journal.h"
#include "journal/render.h"
#include "state/journal_records.h"
#include "workspace/io_util.h"
#include "workspace/object_store.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {

constexpr int64_t kPage = 500;  // entries read from the database at a time

// A non-negative integer query parameter; fallback when absent; nullopt when malformed.
std::optional<int64_t> count_param(const Call& call, std::string_view name, int64_t fallback, int64_t max) {
  std::string v = call.query(name);
  if (v.empty()) return fallback;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0 || n > max) return std::nullopt;
  return n;
}

journal::BlobReader store_reader(workspace::ObjectStore& store) {
  return [&store](const std::string& hash) -> common::Result<std::string> {
    auto fd = store.open_object(hash);
    if (!fd) return fd.error();
    return workspace::read_all(fd->get(), uint64_t{64} << 20);
  };
}

json journal_row_json(const state::JournalRow& j, int64_t entries) {
  return {{"kernel_id", j.kernel_id}, {"owner", j.owner},     {"kernelspec", j.kernelspec}, {"workspace", j.workspace},
          {"created", j.created},     {"deleted", j.deleted}, {"baseline", j.baseline},     {"note", j.note},
          {"baseline_bytes", j.baseline_bytes}, {"entries", entries}};
}

// Entries after since, a page at a time, until limit entries or about budget bytes of rows are read.
common::Result<std::vector<state::JournalEntryRow>> read_entries(state::Database& db, const std::string& kernel_id,
                                                                 int64_t since, int64_t limit, size_t budget) {
  std::vector<state::JournalEntryRow> out;
  size_t bytes = 0;
  while (static_cast<int64_t>(out.size()) < limit && bytes < budget) {
    auto page = state::list_journal_entries(db, kernel_id, since, std::min(kPage, limit - static_cast<int64_t>(out.size())));
    if (!page) return page.error();
    if (page->empty()) break;
    for (auto& e : page.value()) {
      since = e.seq;
      bytes += e.code.size() + e.outputs.size() + 512;
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace

awaitable<http::Reply> JournalApi::list(Call& call) {
  const auto& user = call.caller.user;
  std::optional<std::string> owner = user.name;
  if (user.admin) {
    std::string o = call.query("owner");
    owner = o.empty() ? std::nullopt : std::optional<std::string>(o);
  }
  co_await journal_.sync();
  auto rows = state::list_journals(db_, owner);
  if (!rows) co_return reply(http::error_response(call.req, rows.error()));
  json list = json::array();
  for (const auto& j : rows.value()) {
    auto n = state::journal_entry_count(db_, j.kernel_id);
    list.push_back(journal_row_json(j, n ? n.value() : 0));
  }
  co_return reply(http::json_response(call.req, http::status::ok, list));
}

awaitable<http::Reply> JournalApi::get(Call& call) {
  auto since = count_param(call, "since", 0, INT64_MAX);
  auto limit = count_param(call, "limit", 1000, kMaxLimit);
  if (!since || !limit || *limit == 0)
    co_return reply(http::error_response(call.req, Errc::kBadRequest,
                                         "since and limit must be whole numbers (limit 1 to " +
                                             std::to_string(kMaxLimit) + ")"));
  const state::JournalRow& row = *call.journal;
  auto entries = read_entries(db_, row.kernel_id, *since, *limit, kJsonBudget);
  if (!entries) co_return reply(http::error_response(call.req, entries.error()));
  auto& store = workspaces_.store();
  // Outputs kept in the store are read (files) and the JSON rendered off the io thread.
  auto body = co_await offload_.run([&] {
    auto read = store_reader(store);
    return journal::journal_json(row, entries.value(), read, kJsonBudget).dump(-1, ' ', false,
                                                                                json::error_handler_t::replace);
  });
  http::Response res{http::status::ok, call.req.version()};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  co_return reply(std::move(res));
}

awaitable<http::Reply> JournalApi::notebook(Call& call) {
  auto since = count_param(call, "since", 0, INT64_MAX);
  if (!since) co_return reply(http::error_response(call.req, Errc::kBadRequest, "since must be a whole number"));
  const state::JournalRow& row = *call.journal;
  auto entries = read_entries(db_, row.kernel_id, *since, INT64_MAX, kNotebookBudget);
  if (!entries) co_return reply(http::error_response(call.req, entries.error()));
  journal::NotebookKernel nk;
  auto specs = kernels_.kernelspecs();
  if (auto it = specs.find(row.kernelspec); it != specs.end()) nk = {it->second.display_name, it->second.language};
  auto& store = workspaces_.store();
  auto body = co_await offload_.run([&] {
    auto read = store_reader(store);
    return journal::journal_notebook(row, nk, entries.value(), read, kNotebookBudget)
        .dump(1, ' ', false, json::error_handler_t::replace);
  });
  http::Response res{http::status::ok, call.req.version()};
  res.set(http::field::content_type, "application/x-ipynb+json");
  res.set(http::field::content_disposition, "attachment; filename=\"journal-" + row.kernel_id + ".ipynb\"");
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  co_return reply(std::move(res));
}

awaitable<http::Reply> JournalApi::remove(Call& call) {
  const state::JournalRow row = *call.journal;
  // Named, not a temporary in the co_await operand: GCC 12 may destroy such a temporary twice.
  std::shared_ptr<journal::KernelJournal> recorder;
  if (auto live = kernels_.find(row.kernel_id, call.caller.user)) recorder = live->journal();
  auto st = co_await journal_.drop(row, recorder);
  if (!st) co_return reply(http::error_response(call.req, st.error()));
  co_return reply(http::empty_response(call.req));
}

awaitable<http::Reply> JournalApi::reproduce(Call& call) {
  auto request = gateway::parse_reproduce_request(call.req.body());
  if (!request) co_return reply(http::error_response(call.req, request.error()));
  const std::string who = call.caller.user.name;
  if (!reproducing_.insert(who).second)
    co_return reply(http::error_response(call.req, Errc::kConflict, "a reproduction of yours is running; one at a time"));
  struct Done {
    std::set<std::string>& set;
    std::string who;
    ~Done() { set.erase(who); }
  } done{reproducing_, who};
  // Named arguments, not temporaries in the co_await operand (GCC 12 may destroy those twice).
  gateway::ReproduceServices services{kernels_, workspaces_, offload_, db_, store_reader(workspaces_.store())};
  state::User caller = call.caller.user;
  state::JournalRow journal = *call.journal;
  auto result = co_await gateway::reproduce(services, caller, journal, request.value());
  if (!result) co_return reply(http::error_response(call.req, result.error()));
  co_return reply(http::json_response(call.req, http::status::ok, result.value()));
}

}  // namespace cellgate::api
