// SPDX-License-Identifier: BSD-3-Clause
// tar_writer: a snapshot as a POSIX pax/ustar archive, streamed from the object store.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "workspace/manifest.h"
#include "workspace/object_store.h"

namespace cellgate::workspace {

// Receives archive bytes in order; an error aborts the archive.
using TarSink = std::function<common::Status(std::string_view)>;

// Writes every manifest entry (dirs, files, symlinks) under its relative path; names over 100
// bytes, long link targets, huge sizes and ids use pax 'x' records (hdrcharset=BINARY so any
// byte survives). Thread-safe (reads immutable objects only).
common::Status write_tar(const ObjectStore& store, const Manifest& manifest, const TarSink& sink);
common::Status write_tar_to_fd(const ObjectStore& store, const Manifest& manifest, int fd);
// A sink that writes everything to fd (blocking writes, EINTR-safe).
TarSink fd_sink(int fd);
// The whole archive in memory; larger than max_bytes → kTooLarge.
common::Result<std::string> tar_to_string(const ObjectStore& store, const Manifest& manifest,
                                          uint64_t max_bytes);

}  // namespace cellgate::workspace
