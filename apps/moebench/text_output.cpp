#include "apps/moebench/text_output.hpp"

#include <cstdio>

#include "common/errors.hpp"
#include "reports/report_writer.hpp"

namespace moe::cli {

void write_text_output(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  report::write_file_atomically(path, text);
}

void require_format(const std::string& option, const std::string& value,
                    std::initializer_list<const char*> valid) {
  std::string list;
  for (const char* v : valid) {
    if (value == v) return;
    list += (list.empty() ? "" : ", ") + std::string(v);
  }
  throw UsageError(option + " '" + value + "' is not valid; valid: " + list);
}

}  // namespace moe::cli
