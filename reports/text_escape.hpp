#pragma once
#include <string>

namespace moe::report {

// Text placed in HTML or SVG (element content and quoted attribute values).
std::string escape_html(const std::string& s);

// Text placed in a Markdown table cell: pipes, backslashes and line breaks would end the cell.
std::string escape_markdown_cell(const std::string& s);

}  // namespace moe::report
