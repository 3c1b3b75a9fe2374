// SPDX-License-Identifier: BSD-3-Clause
// users_test: user CRUD, token hashing and storage, authentication, limits and single-token mode.
#include "state/users.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "state/database.h"
#include "state_test_util.h"
#include "test_database.h"

using namespace cellgate::state;
using cellgate::common::Errc;
using cellgate::state::test::read_all_files;
using cellgate::state::test::TempDir;
using cellgate::state::test::TestDatabase;

namespace {

// authenticate() where the database must answer: the user, or nullopt.
std::optional<User> auth(UserStore& users, std::string_view token) {
  auto r = users.authenticate(token);
  REQUIRE(r);
  return r.value();
}

}  // namespace

TEST_CASE("user names are path-safe", "[state]") {
  for (std::string good : {std::string("alice"), std::string("A.b_c-9"), std::string("x"), std::string("..a"),
                           std::string(64, 'n')})
    CHECK(valid_user_name(good));
  for (std::string bad : {std::string(), std::string("."), std::string(".."), std::string(65, 'n'), std::string("a/b"),
                          std::string("a b"), std::string("ä"), std::string("a\nb"), std::string("a\0b", 3)})
    CHECK_FALSE(valid_user_name(bad));
}

TEST_CASE("token hashes are SHA-256 hex", "[state]") {
  // FIPS 180-2 test vector.
  CHECK(hash_token("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hash_token("").size() == 64);
}

TEST_CASE("add, get, list and remove users", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  UserStore users(*db);
  auto t_alice = users.add_user("alice", false, {});
  auto t_bob = users.add_user("bob", true, {});
  REQUIRE(t_alice);
  REQUIRE(t_bob);
  CHECK(t_alice->size() == 64);
  CHECK(t_alice.value() != t_bob.value());

  auto dup = users.add_user("alice", true, {});
  REQUIRE_FALSE(dup);
  CHECK(dup.error().code == Errc::kConflict);
  CHECK_THAT(dup.error().message, Catch::Contains("already exists"));
  CHECK(users.add_user("no/slash", false, {}).error().code == Errc::kBadRequest);

  auto list = users.list_users();
  REQUIRE(list);
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].name == "alice");
  CHECK_FALSE((*list)[0].admin);
  CHECK((*list)[1].admin);
  CHECK_FALSE((*list)[0].created.empty());
  CHECK(users.count_users().value() == 2);

  REQUIRE(users.remove_user("alice"));
  CHECK(users.get_user("alice").error().code == Errc::kNotFound);
  CHECK(users.remove_user("alice").error().code == Errc::kNotFound);
  CHECK_FALSE(auth(users, t_alice.value()));
  CHECK(auth(users, t_bob.value()));
}

TEST_CASE("authenticate with the right, a wrong and an empty token", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  UserStore users(*db);
  auto token = users.add_user("alice", true, {});
  REQUIRE(token);
  auto u = auth(users, token.value());
  REQUIRE(u);
  CHECK(u->name == "alice");
  CHECK(u->admin);
  CHECK_FALSE(u->implicit);

  std::string wrong = token.value();
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  CHECK_FALSE(auth(users, wrong));
  CHECK_FALSE(auth(users, ""));
  CHECK_FALSE(auth(users, token.value() + " "));
  CHECK_FALSE(auth(users, hash_token(token.value())));  // the stored hash is not a credential
  CHECK_FALSE(auth(users, std::string(1 << 20, 'a')));
}

TEST_CASE("reset_token replaces the token", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  UserStore users(*db);
  auto old_token = users.add_user("alice", false, {});
  REQUIRE(old_token);
  auto new_token = users.reset_token("alice");
  REQUIRE(new_token);
  CHECK(new_token.value() != old_token.value());
  CHECK_FALSE(auth(users, old_token.value()));
  REQUIRE(auth(users, new_token.value()));
  CHECK(auth(users, new_token.value())->name == "alice");
  CHECK(users.reset_token("nobody").error().code == Errc::kNotFound);
}

TEST_CASE("no file in the data dir ever contains a token, only its hash", "[state]") {
  TempDir tmp;
  std::vector<std::string> tokens;
  {
    auto db = Database::open(tmp.path());
    REQUIRE(db);
    UserStore users(*db);
    for (const char* name : {"alice", "bob", "carol"}) tokens.push_back(users.add_user(name, false, {}).value());
    tokens.push_back(users.reset_token("bob").value());
    users.set_single_token("single-token-mode-secret");
    std::string all = read_all_files(tmp.path());  // includes the -wal file while it is open
    REQUIRE_FALSE(all.empty());
    for (const auto& t : tokens) {
      CHECK(all.find(t) == std::string::npos);
      CHECK(all.find(t.substr(0, 16)) == std::string::npos);
    }
    CHECK(all.find("single-token-mode-secret") == std::string::npos);
    CHECK(all.find(hash_token(tokens[0])) != std::string::npos);  // the check above can find text
  }
  std::string all = read_all_files(tmp.path());  // after the checkpoint on close
  for (const auto& t : tokens) CHECK(all.find(t) == std::string::npos);
  CHECK(all.find(hash_token(tokens[0])) != std::string::npos);
}

TEST_CASE("limits round-trip, with unset meaning the config default", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  UserStore users(*db);
  UserLimits limits;
  limits.max_kernels = 3;
  limits.memory_bytes = int64_t{2} << 30;
  limits.cpus = 0.5;
  limits.pids = 256;
  limits.workspace_bytes = int64_t{10} << 30;
  limits.workspace_files = 100000;
  limits.exec_timeout_s = 600;
  limits.network = R"({"mode":"allowlist","allow":[{"host":"pypi.org","ports":[443]}]})";
  REQUIRE(users.add_user("alice", false, limits));
  REQUIRE(users.add_user("bob", false, {}));
  CHECK(users.get_user("alice")->limits == limits);
  CHECK(users.get_user("bob")->limits == UserLimits{});

  UserLimits fewer;
  fewer.cpus = 2.0;
  fewer.network = R"({"mode":"none"})";
  REQUIRE(users.set_limits("alice", fewer));
  auto alice = users.get_user("alice");
  CHECK(alice->limits == fewer);
  CHECK_FALSE(alice->limits.memory_bytes.has_value());
  CHECK(auth(users, users.reset_token("alice").value())->limits == fewer);

  UserLimits bad;
  bad.memory_bytes = -1;
  CHECK(users.set_limits("alice", bad).error().code == Errc::kBadRequest);
  UserLimits zero_memory;
  zero_memory.memory_bytes = 0;
  CHECK(users.set_limits("alice", zero_memory).error().code == Errc::kBadRequest);
  UserLimits bad_cpus;
  bad_cpus.cpus = 0.0;
  CHECK(users.add_user("carol", false, bad_cpus).error().code == Errc::kBadRequest);
  CHECK(users.set_limits("nobody", fewer).error().code == Errc::kNotFound);
}

TEST_CASE("single-token mode: the token is an implicit admin only while there are no users", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  UserStore users(*db);
  CHECK_FALSE(auth(users, "T0ken"));  // mode off until set
  users.set_single_token("T0ken");
  auto u = auth(users, "T0ken");
  REQUIRE(u);
  CHECK(u->name == kDefaultUserName);
  CHECK(u->admin);
  CHECK(u->implicit);
  CHECK_FALSE(auth(users, "T0ke"));
  CHECK_FALSE(auth(users, ""));
  CHECK(users.list_users()->empty());  // never listed, never stored

  auto alice = users.add_user("alice", false, {});
  REQUIRE(alice);
  CHECK_FALSE(auth(users, "T0ken"));
  CHECK(auth(users, alice.value()));
  REQUIRE(users.remove_user("alice"));
  CHECK(auth(users, "T0ken"));
  users.set_single_token("");
  CHECK_FALSE(auth(users, "T0ken"));
}

TEST_CASE("a user added by another process authenticates on an already open connection", "[state][backends]") {
  // The deployment case: the gateway keeps its Database open while an admin runs `cellgate user add`.
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  UserStore users(*db);
  users.set_single_token("boot");
  REQUIRE(auth(users, "boot"));

  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    auto child_db = tdb.open();
    if (!child_db) ::_exit(1);
    auto token = UserStore(*child_db).add_user("carol", false, {});
    if (!token) ::_exit(2);
    ssize_t n = ::write(fds[1], token->data(), token->size());
    ::_exit(n == static_cast<ssize_t>(token->size()) ? 0 : 3);
  }
  ::close(fds[1]);
  char buf[128];
  ssize_t n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(n == 64);
  auto u = auth(users, std::string(buf, static_cast<size_t>(n)));
  REQUIRE(u);
  CHECK(u->name == "carol");
  CHECK_FALSE(auth(users, "boot"));  // the database has a user now: single-token mode ends
}
