// SPDX-License-Identifier: BSD-3-Clause
// etc_secrets: the pinned list of host secrets, and what counts as overlapping one.
#include "isolation/etc_secrets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "isolation/mount_plan.h"
#include "isolation/policy_file.h"

using namespace cellgate::isolation;

TEST_CASE("the secret list is pinned: shadow, sudoers, ssh, ssl/private, machine-id and friends", "[isolation]") {
  const std::vector<std::string_view> pinned = {
      "/etc/NetworkManager/system-connections", "/etc/apt/auth.conf", "/etc/apt/auth.conf.d", "/etc/cellgate",
      "/etc/credstore", "/etc/credstore.encrypted", "/etc/docker", "/etc/environment", "/etc/gshadow",
      "/etc/gshadow-", "/etc/ipsec.d/private", "/etc/ipsec.secrets", "/etc/krb5.keytab", "/etc/ldap.secret",
      "/etc/letsencrypt", "/etc/libnss-ldap.secret", "/etc/machine-id", "/etc/mysql/debian.cnf", "/etc/openvpn",
      "/etc/pam_ldap.secret", "/etc/pki", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets",
      "/etc/security/opasswd", "/etc/shadow", "/etc/shadow-", "/etc/ssh", "/etc/ssl/private", "/etc/sudoers",
      "/etc/sudoers.d", "/etc/wireguard", "/var/lib/dbus/machine-id"};
  auto list = secret_paths();
  // Removing an entry is a security decision: it must show up as a change to this test.
  CHECK(std::vector<std::string_view>(list.begin(), list.end()) == pinned);
  CHECK(std::is_sorted(list.begin(), list.end()));
  for (auto s : list) CHECK((s.starts_with("/") && !s.ends_with("/") && s.size() > 1));
}

TEST_CASE("a path overlaps a secret when it is one, lies inside one, or contains one", "[isolation]") {
  CHECK(overlapping_secret("/etc/shadow") == "/etc/shadow");
  CHECK(overlapping_secret("/etc/ssh/ssh_host_ed25519_key") == "/etc/ssh");
  CHECK(overlapping_secret("/etc/ssl") == "/etc/ssl/private");
  CHECK(overlapping_secret("/etc/ssl/") == "/etc/ssl/private");
  CHECK_FALSE(overlapping_secret("/etc").empty());
  CHECK_FALSE(overlapping_secret("/").empty());
  CHECK_FALSE(overlapping_secret("/var").empty());  // holds /var/lib/dbus/machine-id
  for (const char* fine : {"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/R", "/etc/octaverc", "/etc/shadowsocks",
                           "/etc/sshguard", "/usr", "/usr/lib/ssl/private", "/etc/alternatives", "/etc/ssl/privates"}) {
    INFO(fine);
    CHECK(overlapping_secret(fine).empty());
  }
}

TEST_CASE("the default policy binds nothing that overlaps a secret or replaces a generated file", "[isolation]") {
  auto p = default_policy();
  REQUIRE(p);
  CHECK(p->usr_etc_links);
  for (const auto& list : {p->etc_binds, p->cache_binds}) {
    for (const auto& path : list) {
      INFO(path);
      CHECK(overlapping_secret(path).empty());
      CHECK_FALSE(is_generated_etc_file(path));
    }
  }
}
