// SPDX-License-Identifier: BSD-3-Clause
// mount_plan: the ordered ops for a Debian merged-/usr host, with a described host.
#include "isolation/mount_plan.h"

#include <catch2/catch.hpp>

#include <map>

using namespace cellgate::isolation;
using cellgate::isolation::child::MountOp;
using cellgate::isolation::child::MountOpType;

namespace {

// A described host: paths not listed are missing.
HostProbe host(std::map<std::string, HostEntry> entries) {
  return [entries](const std::string& path) {
    auto it = entries.find(path);
    return it == entries.end() ? HostEntry{} : it->second;
  };
}

const HostEntry kDir{HostEntry::Kind::kDir, "", false, ""};
const HostEntry kFile{HostEntry::Kind::kFile, "", false, ""};
HostEntry link(const std::string& target, bool dir = true) { return HostEntry{HostEntry::Kind::kSymlink, target, dir, ""}; }

MountInputs inputs() {
  MountInputs in;
  in.new_root = "/R";
  in.hostname = "sandbox";
  in.tmp_size = 1 << 20;
  in.etc_binds = {"/etc/ssl/certs", "/etc/localtime", "/etc/missing"};
  return in;
}

const MountOp* find(const MountPlan& p, MountOpType type, const std::string& target, size_t* index = nullptr) {
  for (size_t i = 0; i < p.ops().size(); ++i) {
    const MountOp& op = p.ops()[i];
    if (op.type == type && target == op.target) {
      if (index) *index = i;
      return &op;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("merged /usr: /bin and /lib become symlinks, /usr a read-only bind", "[isolation]") {
  auto probe = host({{"/usr", kDir}, {"/bin", link("usr/bin")}, {"/lib64", link("usr/lib64")}, {"/sbin", kDir},
                     {"/etc/ssl/certs", kDir}, {"/etc/localtime", link("/usr/share/zoneinfo/Etc/UTC", false)}});
  auto p = MountPlan::build(inputs(), probe);
  REQUIRE(p);
  const MountOp* usr = find(*p, MountOpType::kBind, "/R/usr");
  REQUIRE(usr);
  CHECK(usr->attr_set != 0);
  const MountOp* bin = find(*p, MountOpType::kSymlink, "/R/bin");
  REQUIRE(bin);
  CHECK(std::string(bin->source) == "usr/bin");
  CHECK(find(*p, MountOpType::kBind, "/R/sbin"));  // a real dir is bound, not linked
  CHECK_FALSE(find(*p, MountOpType::kBind, "/R/lib"));  // missing on this host
  CHECK(find(*p, MountOpType::kBind, "/R/etc/ssl/certs"));
  CHECK(find(*p, MountOpType::kSymlink, "/R/etc/localtime"));
  CHECK_FALSE(find(*p, MountOpType::kBind, "/R/etc/missing"));
  const MountOp* passwd = find(*p, MountOpType::kWriteFile, "/R/etc/passwd");
  REQUIRE(passwd);
  CHECK(std::string(passwd->data, passwd->data_len).find("sandbox:x:1000:1000:sandbox:/workspace:") != std::string::npos);
}

TEST_CASE("proc: user namespaces are switched off before /proc/sys turns read-only", "[isolation]") {
  auto p = MountPlan::build(inputs(), host({{"/usr", kDir}}));
  REQUIRE(p);
  size_t proc = 0, maxns = 0, sys_ro = 0, mask = 0;
  REQUIRE(find(*p, MountOpType::kProc, "/R/proc", &proc));
  REQUIRE(find(*p, MountOpType::kWriteExisting, "/R/proc/sys/user/max_user_namespaces", &maxns));
  REQUIRE(find(*p, MountOpType::kBind, "/R/proc/sys", &sys_ro));
  REQUIRE(find(*p, MountOpType::kBind, "/R/proc/kcore", &mask));
  CHECK(proc < maxns);
  CHECK(maxns < sys_ro);
  CHECK(std::string(p->ops()[mask].source) == "/dev/null");
  CHECK(p->ops()[mask].optional);
}

TEST_CASE("dev, tmp and a tmpfs workspace", "[isolation]") {
  auto p = MountPlan::build(inputs(), host({{"/usr", kDir}}));
  REQUIRE(p);
  for (const char* node : {"/R/dev/null", "/R/dev/zero", "/R/dev/full", "/R/dev/random", "/R/dev/urandom", "/R/dev/tty"})
    CHECK(find(*p, MountOpType::kBind, node));
  const MountOp* pts = find(*p, MountOpType::kDevpts, "/R/dev/pts");
  REQUIRE(pts);
  CHECK(std::string(pts->data).find("newinstance") != std::string::npos);
  CHECK(std::string(pts->data).find("ptmxmode=0666") != std::string::npos);
  CHECK(find(*p, MountOpType::kSymlink, "/R/dev/ptmx"));
  const MountOp* shm = find(*p, MountOpType::kTmpfs, "/R/dev/shm");
  REQUIRE(shm);
  CHECK(std::string(shm->data).find("size=1048576") != std::string::npos);
  CHECK(find(*p, MountOpType::kTmpfs, "/R/tmp"));
  const MountOp* ws = find(*p, MountOpType::kTmpfs, "/R/workspace");
  REQUIRE(ws);
  CHECK(std::string(ws->data).find("uid=1000") != std::string::npos);
}

TEST_CASE("rw binds: idmapped trees are moved, others bound; ro-binds need a source", "[isolation]") {
  MountInputs in = inputs();
  in.workspace = RwBind{"/srv/ws", 7};
  in.bind_same = {RwBind{"/run/cellgate/k/abc", -1}};
  in.ro_binds = {BindSpec{"/data", "/mnt/data"}};
  in.mpl_files = {{"fontlist-v330.json", "{}"}};
  auto p = MountPlan::build(in, host({{"/usr", kDir}, {"/data", kDir}}));
  REQUIRE(p);
  const MountOp* ws = find(*p, MountOpType::kMoveTree, "/R/workspace");
  REQUIRE(ws);
  CHECK(ws->fd == 7);
  size_t mk = 0, bind = 0;
  REQUIRE(find(*p, MountOpType::kMkdir, "/R/run/cellgate/k", &mk));
  REQUIRE(find(*p, MountOpType::kBind, "/R/run/cellgate/k/abc", &bind));
  CHECK(mk < bind);
  CHECK(find(*p, MountOpType::kBind, "/R/mnt/data"));
  const MountOp* seed = find(*p, MountOpType::kWriteFile, "/R/tmp/.config/matplotlib/fontlist-v330.json");
  REQUIRE(seed);
  CHECK(seed->owner == kSandboxId);

  in.ro_binds = {BindSpec{"/nope", "/mnt/nope"}};
  auto missing = MountPlan::build(in, host({{"/usr", kDir}}));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("/nope") != std::string::npos);
  for (const char* bad : {"/mnt/../etc", "/usr/lib/x", "/proc/x", "/dev/x", "/workspace/data", "/", "/etc", "/tmp"}) {
    INFO(bad);
    in.ro_binds = {BindSpec{"/data", bad}};
    CHECK_FALSE(MountPlan::build(in, host({{"/usr", kDir}, {"/data", kDir}})));
  }
  in.ro_binds = {BindSpec{"/data", "/tmp/data"}};  // below /tmp is fine
  CHECK(MountPlan::build(in, host({{"/usr", kDir}, {"/data", kDir}})));
  in.ro_binds.clear();
  in.bind_same = {RwBind{"/proc/self", -1}};
  CHECK_FALSE(MountPlan::build(in, host({{"/usr", kDir}})));
}

TEST_CASE("host secrets are refused as any bind source, as written or as resolved", "[isolation]") {
  auto probe = host({{"/usr", kDir}, {"/etc/ssh", kDir}, {"/etc", kDir}, {"/etc/ssl", kDir}, {"/", kDir},
                     {"/srv/keys", HostEntry{HostEntry::Kind::kDir, "", false, "/etc/ssl/private"}},
                     {"/etc/passwd", kFile}});
  for (const char* path : {"/etc/ssh", "/etc/shadow", "/etc/ssl", "/etc/ssh/sshd_config", "/srv/keys"}) {
    INFO(path);
    MountInputs in = inputs();
    in.etc_binds.push_back(path);
    auto p = MountPlan::build(in, probe);
    REQUIRE_FALSE(p);
    CHECK(p.error().message.find("host secrets are never bound") != std::string::npos);
    in = inputs();
    in.ro_binds = {BindSpec{path, "/mnt/x"}};
    CHECK_FALSE(MountPlan::build(in, probe));
  }
  for (const char* source : {"/", "/etc"}) {
    INFO(source);
    MountInputs in = inputs();
    in.ro_binds = {BindSpec{source, "/mnt/host"}};
    CHECK_FALSE(MountPlan::build(in, probe));
  }
  MountInputs in = inputs();
  in.bind_same = {RwBind{"/etc/ssh", -1}};
  CHECK_FALSE(MountPlan::build(in, probe));
  in = inputs();
  in.workspace = RwBind{"/etc/ssl/private", -1};
  CHECK_FALSE(MountPlan::build(in, probe));
  // The host's accounts never replace the generated ones.
  in = inputs();
  in.etc_binds.push_back("/etc/passwd");
  auto p = MountPlan::build(in, probe);
  REQUIRE_FALSE(p);
  CHECK(p.error().message.find("generated by the jail") != std::string::npos);
}
