// SPDX-License-Identifier: BSD-3-Clause
// heap_policy: how the gateway's allocator treats multi-megabyte kernel messages.
#include "gateway/heap_policy.h"

#include <malloc.h>

#include <memory>

#include <boost/asio/steady_timer.hpp>

namespace cellgate::gateway {

namespace {
constexpr size_t kTrimAbove = 8u << 20;  // free bytes in the heap worth a malloc_trim

void arm(const std::shared_ptr<boost::asio::steady_timer>& timer, std::chrono::seconds interval) {
  timer->expires_after(interval);
  timer->async_wait([timer, interval](const boost::system::error_code& ec) {
    if (ec) return;
    if (struct mallinfo2 mi = ::mallinfo2(); mi.fordblks > kTrimAbove) ::malloc_trim(0);
    arm(timer, interval);
  });
}
}  // namespace

void keep_large_blocks_in_heap() {
  // No mmap'd chunks: large blocks come from the heap (brk, or an arena's heap) like small ones.
  ::mallopt(M_MMAP_MAX, 0);
  // And are not trimmed back at every free: schedule_heap_trim does that when idle.
  ::mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

void schedule_heap_trim(boost::asio::io_context& io, std::chrono::seconds interval) {
  arm(std::make_shared<boost::asio::steady_timer>(io), interval);
}

}  // namespace cellgate::gateway
