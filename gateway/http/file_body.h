// SPDX-License-Identifier: BSD-3-Clause
// file_body: a response body that is an open file (a workspace file, a snapshot archive staged on
// disk), which the session writes in pieces: the gateway never holds such a body in memory, however
// large it is and however slowly the client reads it. A part of it (a byte range) is sent just as well.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::http {

struct FileBody {
  common::UniqueFd fd;
  uint64_t size = 0;    // bytes sent from offset on; the response's Content-Length
  uint64_t offset = 0;  // where in the file they start (a range request's first byte)
};

// An unnamed file (O_TMPFILE; removed by the kernel when its last fd closes, even after a crash) in
// dir, which must be on a filesystem the data dir's owner can write.
common::Result<common::UniqueFd> open_unnamed_file(const std::string& dir);

}  // namespace cellgate::http
