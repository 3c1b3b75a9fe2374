// SPDX-License-Identifier: BSD-3-Clause
// progress: what long work reports as it goes, and a one-line meter for a terminal.
#include "common/progress.h"

#include "common/fd_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include <fmt/core.h>

namespace cellgate::common {
namespace {

constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

// A meter that cannot be drawn is not worth failing the work for: a failed write is ignored.
void draw(int fd, std::string_view s) { (void)write_all(fd, s); }

}  // namespace

std::string format_progress(std::string_view label, const ProgressTick& tick, double elapsed_s) {
  std::string out = fmt::format("{}: {} {}", label, tick.phase, tick.done);
  if (tick.total > 0) {
    out += fmt::format("/{} ({}%)", tick.total, tick.done >= tick.total ? 100 : tick.done * 100 / tick.total);
  }
  if (tick.bytes > 0) out += " " + human_bytes(tick.bytes);
  out += fmt::format(" {:.1f}s", elapsed_s);
  return out;
}

TerminalProgress::TerminalProgress(std::string label, int fd)
    : label_(std::move(label)), fd_(fd), start_(std::chrono::steady_clock::now()), next_draw_(start_) {
  const char* term = std::getenv("TERM");
  enabled_ = ::isatty(fd_) == 1 && !(term && std::strcmp(term, "dumb") == 0);
}

TerminalProgress::~TerminalProgress() { erase(); }

void TerminalProgress::erase() {
  if (!drawn_) return;
  draw(fd_, "\r\033[K");
  drawn_ = false;
}

void TerminalProgress::update(const ProgressTick& tick) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = tick.total > 0 && tick.done >= tick.total;
  if (now < next_draw_ && !last) return;
  next_draw_ = now + kRedrawEvery;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  draw(fd_, "\r\033[K" + format_progress(label_, tick, elapsed));
  drawn_ = true;
}

ProgressFn TerminalProgress::fn() {
  if (!enabled_) return {};
  return [this](const ProgressTick& t) { update(t); };
}

}  // namespace cellgate::common
