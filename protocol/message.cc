// SPDX-License-Identifier: BSD-3-Clause
// message: header peeking and building for Jupyter messages.
#include "protocol/message.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "common/random.h"
#include "common/time_format.h"
#include "protocol/json_scan.h"

namespace cellgate::protocol {
namespace {

using nlohmann::json;

std::string string_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

using detail::ScanField;

std::string scanned_string(const ScanField& f) {
  return f.kind == ScanField::Kind::kString ? std::string(f.value) : std::string();
}

}  // namespace

common::Result<HeaderFields> peek_header(std::string_view header_json) {
  ScanField f[3] = {{"msg_id"}, {"msg_type"}, {"session"}};
  if (detail::scan_top_level(header_json, f)) {
    if (f[1].kind != ScanField::Kind::kString)
      return common::make_error(common::Errc::kBadRequest, "header has no string msg_type");
    return HeaderFields{scanned_string(f[0]), std::string(f[1].value), scanned_string(f[2])};
  }
  // parse() builds and destroys the tree without recursion (nlohmann 3.11), so depth is harmless here.
  json header = json::parse(header_json, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return common::make_error(common::Errc::kBadRequest, "header is not a JSON object");
  auto type = header.find("msg_type");
  if (type == header.end() || !type->is_string()) {
    return common::make_error(common::Errc::kBadRequest, "header has no string msg_type");
  }
  return HeaderFields{string_field(header, "msg_id"), type->get<std::string>(), string_field(header, "session")};
}

std::string peek_parent_msg_id(std::string_view parent_header_json) {
  return peek_string_member(parent_header_json, "msg_id");
}

std::string peek_string_member(std::string_view object_json, std::string_view key) {
  ScanField f[1] = {{key}};
  if (detail::scan_top_level(object_json, f)) return scanned_string(f[0]);
  json parsed = json::parse(object_json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return {};
  auto it = parsed.find(key);
  if (it == parsed.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

bool valid_json_object(std::string_view text) {
  if (detail::is_json_object(text)) return true;
  constexpr size_t kMaxParsed = 1u << 20;
  if (text.size() > kMaxParsed) return false;
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{' && json::accept(text);
}

bool peek_true_member(std::string_view object_json, std::string_view key) {
  ScanField f[1] = {{key}};
  if (detail::scan_top_level(object_json, f)) return f[0].kind == ScanField::Kind::kOther && f[0].value == "true";
  json parsed = json::parse(object_json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return false;
  auto it = parsed.find(key);
  return it != parsed.end() && it->is_boolean() && it->get<bool>();
}

std::string make_header(std::string_view msg_type, std::string_view session, std::string_view username,
                        std::string_view msg_id) {
  // Field order as jupyter_client's msg_header(); session and username may come from a client,
  // so invalid UTF-8 is replaced rather than allowed to throw.
  nlohmann::ordered_json header;
  header["msg_id"] = msg_id;
  header["msg_type"] = msg_type;
  header["session"] = session;
  header["username"] = username;
  header["date"] = common::iso8601_now();
  header["version"] = "5.3";
  return header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Message make_message(std::string_view msg_type, std::string_view session, std::string content_json,
                     std::string parent_header_json, std::string metadata_json) {
  Message m;
  m.header = make_header(msg_type, session, "cellgate", common::random_uuid());
  m.parent_header = std::move(parent_header_json);
  m.metadata = std::move(metadata_json);
  m.content = std::move(content_json);
  return m;
}

}  // namespace cellgate::protocol
