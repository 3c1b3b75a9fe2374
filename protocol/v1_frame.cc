// SPDX-License-Identifier: BSD-3-Clause
// v1_frame: the checks of a v1 kernel WebSocket frame (deserialize_msg_from_ws_v1's layout), shared by
// decode_ws, decode_v1_from_server and V1Frame.
#include "protocol/v1_frame.h"

#include <string>
#include <utility>

#include "protocol/json_text.h"
#include "protocol/message.h"

namespace cellgate::protocol {
namespace {

constexpr uint64_t kV1MinOffsets = 2 + kV1JsonParts;  // channel start + 4 parts + end offset

common::Error bad(std::string message) { return common::make_error(common::Errc::kBadRequest, std::move(message)); }

uint64_t get_le64(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | u[i];
  return v;
}

// Browsers may only write to these; iopub is kernel→client only (jupyter_server drops the rest).
bool client_channel(std::string_view channel) {
  return channel == "shell" || channel == "control" || channel == "stdin";
}

}  // namespace

namespace {

// check_v1's checks in its order, on the first bytes of a frame of `size` bytes: each check reads only
// what it needs, and when head ends before that, the answer is how much it needs. Done: offsets holds the
// table and the answer is where the header ends (at most head.size()).
common::Result<size_t> check_prefix(std::string_view head, uint64_t size, bool binary, size_t max_parts,
                                    bool from_server, std::vector<uint64_t>& offsets) {
  if (!binary) return bad("v1 websocket messages must be binary");
  if (size < 8) return bad("v1 websocket message is truncated");
  if (head.size() < 8) return size_t{8};
  const uint64_t n = get_le64(head.data());
  if (n < kV1MinOffsets) return bad("v1 websocket message has too few parts");
  if (n - 2 > max_parts) return common::make_error(common::Errc::kTooLarge, "websocket message has too many parts");
  if (n >= size / 8) return bad("v1 websocket message offset table is truncated");  // 8*(n+1) > size
  if (head.size() < 8 * (n + 1)) return static_cast<size_t>(8 * (n + 1));

  offsets.resize(n);
  for (uint64_t i = 0; i < n; ++i) offsets[i] = get_le64(head.data() + 8 * (i + 1));
  if (offsets[0] != 8 * (n + 1)) return bad("v1 websocket message first offset is wrong");
  for (uint64_t i = 1; i < n; ++i) {
    if (offsets[i] < offsets[i - 1] || offsets[i] > size) {
      return bad("v1 websocket message offsets are out of order or out of range");
    }
  }
  if (offsets[n - 1] != size) return bad("v1 websocket message last offset is not the frame end");

  // The channel and the header, once they are in (offsets within size, so size_t holds them).
  if (head.size() < offsets[2]) return static_cast<size_t>(offsets[2]);
  auto part = [&](uint64_t i) { return head.substr(offsets[i], offsets[i + 1] - offsets[i]); };
  std::string_view channel = part(0);
  if (!client_channel(channel) && !(from_server && channel == "iopub"))
    return bad("v1 websocket message has an unknown channel");
  if (auto fields = peek_header(part(1)); !fields) return bad("v1 websocket message: " + fields.error().message);
  return static_cast<size_t>(offsets[2]);
}

}  // namespace

common::Result<std::vector<uint64_t>> check_v1(std::string_view data, bool binary, size_t max_parts, bool from_server) {
  std::vector<uint64_t> offsets;
  if (auto head = check_prefix(data, data.size(), binary, max_parts, from_server, offsets); !head)
    return head.error();
  // A client's parts are checked; a node's are its kernel's, passed on as that node passes them to its
  // own clients (which nothing parses on the way either): scanning them cost the relay ~13% of its CPU
  // on iopub output.
  auto part = [&](uint64_t i) { return data.substr(offsets[i], offsets[i + 1] - offsets[i]); };
  for (uint64_t i = 2; !from_server && i <= kV1JsonParts; ++i) {
    if (!detail::is_json_object_text(part(i))) return bad("v1 websocket message part is not a JSON object");
  }
  return offsets;
}

common::Result<V1Head> check_v1_head(std::string_view head, uint64_t size, bool binary, size_t max_parts) {
  std::vector<uint64_t> offsets;
  auto need = check_prefix(head, size, binary, max_parts, true, offsets);
  if (!need) return need.error();
  if (need.value() > head.size()) return V1Head{need.value(), {}};
  return V1Head{0, std::string(head.substr(offsets[0], offsets[1] - offsets[0]))};
}

common::Result<V1Frame> V1Frame::from_server(std::unique_ptr<char[]> data, size_t size, bool binary,
                                             size_t max_parts) {
  auto offsets = check_v1(std::string_view(data.get(), size), binary, max_parts, true);
  if (!offsets) return offsets.error();
  return V1Frame(std::move(data), size, std::move(offsets.value()));
}

}  // namespace cellgate::protocol
