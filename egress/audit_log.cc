// SPDX-License-Identifier: BSD-3-Clause
// audit_log: one JSON line per connection a kernel opened or was refused, in a size-bounded file.
#include "egress/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace cellgate::egress {

nlohmann::json audit_json(const AuditRecord& r) {
  nlohmann::json j = {{"time", r.time},   {"kernel", r.kernel},     {"user", r.user},
                      {"kind", r.kind},   {"host", r.host},         {"port", r.port},
                      {"address", r.address}, {"decision", r.allowed ? "allowed" : "refused"},
                      {"reason", r.reason}, {"bytes_out", r.bytes_out}, {"bytes_in", r.bytes_in},
                      {"requests", r.requests}, {"duration_ms", r.duration_ms}};
  if (!r.allowed && !r.refused_by.empty()) j["refused_by"] = r.refused_by;
  return j;
}

common::Result<AuditLog> AuditLog::open(const std::string& path, uint64_t max_bytes) {
  AuditLog log;
  log.path_ = path;
  log.max_bytes_ = max_bytes;
  log.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (log.fd_ < 0) return common::make_error(common::Errc::kBadRequest, "--audit-log: cannot open " + path, errno);
  const std::string previous = path + ".1";
  log.previous_fd_ = ::open(previous.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (log.previous_fd_ < 0) return common::make_error(common::Errc::kBadRequest, "--audit-log: cannot open " + previous, errno);
  struct stat st {};
  if (::fstat(log.fd_, &st) == 0) log.size_ = static_cast<uint64_t>(st.st_size);
  return log;
}

AuditLog::AuditLog(AuditLog&& other) noexcept
    : path_(std::move(other.path_)), max_bytes_(other.max_bytes_), size_(other.size_), fd_(std::exchange(other.fd_, -1)),
      previous_fd_(std::exchange(other.previous_fd_, -1)) {}

AuditLog& AuditLog::operator=(AuditLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    if (previous_fd_ >= 0) ::close(previous_fd_);
    path_ = std::move(other.path_);
    max_bytes_ = other.max_bytes_;
    size_ = other.size_;
    fd_ = std::exchange(other.fd_, -1);
    previous_fd_ = std::exchange(other.previous_fd_, -1);
  }
  return *this;
}

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
  if (previous_fd_ >= 0) ::close(previous_fd_);
}

void AuditLog::rotate() {
  // Copy, then truncate: no file is created or renamed, so no write access to the directory is needed.
  if (previous_fd_ < 0 || ::ftruncate(previous_fd_, 0) != 0) return;
  loff_t in = 0, out = 0;
  for (;;) {
    ssize_t n = ::copy_file_range(fd_, &in, previous_fd_, &out, 1 << 20, 0);
    if (n <= 0) break;
  }
  if (::ftruncate(fd_, 0) == 0) size_ = 0;  // O_APPEND: the next line starts the file again
}

void AuditLog::write(const nlohmann::json& line) {
  if (fd_ < 0) return;
  // Replace invalid UTF-8 rather than throw: hosts are canonical, but reasons may quote a client.
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (max_bytes_ > 0 && size_ + text.size() > max_bytes_) rotate();
  // One write(2) per line with O_APPEND: a reader never sees half a line from us.
  ssize_t n = ::write(fd_, text.data(), text.size());
  if (n > 0) size_ += static_cast<uint64_t>(n);
}

}  // namespace cellgate::egress
