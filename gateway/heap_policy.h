// SPDX-License-Identifier: BSD-3-Clause
// heap_policy: how the gateway's allocator treats multi-megabyte kernel messages.
#pragma once

#include <chrono>

#include <boost/asio/io_context.hpp>

namespace cellgate::gateway {

// glibc serves every allocation above M_MMAP_THRESHOLD (at most 32 MiB) with its own mmap and
// returns it with munmap, so each large output (a 50 MB stream message is read off the socket, copied
// into the message and written out) faults in and zeroes every page again. Keeping freed memory in
// the heap makes the next large message reuse it (measured on a 50 MB cell: the gateway's CPU per
// cell fell from 115 to 64 ms). Call once at start, before threads exist.
void keep_large_blocks_in_heap();

// What the heap then holds after a burst is given back to the system when idle: every interval,
// malloc_trim(3) runs if more than a few MiB are free in it.
void schedule_heap_trim(boost::asio::io_context& io, std::chrono::seconds interval = std::chrono::seconds(5));

}  // namespace cellgate::gateway
