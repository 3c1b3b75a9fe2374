// SPDX-License-Identifier: BSD-3-Clause
// size_text: byte sizes as people write them in options and policies ("512M", "1.5G", "4096").
#pragma once

#include <cstdint>
#include <string_view>

namespace cellgate::common {

// "512M", "1G", "4096", "1.5G" → bytes (K/M/G/T binary suffixes, optional "iB"/"B"); at least 1
// byte, at most 9e18. False on anything else (signs, exponents, "inf", spaces).
bool parse_size(std::string_view text, uint64_t& out);

}  // namespace cellgate::common
