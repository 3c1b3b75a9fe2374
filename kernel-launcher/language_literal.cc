// SPDX-License-Identifier: BSD-3-Clause
// language_literal: text as a string literal of a kernel's language.
#include "kernel-launcher/language_literal.h"

#include <strings.h>

#include <algorithm>

namespace cellgate::launcher {

namespace {

enum class Quoting {
  kDoubleBackslash,  // "..." with \ and " escaped: Python and R read no other escape here, JavaScript none
  kSingleBackslash,  // '...' with \ and ' escaped: perl and ruby interpolate nothing in single quotes
  kSingleShell,      // '...' with ' written '\'': POSIX shells read nothing inside single quotes
  kSingleDoubled,    // '...' with ' written '': Octave and MATLAB single-quoted strings have no escapes
};

struct Rule {
  const char* language;
  Quoting quoting;
  const char* before;  // around the literal, with the name in between: before NAME middle LITERAL after
  const char* middle;
  const char* after;
};

// Assignments as Kernel Gateway writes them (`REQUEST = ...`, perl's `my $REQUEST = ...`), in each
// language's own form where KG had none.
constexpr Rule kRules[] = {
    {"python", Quoting::kDoubleBackslash, "", " = ", ""},
    {"r", Quoting::kDoubleBackslash, "", " <- ", ""},
    {"javascript", Quoting::kDoubleBackslash, "", " = ", ";"},
    {"perl", Quoting::kSingleBackslash, "my $", " = ", ";"},
    {"ruby", Quoting::kSingleBackslash, "", " = ", ""},
    {"bash", Quoting::kSingleShell, "", "=", ""},
    {"octave", Quoting::kSingleDoubled, "", " = ", ";"},
    {"matlab", Quoting::kSingleDoubled, "", " = ", ";"},
};

const Rule* rule_for(std::string_view language) {
  for (const auto& r : kRules)
    if (language.size() == std::char_traits<char>::length(r.language) &&
        ::strncasecmp(language.data(), r.language, language.size()) == 0)
      return &r;
  return nullptr;
}

bool printable_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

std::string quote(Quoting q, std::string_view text) {
  const char open = q == Quoting::kDoubleBackslash ? '"' : '\'';
  std::string out(1, open);
  out.reserve(text.size() + text.size() / 8 + 2);
  for (char c : text) {
    switch (q) {
      case Quoting::kDoubleBackslash:
      case Quoting::kSingleBackslash:
        if (c == '\\' || c == open) out += '\\';
        out += c;
        break;
      case Quoting::kSingleShell:
        out += c == '\'' ? std::string_view("'\\''") : std::string_view(&c, 1);
        break;
      case Quoting::kSingleDoubled:
        if (c == '\'') out += '\'';
        out += c;
        break;
    }
  }
  out += open;
  return out;
}

}  // namespace

std::optional<std::string> string_literal(std::string_view language, std::string_view text) {
  const Rule* r = rule_for(language);
  if (!r || !printable_ascii(text)) return std::nullopt;
  return quote(r->quoting, text);
}

bool has_string_literal(std::string_view language) { return rule_for(language) != nullptr; }

const std::vector<std::string>& literal_languages() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& r : kRules) v.emplace_back(r.language);
    return v;
  }();
  return names;
}

std::optional<std::string> assign_statement(std::string_view language, std::string_view name, std::string_view text) {
  const Rule* r = rule_for(language);
  auto literal = string_literal(language, text);
  if (!r || !literal) return std::nullopt;
  return std::string(r->before) + std::string(name) + r->middle + *literal + r->after;
}

}  // namespace cellgate::launcher
