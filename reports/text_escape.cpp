#include "reports/text_escape.hpp"

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
