// SPDX-License-Identifier: BSD-3-Clause
// utf8: strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
#pragma once

#include <string_view>

namespace cellgate::common {

// True when s is well-formed UTF-8. NUL bytes are valid UTF-8; callers that want text without
// them check separately.
bool valid_utf8(std::string_view s);

}  // namespace cellgate::common
