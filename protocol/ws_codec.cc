// SPDX-License-Identifier: BSD-3-Clause
// ws_codec: the kernel WebSocket framings, byte-compatible with jupyter_server's
// serialize_binary_message / serialize_msg_to_ws_v1 and their inverses (base/zmqhandlers.py).
#include "protocol/ws_codec.h"

#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/assert.h"
#include "protocol/json_text.h"
#include "protocol/v1_frame.h"

namespace cellgate::protocol {
namespace {

using nlohmann::json;

constexpr uint64_t kV1MinOffsets = 2 + kV1JsonParts;  // channel start + 4 parts + end offset

common::Error bad(std::string message) { return common::make_error(common::Errc::kBadRequest, std::move(message)); }
common::Error too_many() { return common::make_error(common::Errc::kTooLarge, "websocket message has too many parts"); }

// Browsers may only write to these; iopub is kernel→client only (jupyter_server drops the rest).
bool client_channel(std::string_view channel) {
  return channel == "shell" || channel == "control" || channel == "stdin";
}

void store_be32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

uint32_t get_be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

void put_le64(std::string& out, uint64_t v) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(v >> (8 * i));
  out.append(bytes, 8);
}

std::string_view json_or_empty_object(std::string_view part) { return part.empty() ? "{}" : part; }

// The message dict as jupyter_server's json.dumps writes it (default ", " and ": " separators,
// key order of Session.deserialize plus "channel"), built by splicing the parts' text.
// The binary layout omits "buffers", as serialize_binary_message pops it.
void append_legacy_json(std::string& out, std::string_view channel, const MessageView& m, bool buffers_key) {
  HeaderFields fields;
  if (auto peeked = peek_header(m.header)) fields = std::move(peeked.value());
  out.append("{\"header\": ").append(json_or_empty_object(m.header));
  out.append(", \"msg_id\": ");
  detail::append_json_string(out, fields.msg_id);
  out.append(", \"msg_type\": ");
  detail::append_json_string(out, fields.msg_type);
  out.append(", \"parent_header\": ").append(json_or_empty_object(m.parent_header));
  out.append(", \"metadata\": ").append(json_or_empty_object(m.metadata));
  out.append(", \"content\": ").append(json_or_empty_object(m.content));
  if (buffers_key) out.append(", \"buffers\": []");
  out.append(", \"channel\": ");
  detail::append_json_string(out, channel);
  out.push_back('}');
}

template <class M>
size_t parts_size(const M& m) {
  size_t n = m.header.size() + m.parent_header.size() + m.metadata.size() + m.content.size();
  for (const auto& b : m.buffers) n += b.size();
  return n;
}

WsFrame encode_legacy_view(std::string_view channel, const MessageView& m) {
  constexpr size_t kJsonOverhead = 256;  // keys, separators, msg_id, msg_type: one reserve fits
  WsFrame frame;
  if (m.buffers.empty()) {
    frame.data.reserve(parts_size(m) + channel.size() + kJsonOverhead);
    append_legacy_json(frame.data, channel, m, /*buffers_key=*/true);
    return frame;
  }
  frame.binary = true;
  const size_t nbufs = 1 + m.buffers.size();
  const size_t table = 4 * (nbufs + 1);
  frame.data.reserve(table + parts_size(m) + channel.size() + kJsonOverhead);
  frame.data.resize(table);  // the offsets go in once the JSON length is known
  append_legacy_json(frame.data, channel, m, /*buffers_key=*/false);
  size_t offset = frame.data.size();
  char* p = frame.data.data();
  store_be32(p, static_cast<uint32_t>(nbufs));
  store_be32(p + 4, static_cast<uint32_t>(table));
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    // The layout has 32-bit offsets; the launcher bounds kernel messages far below 4 GiB.
    CELLGATE_ASSERT(offset <= UINT32_MAX);
    store_be32(p + 4 * (i + 2), static_cast<uint32_t>(offset));
    offset += m.buffers[i].size();
  }
  for (const auto& b : m.buffers) frame.data.append(b);
  return frame;
}

void append_v1_head(std::string& out, std::string_view channel, const Message& m) {
  const size_t n = kV1MinOffsets + m.buffers.size();
  put_le64(out, n);
  uint64_t offset = 8 * (n + 1);
  put_le64(out, offset);
  offset += channel.size();
  put_le64(out, offset);
  for (const std::string* part : {&m.header, &m.parent_header, &m.metadata, &m.content}) {
    offset += part->size();
    put_le64(out, offset);
  }
  for (const auto& b : m.buffers) {
    offset += b.size();
    put_le64(out, offset);
  }
  out.append(channel);
}

WsFrame encode_v1(std::string_view channel, const Message& m) {
  const size_t n = kV1MinOffsets + m.buffers.size();
  WsFrame frame{std::string(), true};
  frame.data.reserve(8 * (n + 1) + channel.size() + parts_size(m));
  append_v1_head(frame.data, channel, m);
  frame.data.append(m.header).append(m.parent_header).append(m.metadata).append(m.content);
  for (const auto& b : m.buffers) frame.data.append(b);
  return frame;
}

// One of the message dict's object members, re-serialised; missing → "{}" when optional.
common::Result<std::string> object_member(const json& msg, const char* key, bool required) {
  auto it = msg.find(key);
  if (it == msg.end()) {
    if (required) return bad(std::string("websocket message has no ") + key);
    return std::string("{}");
  }
  if (!it->is_object()) return bad(std::string("websocket message ") + key + " is not an object");
  // Parsed text is valid UTF-8, so "replace" never fires; it only rules out a throw.
  return it->dump(-1, ' ', false, json::error_handler_t::replace);
}

// The legacy message dict (text frame, or the JSON part of the binary layout).
common::Result<WsMessage> decode_legacy_json(std::string_view text, std::vector<std::string> buffers) {
  if (!detail::json_depth_within(text, detail::kMaxJsonDepth)) return bad("websocket message nests too deeply");
  json msg = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!msg.is_object()) return bad("websocket message is not a JSON object");

  WsMessage out;
  auto channel = msg.find("channel");
  if (channel == msg.end() || channel->is_null()) {
    out.channel = "shell";  // jupyter_server: "No channel specified, assuming shell"
  } else if (channel->is_string() && client_channel(channel->get_ref<const std::string&>())) {
    out.channel = channel->get<std::string>();
  } else {
    return bad("websocket message has an unknown channel");
  }

  auto header = msg.find("header");
  if (header == msg.end() || !header->is_object()) return bad("websocket message header is not an object");
  auto type = header->find("msg_type");
  if (type == header->end() || !type->is_string()) return bad("websocket message header has no string msg_type");

  auto h = object_member(msg, "header", true);
  auto p = object_member(msg, "parent_header", false);
  auto md = object_member(msg, "metadata", false);
  auto c = object_member(msg, "content", false);  // Session.serialize defaults content to {}
  for (const auto* r : {&h, &p, &md, &c}) {
    if (!*r) return r->error();
  }
  out.message.header = std::move(h.value());
  out.message.parent_header = std::move(p.value());
  out.message.metadata = std::move(md.value());
  out.message.content = std::move(c.value());
  out.message.buffers = std::move(buffers);
  return out;
}

// Big-endian layout: nbufs, nbufs offsets, JSON, buffers (deserialize_binary_message).
common::Result<WsMessage> decode_legacy_binary(std::string_view data, size_t max_parts) {
  if (data.size() < 4) return bad("binary websocket message is truncated");
  const uint64_t nbufs = get_be32(data.data());
  if (nbufs == 0) return bad("binary websocket message has no parts");
  if (nbufs > max_parts) return too_many();
  const uint64_t table = 4 * (nbufs + 1);
  if (data.size() < table) return bad("binary websocket message offset table is truncated");

  std::vector<uint64_t> offsets(nbufs + 1);
  for (uint64_t i = 0; i < nbufs; ++i) offsets[i] = get_be32(data.data() + 4 * (i + 1));
  offsets[nbufs] = data.size();  // the last part runs to the end of the frame
  if (offsets[0] != table) return bad("binary websocket message first offset is wrong");
  for (uint64_t i = 0; i < nbufs; ++i) {
    if (offsets[i + 1] < offsets[i] || offsets[i + 1] > data.size()) {
      return bad("binary websocket message offsets are out of order or out of range");
    }
  }
  std::vector<std::string> buffers;
  buffers.reserve(nbufs - 1);
  for (uint64_t i = 1; i < nbufs; ++i) buffers.emplace_back(data.substr(offsets[i], offsets[i + 1] - offsets[i]));
  return decode_legacy_json(data.substr(offsets[0], offsets[1] - offsets[0]), std::move(buffers));
}

// Little-endian layout: n, n offsets, channel, 4 JSON parts, buffers (deserialize_msg_from_ws_v1).
common::Result<WsMessage> decode_v1(std::string_view data, bool binary, size_t max_parts, bool from_server) {
  auto offsets = check_v1(data, binary, max_parts, from_server);
  if (!offsets) return offsets.error();
  const std::vector<uint64_t>& at = offsets.value();
  auto part = [&](uint64_t i) { return data.substr(at[i], at[i + 1] - at[i]); };
  WsMessage out;
  out.channel.assign(part(0));
  out.message.header.assign(part(1));
  out.message.parent_header.assign(part(2));
  out.message.metadata.assign(part(3));
  out.message.content.assign(part(4));
  out.message.buffers.reserve(at.size() - 2 - kV1JsonParts);
  for (uint64_t i = 1 + kV1JsonParts; i + 1 < at.size(); ++i) out.message.buffers.emplace_back(part(i));
  return out;
}

}  // namespace

WsFrame encode_ws(WsProtocol protocol, std::string_view channel, const Message& m) {
  if (protocol == WsProtocol::kV1) return encode_v1(channel, m);
  MessageView view{m.header, m.parent_header, m.metadata, m.content, {}};
  view.buffers.assign(m.buffers.begin(), m.buffers.end());
  return encode_legacy_view(channel, view);
}

WsFrame encode_legacy(std::string_view channel, const MessageView& m) { return encode_legacy_view(channel, m); }

std::string encode_v1_head(std::string_view channel, const Message& m) {
  std::string head;
  head.reserve(8 * (kV1MinOffsets + m.buffers.size() + 1) + channel.size());
  append_v1_head(head, channel, m);
  return head;
}

common::Result<WsMessage> decode_ws(WsProtocol protocol, std::string_view data, bool binary, size_t max_parts) {
  if (protocol == WsProtocol::kV1) return decode_v1(data, binary, max_parts, false);
  if (binary) return decode_legacy_binary(data, max_parts);
  return decode_legacy_json(data, {});
}

common::Result<WsMessage> decode_v1_from_server(std::string_view data, bool binary, size_t max_parts) {
  return decode_v1(data, binary, max_parts, true);
}

}  // namespace cellgate::protocol
