// SPDX-License-Identifier: BSD-3-Clause
// etc_secrets: the host paths that hold secrets, which no bind may bring into a jail.
#include "isolation/etc_secrets.h"

namespace cellgate::isolation {
namespace {

// Debian's own (shadow(5), sudoers(5), sshd(8), ssl-cert, machine-id(5), apt_auth.conf(5)) and
// the usual places of keys and credentials that other packages create. Keep it sorted.
constexpr std::string_view kSecretPaths[] = {
    "/etc/NetworkManager/system-connections",  // Wi-Fi and VPN passwords
    "/etc/apt/auth.conf",                        // repository credentials
    "/etc/apt/auth.conf.d",
    "/etc/cellgate",                             // the gateway's own configuration
    "/etc/credstore",                            // systemd credentials
    "/etc/credstore.encrypted",
    "/etc/docker",                               // daemon TLS keys
    "/etc/environment",                          // login environment: proxy URLs with credentials
    "/etc/gshadow",                              // group password hashes
    "/etc/gshadow-",
    "/etc/ipsec.d/private",
    "/etc/ipsec.secrets",
    "/etc/krb5.keytab",                          // Kerberos host keys
    "/etc/ldap.secret",
    "/etc/letsencrypt",                          // certificate keys
    "/etc/libnss-ldap.secret",
    "/etc/machine-id",                           // the host's stable identity
    "/etc/mysql/debian.cnf",                     // the maintenance account's password
    "/etc/openvpn",
    "/etc/pam_ldap.secret",
    "/etc/pki",                                  // keys, on hosts laid out like Fedora
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/security/opasswd",                     // old password hashes (pam_pwhistory)
    "/etc/shadow",                               // password hashes
    "/etc/shadow-",
    "/etc/ssh",                                  // host keys
    "/etc/ssl/private",                          // TLS keys (ssl-cert)
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/wireguard",
    "/var/lib/dbus/machine-id",
};

// True when `inner` is `outer` or lies below it.
bool within(std::string_view inner, std::string_view outer) {
  if (outer == "/") return true;
  return inner.starts_with(outer) && (inner.size() == outer.size() || inner[outer.size()] == '/');
}

}  // namespace

std::span<const std::string_view> secret_paths() { return kSecretPaths; }

std::string_view overlapping_secret(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  for (std::string_view secret : kSecretPaths) {
    if (within(path, secret) || within(secret, path)) return secret;
  }
  return {};
}

}  // namespace cellgate::isolation
