// SPDX-License-Identifier: BSD-3-Clause
// zmq_codec: Jupyter multipart frames <-> Message. Authenticates before it parses anything.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "protocol/message.h"
#include "protocol/signer.h"

namespace cellgate::protocol {

inline constexpr std::string_view kDelimiter = "<IDS|MSG>";
inline constexpr size_t kMaxIdentities = 16;  // a ROUTER chain deeper than this is hostile

// frames = [ident..., "<IDS|MSG>", hmac_hex, header, parent, metadata, content, buffer...].
// Order of checks: delimiter present, frame count, signature (length then constant-time bytes),
// and only then are the parts copied. Header JSON is NOT parsed here (see peek_header).
// Errors: kBadRequest with a message saying which check failed.
common::Result<Message> decode_zmq(const std::vector<std::string_view>& frames, const Signer& signer);

// The frames to send for m: identities, delimiter, a fresh signature, the four parts, buffers.
std::vector<std::string> encode_zmq(const Message& m, const Signer& signer);

}  // namespace cellgate::protocol
