// SPDX-License-Identifier: BSD-3-Clause
// The route table, walked: every route refuses a request without a token, and every route that names
// a user's kernel, session or workspace answers another user 404, exactly as for an id that never
// existed (ids are no oracle), while the owner gets through. The README's route tables list the
// table's routes, no more and no fewer.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gateway/api/router.h"
#include "gateway/kernel_manager.h"
#include "state/artifact_records.h"
#include "state/kernel_records.h"
#include "state/users.h"
#include "tests/unit/gateway/test_gateway.h"
#include "workspace/workspace_manager.h"

using namespace cellgate;
using namespace cellgate::testing;
using api::Role;
using nlohmann::json;

namespace {

// The pattern with each {param} replaced by the value ids gives it ("x" when none).
std::string fill(const std::string& pattern, const std::map<std::string, std::string>& ids) {
  static const std::regex kParam(R"(\{([a-z_]+)\*?\})");
  std::string out;
  auto begin = std::sregex_iterator(pattern.begin(), pattern.end(), kParam);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += pattern.substr(last, static_cast<size_t>(it->position()) - last);
    auto found = ids.find((*it)[1]);
    out += found == ids.end() ? "x" : found->second;
    last = static_cast<size_t>(it->position() + it->length());
  }
  return out + pattern.substr(last);
}

bool names_owned(const std::string& pattern) {
  for (auto p : api::kOwnedParams)
    if (pattern.find("{" + std::string(p) + "}") != std::string::npos) return true;
  return false;
}

struct Answer {
  int status = 0;
  json body;
  bool accepted = false;  // an upgrade accepted (WsAccept)
};

class Walk {
 public:
  Walk() : t_(dir_, fake_) {
    auto& users = t_.gw->users();
    alice_token_ = users.add_user("alice", false, {}).value();
    bob_token_ = users.add_user("bob", false, {}).value();
    alice_ = users.get_user("alice").value();
    router_ = std::make_unique<api::Router>(*t_.gw);
    // Alice's kernel, session, workspace (with a file and a snapshot).
    auto hub = run(t_.io, t_.gw->kernels().start(alice_, {}));
    REQUIRE(hub.has_value());
    mine_["kernel"] = hub.value()->kernel().id();
    mine_["journal"] = mine_["kernel"];  // a kernel's journal is named by the kernel's id
    mine_["session"] = "5e551011-0000-4000-8000-000000000001";
    REQUIRE(state::insert_session(t_.gw->db(), {mine_["session"], "alice", "a.ipynb", "a", "notebook", mine_["kernel"]}));
    auto ws = t_.gw->workspaces().create({"alice", "alice-ws"});
    REQUIRE(ws.has_value());
    std::ofstream(ws->tree_path() + "/secret.txt") << "alice's";
    workspace::SnapshotOptions opts;
    opts.automatic = false;
    opts.label = "walk";
    auto snap = ws->snapshot(opts);
    REQUIRE(snap.has_value());
    mine_["workspace"] = "alice-ws";
    mine_["snapshot"] = snap->id;
    mine_["path"] = "secret.txt";
    // Alice's artifact: the snapshot's object for secret.txt, so that her download is a real one.
    auto manifest = ws->load_snapshot(snap->id);
    REQUIRE(manifest.has_value());
    REQUIRE(manifest->entries.size() == 1);
    mine_["artifact"] = "a4710e00000000000000000000000001";
    REQUIRE(state::insert_artifact(t_.gw->db(), {mine_["artifact"], "alice", "secret.txt", "alice-ws", "secret.txt",
                                                 manifest->entries[0].hash, 7, "text/plain", "alice",
                                                 "2026-12-04T00:00:00Z"}));
    never_ = mine_;
    never_["kernel"] = "00000000-0000-4000-8000-00000000dead";
    never_["session"] = "00000000-0000-4000-8000-00000000beef";
    never_["workspace"] = "never-existed";
    never_["journal"] = never_["kernel"];
    never_["artifact"] = "00000000000000000000000000000000";
  }

  const std::vector<api::Route>& routes() const { return router_->routes(); }
  const std::map<std::string, std::string>& mine() const { return mine_; }
  const std::map<std::string, std::string>& never() const { return never_; }

  // token "" = none. Each request comes from its own address, so that refused ones do not trip the
  // per-address block of failed authentications.
  Answer call(const api::Route& r, const std::map<std::string, std::string>& ids, const std::string& token) {
    http::Request req{r.method, fill(r.pattern, ids), 11};
    req.set(http::field::host, "localhost");
    if (!token.empty()) req.set(http::field::authorization, "token " + token);
    http::Peer peer{"127.0." + std::to_string(++calls_ / 250) + "." + std::to_string(calls_ % 250 + 1), -1};
    Answer a;
    if (std::holds_alternative<api::WsHandler>(r.handler)) {
      auto up = run(t_.io, router_->upgrade(req, peer));
      if (auto* res = std::get_if<http::Response>(&up)) {
        a.status = static_cast<int>(res->result_int());
        a.body = json::parse(res->body(), nullptr, false);
      } else {
        a.accepted = true;
        a.status = 101;
      }
      return a;
    }
    if (r.method == http::verb::post || r.method == http::verb::patch) req.body() = "{}";
    req.prepare_payload();
    auto reply = run(t_.io, router_->handle(std::move(req), peer));
    a.status = static_cast<int>(reply.res.result_int());
    a.body = json::parse(reply.res.body(), nullptr, false);
    return a;
  }

  const std::string& alice_token() const { return alice_token_; }
  const std::string& bob_token() const { return bob_token_; }

 private:
  ScratchDir dir_;
  FakeSpawner fake_;
  TestGateway t_;
  std::unique_ptr<api::Router> router_;
  std::string alice_token_, bob_token_;
  state::User alice_;
  std::map<std::string, std::string> mine_, never_;
  int calls_ = 0;
};

std::string route_name(const api::Route& r) { return std::string(http::to_string(r.method)) + " " + r.pattern; }

// "GET /api/kernels/{kernel}" → "GET /api/kernels/{}": parameter names differ between the README and the table.
std::string normal(const std::string& method, std::string path) {
  path = std::regex_replace(path, std::regex(R"(\{[^}]*\})"), "{}");
  return method + " " + path;
}

// The routes the README's route tables list: `GET/POST /path/{id}` in a table row's first column.
std::set<std::string> readme_routes(const std::string& readme) {
  std::set<std::string> out;
  std::istringstream in(readme);
  std::string line;
  static const std::regex kRoute(R"(`([A-Z]+(?:/[A-Z]+)*) (/[^`?\s]*)[^`]*`)");
  while (std::getline(in, line)) {
    if (!line.starts_with("| `")) continue;
    std::string first = line.substr(2, line.find(" |", 2) - 2);
    for (auto it = std::sregex_iterator(first.begin(), first.end(), kRoute); it != std::sregex_iterator(); ++it) {
      std::string methods = (*it)[1], path = (*it)[2];
      std::vector<std::string> paths{path};
      // `GET /api/kernelspecs[/{name}]`: with and without the optional part.
      if (auto open = path.find('['); open != std::string::npos) {
        std::string inner = path.substr(open + 1, path.find(']') - open - 1);
        paths = {path.substr(0, open), path.substr(0, open) + inner};
      }
      std::stringstream ms(methods);
      std::string m;
      while (std::getline(ms, m, '/'))
        for (const auto& p : paths) out.insert(normal(m, p));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every route names the role it needs; ids a user owns only under kOwner", "[api]") {
  Walk walk;
  for (const auto& r : walk.routes()) {
    INFO(route_name(r));
    if (names_owned(r.pattern)) CHECK((r.role == Role::kOwner || r.role == Role::kAdmin));
    if (r.role == Role::kOwner) CHECK(names_owned(r.pattern));
  }
}

TEST_CASE("every route refuses a request without a token", "[api]") {
  Walk walk;
  for (const auto& r : walk.routes()) {
    if (r.role == Role::kPublic) continue;
    INFO(route_name(r));
    auto a = walk.call(r, walk.mine(), "");
    CHECK(a.status == 401);
    CHECK(!a.accepted);
  }
}

TEST_CASE("another user's ids are 404, as ids that never existed; the owner gets through", "[api]") {
  Walk walk;
  for (const auto& r : walk.routes()) {
    if (r.role != Role::kOwner && r.role != Role::kAdmin) continue;
    INFO(route_name(r));
    auto other = walk.call(r, walk.mine(), walk.bob_token());
    CHECK(!other.accepted);
    if (r.role == Role::kAdmin) {
      CHECK(other.status == 403);
      continue;
    }
    CHECK(other.status == 404);
    auto missing = walk.call(r, walk.never(), walk.bob_token());
    CHECK(missing.status == 404);
    REQUIRE(other.body.is_object());
    REQUIRE(missing.body.is_object());
    CHECK(other.body["reason"] == missing.body["reason"]);
    std::string said = other.body.value("message", ""), never = missing.body.value("message", "");
    for (const auto& [name, id] : walk.mine()) {
      if (id != walk.never().at(name)) {
        for (size_t at; (at = said.find(id)) != std::string::npos;) said.replace(at, id.size(), "ID");
        const std::string& n = walk.never().at(name);
        for (size_t at; (at = never.find(n)) != std::string::npos;) never.replace(at, n.size(), "ID");
      }
    }
    CHECK(said == never);
    // The owner's own ids resolve: whatever the handler then says, it is not the router's 404. Only
    // routes that change nothing are called (the others are the integration tests' business).
    if (r.method == http::verb::get) {
      auto own = walk.call(r, walk.mine(), walk.alice_token());
      CHECK(own.status != 401);
      CHECK(own.status != 404);
    }
  }
}

TEST_CASE("the README's route tables list exactly the route table's routes", "[api]") {
  Walk walk;
  std::ifstream in(CELLGATE_SOURCE_DIR "/README.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const auto documented = readme_routes(text.str());
  std::set<std::string> served;
  for (const auto& r : walk.routes()) {
    served.insert(normal(std::string(http::to_string(r.method)), r.pattern));
  }
  for (const auto& s : served) {
    INFO("served, not in the README: " << s);
    CHECK(documented.count(s) == 1);
  }
  for (const auto& d : documented) {
    INFO("in the README, not served: " << d);
    CHECK(served.count(d) == 1);
  }
}

TEST_CASE("a public route needs no token; an admin route refuses any other user with 403", "[api]") {
  ScratchDir dir;
  FakeSpawner fake;
  TestGateway t(dir, fake);
  auto& users = t.gw->users();
  const std::string bob = users.add_user("bob", false, {}).value();
  const std::string root = users.add_user("root", true, {}).value();
  auto ok = [](api::Call& call) -> boost::asio::awaitable<http::Reply> {
    co_return api::reply(http::json_response(call.req, http::status::ok, {{"user", call.caller.user.name}}));
  };
  api::Router router(*t.gw, {{http::verb::get, "/healthz", Role::kPublic, ok},
                             {http::verb::get, "/admin/thing", Role::kAdmin, ok}});
  auto get = [&](const std::string& path, const std::string& token) {
    http::Request req{http::verb::get, path, 11};
    req.set(http::field::host, "localhost");
    if (!token.empty()) req.set(http::field::authorization, "token " + token);
    auto reply = run(t.io, router.handle(std::move(req), http::Peer{"127.0.0.1", -1}));
    return static_cast<int>(reply.res.result_int());
  };
  CHECK(get("/healthz", "") == 200);
  CHECK(get("/admin/thing", "") == 401);
  CHECK(get("/admin/thing", bob) == 403);
  CHECK(get("/admin/thing", root) == 200);
  CHECK(get("/api/kernels", "") == 401);  // the table's own routes are unchanged
}
