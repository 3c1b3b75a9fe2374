// SPDX-License-Identifier: BSD-3-Clause
// language_literal: text as a string literal of a kernel's language, so the gateway can hand a kernel
// data (a notebook-http REQUEST, a claim's variables) that its own parser reads as a literal, never as code.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cellgate::launcher {

// The literal's spelling is chosen per language so that nothing in it is evaluated: no interpolation
// ("$(..)" in bash, "@{[..]}" in perl, "#{..}" in ruby, "$(..)" in julia), no escape the language
// would read differently. Each rule is checked with the language's own interpreter in
// tests/unit/launcher/language_literal_test.cc.
//
// The text must be printable ASCII (0x20-0x7e): JSON written with ensure_ascii, which is what the
// gateway passes. Languages are matched case-insensitively on the kernelspec's
// `language` ("python", "R", "bash", "perl", "ruby", "octave", "javascript"); nullopt for any other
// language, or for text outside printable ASCII.
std::optional<std::string> string_literal(std::string_view language, std::string_view text);

// Whether string_literal knows the language.
bool has_string_literal(std::string_view language);

// The languages string_literal knows, for error messages.
const std::vector<std::string>& literal_languages();

// A statement binding `name` (a plain identifier) to the literal in that language, e.g.
// `REQUEST = "..."` (python), `REQUEST <- "..."` (R), `REQUEST='...'` (bash), `my $REQUEST = '...';`
// (perl), `REQUEST = '...';` (octave). nullopt as for string_literal.
std::optional<std::string> assign_statement(std::string_view language, std::string_view name, std::string_view text);

}  // namespace cellgate::launcher
