// SPDX-License-Identifier: BSD-3-Clause
// loop_device: an image file as a block device (loop(4)), found again when it already is one.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::workspace {

// The loop device whose backing file is `image` (/sys/block/loop*/loop/backing_file), or "" when
// none is. An image must never be attached twice: two devices would be two file systems writing
// one image.
std::string find_loop_device(const std::string& image);

struct LoopDevice {
  std::string path;       // /dev/loopN
  common::UniqueFd fd;    // hold it until the device is mounted: LO_FLAGS_AUTOCLEAR detaches a
                          // device as soon as its last opener closes it
};

// Attaches `image` to a free loop device (LOOP_CTL_GET_FREE, then LOOP_CONFIGURE; a device taken
// by someone else meanwhile is skipped) with LO_FLAGS_AUTOCLEAR, so that the device is released
// when its last user (the last mount of its file system, in any mount namespace) goes, and with
// direct I/O where the image's file system allows it (no second copy of each page in the host's
// page cache). Needs CAP_SYS_ADMIN.
common::Result<LoopDevice> attach_loop_device(const std::string& image);

}  // namespace cellgate::workspace
