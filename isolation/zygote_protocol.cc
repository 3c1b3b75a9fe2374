// SPDX-License-Identifier: BSD-3-Clause
// zygote_protocol: the fork server's wire format.
#include "isolation/zygote_protocol.h"

namespace cellgate::isolation {

using common::Errc;
using common::make_error;

std::string encode_zygote_request(const std::vector<std::string>& jail_args) {
  std::string out(kZygoteMagic);
  for (const auto& a : jail_args) {
    out += a;
    out.push_back('\0');
  }
  return out;
}

common::Result<std::vector<std::string>> decode_zygote_request(std::string_view bytes) {
  if (bytes.size() > kZygoteMaxRequest) return make_error(Errc::kBadRequest, "zygote request too big");
  if (!bytes.starts_with(kZygoteMagic)) return make_error(Errc::kBadRequest, "not a zygote request");
  bytes.remove_prefix(kZygoteMagic.size());
  std::vector<std::string> args;
  while (!bytes.empty()) {
    size_t end = bytes.find('\0');
    if (end == std::string_view::npos) return make_error(Errc::kBadRequest, "zygote request: unterminated argument");
    args.emplace_back(bytes.substr(0, end));
    bytes.remove_prefix(end + 1);
  }
  if (args.empty()) return make_error(Errc::kBadRequest, "zygote request: no arguments");
  return args;
}

bool zygote_can_run(const std::vector<std::string>& command) {
  return command.size() == 5 && command[0] == "/usr/bin/python3" && command[1] == "-m" &&
         command[2] == "ipykernel_launcher" && command[3] == "-f" && command[4].starts_with('/');
}

}  // namespace cellgate::isolation
