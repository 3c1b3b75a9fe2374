// SPDX-License-Identifier: BSD-3-Clause
// message: a Jupyter message as the bytes of its wire parts (no JSON tree on the hot path).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace cellgate::protocol {

// The parts of a Jupyter wire message, each exactly as received or as it will be sent.
// header/parent_header/metadata/content hold JSON text; buffers are raw bytes.
struct Message {
  std::vector<std::string> identities;  // ZMQ routing prefix (ROUTER identities, or the iopub topic)
  std::string header;
  std::string parent_header;
  std::string metadata;
  std::string content;
  std::vector<std::string> buffers;
};

// The few header fields routing needs. Parsing only the header keeps the hot path cheap.
struct HeaderFields {
  std::string msg_id;
  std::string msg_type;
  std::string session;
};

// Extracts msg_id, msg_type and session from a header JSON object (missing → empty, but the header
// must be a JSON object with a string msg_type). A byte scanner answers for ordinary headers; anything
// it declines (escapes in those values, odd numbers, deep nesting, invalid text) gets a full parse, so
// the answer is always the parser's. Never throws.
common::Result<HeaderFields> peek_header(std::string_view header_json);

// Extracts msg_id from a parent_header ("" when it is empty or has none). Never throws.
std::string peek_parent_msg_id(std::string_view parent_header_json);

// A top-level string member of a JSON object ("" when missing, not a string, or the text is not an
// object), the scanner first as in peek_header. Never throws.
std::string peek_string_member(std::string_view object_json, std::string_view key);

// True when text is one JSON object, as a Jupyter message's header, parent_header, metadata and
// content must be (what clients parse). The linear scanner judges; deeper nesting than it takes is
// parsed (iteratively) only up to 1 MiB, and declined above: a kernel must not make the gateway's
// io thread parse half a gigabyte of brackets. Never throws.
bool valid_json_object(std::string_view text);

// A top-level member that is literally true (e.g. an execute_request's "silent"). Never throws.
bool peek_true_member(std::string_view object_json, std::string_view key);

// Builds a header JSON text for a message we originate (protocol version 5.3, date now).
std::string make_header(std::string_view msg_type, std::string_view session, std::string_view username,
                        std::string_view msg_id);

// A message we originate: fresh msg_id, header from make_header, given parent and content.
Message make_message(std::string_view msg_type, std::string_view session, std::string content_json,
                     std::string parent_header_json = "{}", std::string metadata_json = "{}");

}  // namespace cellgate::protocol
