// SPDX-License-Identifier: BSD-3-Clause
// image_ranges: which mappings are the preloaded image, so that a jail's helper and init can drop them.
#pragma once

#include <cstddef>

#include "isolation/child/run_child.h"

namespace cellgate::zygote {

// A jail's helper and init are copies of this process, but run only its C++ and libc: the Python
// image (~800 mappings: the object arenas, ~150 shared libraries, their data) is the kernel's alone.
// Kept in helper and init, it cost each jail ~0.6 MiB of page tables and ~1,600 VMAs of slab, which no
// smaps shows (issue 26). They unmap it once the kernel is forked (isolation::JailHooks::shed).
//
// At main()'s start, before the interpreter: what this binary itself runs in (its own mappings, its
// libraries, heap, stack, vdso). Whatever is mapped later belongs to the image.
void record_startup_mappings();
// After the preload: every mapping that does not overlap a startup one, adjacent ones merged (static
// storage, the same in every fork). Returns "" or why none were recorded (then nothing is dropped).
const char* record_image_ranges();
// The ranges recorded; count 0 before record_image_ranges or when it failed.
const isolation::child::MemRange* image_ranges(size_t* count);
// Bytes and mappings the ranges cover (for the log line).
size_t image_range_bytes();
size_t image_range_mappings();

}  // namespace cellgate::zygote
