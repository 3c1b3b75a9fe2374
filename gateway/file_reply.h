// SPDX-License-Identifier: BSD-3-Clause
// file_reply: responses whose body is an open file (a workspace file, a snapshot archive staged on
// disk), which the session loop writes in pieces: the gateway never holds such a body in memory,
// however large it is and however slowly the client reads it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "gateway/http_types.h"

namespace cellgate::gateway {

struct FileBody {
  common::UniqueFd fd;
  uint64_t size = 0;  // bytes from offset 0; the response's Content-Length
};

// An unnamed file (O_TMPFILE; removed by the kernel when its last fd closes, even after a crash) in
// dir, which must be on a filesystem the data dir's owner can write.
common::Result<common::UniqueFd> open_unnamed_file(const std::string& dir);

// Io thread only. attach() marks a response (an internal header naming the file); take() removes the
// mark and hands the file to whoever writes the response. A marked response that is never written
// would keep its file open: the session loop takes every response's file.
class FileReplies {
 public:
  void attach(Response& res, FileBody file);
  std::optional<FileBody> take(Response& res);
  size_t pending() const { return files_.size(); }

 private:
  uint64_t next_ = 0;
  std::map<uint64_t, FileBody> files_;
};

}  // namespace cellgate::gateway
