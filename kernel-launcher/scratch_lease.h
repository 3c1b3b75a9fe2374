// SPDX-License-Identifier: BSD-3-Clause
// scratch_lease: the per-thread read buffers that ZmtpStream parses in place.
//
// Most reads hold whole messages: they are parsed where they were read and nothing is copied. A
// read nested in another stream's parse takes the next buffer: Kernel::on_frames releases iopub
// from the shell reply's callback, the release reads iopub at once, and the shell's parse then goes
// on with the rest of its own read. With one shared buffer it went on with iopub's bytes, and parsed
// them as shell messages.
#pragma once

#include <cstddef>

namespace cellgate::launcher {

class ScratchLease {
 public:
  static constexpr size_t kBytes = 128 * 1024;

  ScratchLease();  // asserts fewer than kMaxDepth leases are live on this thread
  ~ScratchLease();
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;

  // kBytes of this lease's own buffer, valid until the lease ends.
  char* get();

 private:
  static constexpr int kMaxDepth = 4;  // shell -> iopub is 2; iopub callbacks release nothing
  int depth_;
};

}  // namespace cellgate::launcher
