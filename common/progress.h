// SPDX-License-Identifier: BSD-3-Clause
// progress: what long work reports as it goes, and a one-line meter for a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace cellgate::common {

// One step of long work: `done` of `total` units (objects, files, cells) of the named phase, and
// the bytes handled so far (0 when not counted).
struct ProgressTick {
  std::string_view phase;
  uint64_t done = 0;
  uint64_t total = 0;
  uint64_t bytes = 0;
};
// Called by the worker on its own thread, often (once per unit): it must be cheap.
using ProgressFn = std::function<void(const ProgressTick&)>;

// A meter on one line of a terminal, rewritten in place (\r, erase to end of line) at most ten
// times a second, and erased when the work ends, so that the lines printed after it stay clean.
// Only for a terminal: when fd is not a tty (a pipe, a file, a CI log) or TERM is "dumb",
// enabled() is false and it never writes. Not thread-safe.
class TerminalProgress {
 public:
  TerminalProgress(std::string label, int fd = 2);
  ~TerminalProgress();  // erases the line if anything was drawn
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  bool enabled() const { return enabled_; }
  void update(const ProgressTick& tick);
  // A ProgressFn drawing into this meter, or an empty function when disabled (workers skip it).
  ProgressFn fn();

 private:
  void erase();

  std::string label_;
  int fd_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point next_draw_;
};

// The meter's text for one tick, e.g. "fsck: objects 1,204/8,000 (15%) 1.2 GiB 3.4s" (pure).
std::string format_progress(std::string_view label, const ProgressTick& tick, double elapsed_s);

}  // namespace cellgate::common
