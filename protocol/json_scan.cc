// SPDX-License-Identifier: BSD-3-Clause
// json_scan: a validating single-pass scanner that answers exactly or declines.
#include "protocol/json_scan.h"

#include <cstdint>
#include <cstring>

namespace cellgate::protocol::detail {
namespace {

// Numbers longer than this may not fit nlohmann's integer types; let the full parser decide.
constexpr std::ptrdiff_t kMaxNumberChars = 18;

class Scanner {
 public:
  // syntax_only: judge the grammar alone (any number, any \u escape), not what nlohmann would accept.
  Scanner(std::string_view text, bool syntax_only)
      : p_(text.data()), end_(text.data() + text.size()), syntax_only_(syntax_only) {}

  bool document(std::span<ScanField> fields) {
    skip_ws();
    if (!object(1, fields)) return false;
    skip_ws();
    return p_ == end_;
  }

 private:
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool eat(char c) {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  static int hex(char c) {
    if (digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // {members}; at depth 1 the members are matched against fields.
  bool object(size_t depth, std::span<ScanField> fields) {
    if (depth > kMaxScanDepth || !eat('{')) return false;
    skip_ws();
    if (eat('}')) return true;
    while (true) {
      skip_ws();
      std::string_view key;
      bool escaped = false;
      if (!string(key, escaped)) return false;
      // An escaped key might spell a wanted one ("msg\u005ftype"); decoding is the full parser's job.
      if (escaped && !fields.empty()) return false;
      skip_ws();
      if (!eat(':')) return false;
      skip_ws();
      ScanField* want = nullptr;
      for (auto& f : fields) {
        if (f.key == key) want = &f;
      }
      const char* start = p_;
      if (want && p_ < end_ && *p_ == '"') {
        std::string_view v;
        if (!string(v, escaped) || escaped) return false;
        want->kind = ScanField::Kind::kString;
        want->value = v;
      } else {
        if (!value(depth)) return false;
        if (want) {
          want->kind = ScanField::Kind::kOther;
          want->value = std::string_view(start, static_cast<size_t>(p_ - start));
        }
      }
      skip_ws();
      if (eat(',')) continue;
      return eat('}');
    }
  }

  bool array(size_t depth) {
    if (depth > kMaxScanDepth || !eat('[')) return false;
    skip_ws();
    if (eat(']')) return true;
    while (true) {
      if (!value(depth)) return false;
      skip_ws();
      if (eat(',')) continue;
      return eat(']');
    }
  }

  bool value(size_t depth) {
    skip_ws();
    if (p_ == end_) return false;
    std::string_view ignored;
    bool escaped = false;
    switch (*p_) {
      case '{': return object(depth + 1, {});
      case '[': return array(depth + 1);
      case '"': return string(ignored, escaped);
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  bool number() {
    const char* start = p_;
    eat('-');
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && digit(*p_)) ++p_;
    } else {
      return false;
    }
    if (eat('.')) {
      if (p_ == end_ || !digit(*p_)) return false;
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (syntax_only_) {
      if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
        ++p_;
        if (!eat('+')) eat('-');
        if (p_ == end_ || !digit(*p_)) return false;
        while (p_ < end_ && digit(*p_)) ++p_;
      }
      return true;
    }
    // Exponents can overflow a double, which nlohmann rejects: not ours to judge.
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) return false;
    return p_ - start <= kMaxNumberChars;
  }

  // "..." with escapes and UTF-8 checked; raw is the text between the quotes.
  bool string(std::string_view& raw, bool& escaped) {
    if (!eat('"')) return false;
    const char* start = p_;
    escaped = false;
    while (p_ < end_) {
      skip_plain();
      if (p_ == end_) break;
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        raw = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c == '\\') {
        escaped = true;
        if (!escape()) return false;
      } else if (c < 0x20) {
        return false;
      } else if (c < 0x80) {
        ++p_;
      } else if (!utf8()) {
        return false;
      }
    }
    return false;
  }

  // Skips 8 bytes at a time while none of them ends the string or needs a look: a quote, a
  // backslash, a control character or a byte of a multi-byte sequence (SWAR; outputs are long
  // runs of plain text, and this is most of the gateway's cost on a 50 MB one).
  void skip_plain() {
    constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
    auto has_zero = [](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
    while (end_ - p_ >= 8) {
      uint64_t w;
      std::memcpy(&w, p_, 8);
      if (((w & kHigh) | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\')) |
           ((w - kOnes * 0x20) & ~w & kHigh)) != 0)
        return;
      p_ += 8;
    }
  }

  bool escape() {
    ++p_;  // the backslash
    if (p_ == end_) return false;
    switch (*p_++) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return true;
      case 'u': break;
      default: return false;
    }
    if (end_ - p_ < 4) return false;
    int v = 0;
    for (int i = 0; i < 4; ++i) {
      int h = hex(p_[i]);
      if (h < 0) return false;
      v = v * 16 + h;
    }
    p_ += 4;
    // Surrogates must pair up, or nlohmann rejects the text: leave that to it. The grammar allows any.
    return syntax_only_ || v < 0xD800 || v > 0xDFFF;
  }

  // One multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
  bool utf8() {
    const auto* u = reinterpret_cast<const unsigned char*>(p_);
    const size_t left = static_cast<size_t>(end_ - p_);
    const unsigned c = u[0];
    size_t more = 0;
    unsigned lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      more = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      more = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      more = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (left <= more || u[1] < lo || u[1] > hi) return false;
    for (size_t i = 2; i <= more; ++i) {
      if (u[i] < 0x80 || u[i] > 0xBF) return false;
    }
    p_ += more + 1;
    return true;
  }

  const char* p_;
  const char* end_;
  bool syntax_only_;
};

}  // namespace

bool scan_top_level(std::string_view text, std::span<ScanField> fields) {
  for (auto& f : fields) {
    f.kind = ScanField::Kind::kMissing;
    f.value = {};
  }
  return Scanner(text, false).document(fields);
}

bool is_json_object(std::string_view text) { return Scanner(text, true).document({}); }

}  // namespace cellgate::protocol::detail
