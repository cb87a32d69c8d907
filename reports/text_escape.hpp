#pragma once
#include <cstddef>
#include <string>

namespace moe::report {

// Text placed in HTML or SVG (element content and quoted attribute values).
std::string escape_html(const std::string& s);

// Text placed on a terminal: control characters (C0, DEL, C1) and the bidirectional overrides
// and isolates (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C), which can reorder or
// hide what a line says, become visible escapes ("\x1b", "\u{202e}"); bytes that are not
// UTF-8 become "\xNN". With max_chars > 0, text longer than that many characters is cut to
// max_chars - 1 and "…" ends it.
std::string escape_terminal(const std::string& s, std::size_t max_chars = 0);

// Text placed in a Markdown table cell: pipes, backslashes and line breaks would end the cell.
std::string escape_markdown_cell(const std::string& s);

}  // namespace moe::report
