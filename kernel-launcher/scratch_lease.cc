// SPDX-License-Identifier: BSD-3-Clause
// scratch_lease: the per-thread read buffers that ZmtpStream parses in place.
#include "kernel-launcher/scratch_lease.h"

#include <memory>

#include "common/assert.h"

namespace cellgate::launcher {

namespace {

thread_local int live_leases = 0;

}  // namespace

ScratchLease::ScratchLease() : depth_(live_leases++) { CELLGATE_ASSERT(depth_ < kMaxDepth); }

ScratchLease::~ScratchLease() { --live_leases; }

char* ScratchLease::get() {
  static thread_local std::unique_ptr<char[]> buffers[kMaxDepth];
  auto& buf = buffers[depth_];
  if (!buf) buf.reset(new char[kBytes]);
  return buf.get();
}

}  // namespace cellgate::launcher
