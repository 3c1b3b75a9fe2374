// SPDX-License-Identifier: BSD-3-Clause
// usr_etc_links: the scan of a described /usr tree, and which /etc entries it turns into binds.
#include "isolation/usr_etc_links.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

using namespace cellgate::isolation;
namespace fs = std::filesystem;

namespace {

struct Tree {
  std::string root;
  Tree() {
    char tmpl[] = "/tmp/usr-links-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    root = tmpl;
    ::chmod(root.c_str(), 0755);
  }
  ~Tree() { fs::remove_all(root); }
  void dir(const std::string& rel, mode_t mode = 0755) {
    fs::create_directories(root + "/" + rel);
    ::chmod((root + "/" + rel).c_str(), mode);
  }
  void link(const std::string& rel, const std::string& to) { fs::create_symlink(to, root + "/" + rel); }
};

}  // namespace

TEST_CASE("scan: absolute and relative links into /etc, nothing else", "[isolation]") {
  if (::geteuid() != 0) {
    WARN("not root: the walk trusts root-owned dirs only; case not exercised");
    return;
  }
  Tree t;
  t.dir("lib/R/etc");
  t.link("lib/R/etc/Renviron", "/etc/R/Renviron");
  t.link("lib/R/etc/ldpaths", "/etc/R/ldpaths");
  t.dir("share/octave/site/m/startup");
  t.link("share/octave/site/m/startup/octaverc", "/etc/octaverc");
  t.link("share/rel", "../../../../../../../../../../etc/groff");  // relative: resolved against its dir, .. stops at /
  t.link("share/inside", "../lib/R");
  t.link("share/dotdot", "/etc/../usr/share/zoneinfo");  // leaves /etc lexically: not a target
  t.link("share/other", "/usr/share/doc");
  t.link("share/etc-itself", "/etc");
  auto scan = scan_usr_links(t.root, 1000);
  CHECK_FALSE(scan.truncated);
  std::vector<std::string> want = {"/etc/R/Renviron", "/etc/R/ldpaths", "/etc/groff", "/etc/octaverc"};
  CHECK(scan.targets == want);
}

TEST_CASE("scan: dirs others may write are not entered, and the walk is bounded", "[isolation]") {
  if (::geteuid() != 0) {
    WARN("not root: case not exercised");
    return;
  }
  Tree t;
  t.dir("local/share", 0775);  // group-writable (a staff dir): its links are nobody's promise
  t.link("local/share/planted", "/etc/cellgate-token");
  t.dir("lib/x");
  t.link("lib/x/ok", "/etc/x");
  CHECK(scan_usr_links(t.root, 1000).targets == std::vector<std::string>{"/etc/x"});
  ::chown((t.root + "/lib/x").c_str(), 1000, 1000);  // not root's
  CHECK(scan_usr_links(t.root, 1000).targets.empty());
  for (int i = 0; i < 20; ++i) t.link("lib/l" + std::to_string(i), "/etc/l" + std::to_string(i));
  auto bounded = scan_usr_links(t.root, 5);
  CHECK(bounded.truncated);
  CHECK(bounded.targets.size() <= 5);
}

TEST_CASE("binds: the top-level /etc entry, narrowed around secrets, minus what is explicit", "[isolation]") {
  std::vector<std::string> targets = {
      "/etc/R/Renviron", "/etc/R/ldpaths", "/etc/octaverc", "/etc/alternatives/java", "/etc/ssl/certs",
      "/etc/ssl/openssl.cnf", "/etc/ssl/private", "/etc/environment", "/etc/ssh/ssh_config", "/etc/hosts",
      "/etc/java-17-openjdk/security/java.security"};
  auto binds = etc_binds_for_links(targets, {"/etc/alternatives", "/etc/ssl/certs"});
  CHECK(binds == std::vector<std::string>{"/etc/R", "/etc/java-17-openjdk", "/etc/octaverc", "/etc/ssl/openssl.cnf"});
}
