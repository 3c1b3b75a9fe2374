// SPDX-License-Identifier: BSD-3-Clause
// random: kernel-sourced randomness (getrandom(2)) for keys, tokens and ids.
#pragma once

#include <cstddef>
#include <string>

namespace cellgate::common {

// Fills buf with n random bytes from getrandom(2); aborts if the kernel cannot supply them.
void random_bytes(void* buf, size_t n);
// n random bytes as 2n lowercase hex characters.
std::string random_hex(size_t n_bytes);
// A random (version 4) UUID in canonical 8-4-4-4-12 form.
std::string random_uuid();
// Lowercase hex of arbitrary bytes.
std::string to_hex(const void* data, size_t n);

}  // namespace cellgate::common
