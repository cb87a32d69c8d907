#pragma once
#include <string>

namespace moe::cli {

// Writes rendered text to `path` (atomically: a reader never sees half a page), or to standard
// output when `path` is empty or "-".
void write_text_output(const std::string& text, const std::string& path);

// Raises UsageError naming `value` and the valid formats when it is not one of them.
void require_format(const std::string& option, const std::string& value,
                    std::initializer_list<const char*> valid);

}  // namespace moe::cli
