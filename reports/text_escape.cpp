#include "reports/text_escape.hpp"

#include <cstdio>

namespace moe::report {

std::string escape_html(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

namespace {

// The length of the UTF-8 sequence starting at s[i] and its code point, or 0 when invalid.
std::size_t utf8_sequence(const std::string& s, std::size_t i, char32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? b : n == 2 ? b & 0x1f : n == 3 ? b & 0x0f : b & 0x07;
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c >> 6) != 0x2) return 0;
    cp = (cp << 6) | (c & 0x3f);
  }
  // Overlong forms and surrogates are not UTF-8.
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

bool hidden_on_terminal(char32_t cp) {
  return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
         cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string escape_terminal(const std::string& s, std::size_t max_chars) {
  std::string out;
  out.reserve(s.size());
  std::size_t chars = 0;
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    if (max_chars > 0 && chars + 1 == max_chars) {
      // One character left: the rest of the text, if any, becomes the ellipsis.
      char32_t cp = 0;
      const std::size_t n = utf8_sequence(s, i, cp);
      if (i + (n ? n : 1) < s.size()) {
        out += "\u2026";
        return out;
      }
    }
    char32_t cp = 0;
    const std::size_t n = utf8_sequence(s, i, cp);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += buf;
      i += 1;
    } else if (hidden_on_terminal(cp)) {
      if (cp < 0x80)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      else
        std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
      i += n;
    } else {
      out.append(s, i, n);
      i += n;
    }
    ++chars;
  }
  return out;
}

std::string escape_markdown_cell(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '|': out += "\\|"; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "<br>"; break;
      case '\r': break;
      case '<': out += "&lt;"; break;
      default: out += ch;
    }
  }
  return out;
}

}  // namespace moe::report
