// SPDX-License-Identifier: BSD-3-Clause
// journal_api: a kernel's execution journal (live or gone, within retention): its entries as JSON,
// the journal as an nbformat 4 notebook, the owner's list of journals, and deleting one.
#pragma once

#include <set>
#include <string>

#include "gateway/api/route.h"

namespace cellgate::gateway {
class KernelManager;
class Offload;
}  // namespace cellgate::gateway
namespace cellgate::journal {
class Journal;
}
namespace cellgate::state {
class Database;
}

namespace cellgate::api {

class JournalApi {
 public:
  JournalApi(journal::Journal& journal, state::Database& db, gateway::KernelManager& kernels,
             workspace::WorkspaceManager& workspaces, gateway::Offload& offload)
      : journal_(journal), db_(db), kernels_(kernels), workspaces_(workspaces), offload_(offload) {}
  // GET /api/journals[?owner=]: the caller's journals (an admin's: anyone's, or one owner's).
  boost::asio::awaitable<http::Reply> list(Call& call);
  // GET /api/kernels/{journal}/journal[?since=N&limit=M]
  boost::asio::awaitable<http::Reply> get(Call& call);
  // GET /api/kernels/{journal}/journal.ipynb[?since=N]
  boost::asio::awaitable<http::Reply> notebook(Call& call);
  // DELETE /api/kernels/{journal}/journal: a live kernel's journal is emptied, a gone one's removed.
  boost::asio::awaitable<http::Reply> remove(Call& call);
  // POST /api/kernels/{journal}/journal/reproduce {"upto"?, "keep"?}: re-runs it on a new kernel (the
  // caller's) and compares the outputs cell by cell. One at a time per user (409 while one runs).
  boost::asio::awaitable<http::Reply> reproduce(Call& call);

  // What one answer holds at most (rendered JSON), and entries per answer.
  static constexpr size_t kJsonBudget = size_t{16} << 20;
  static constexpr size_t kNotebookBudget = size_t{64} << 20;
  static constexpr int64_t kMaxLimit = 10000;

 private:
  journal::Journal& journal_;
  state::Database& db_;
  gateway::KernelManager& kernels_;
  workspace::WorkspaceManager& workspaces_;
  gateway::Offload& offload_;
  std::set<std::string> reproducing_;  // users with a reproduction running
};

}  // namespace cellgate::api
