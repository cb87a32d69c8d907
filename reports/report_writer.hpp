#pragma once
#include <string>

#include "reports/report.hpp"

namespace moe::report {

// Writes the report file so that it is always whole: each write goes to a temporary file in
// the same folder, is flushed to disk, then renamed over the target (rename is atomic). Called
// after every case, so a crash mid-suite keeps every case measured before it.
class ReportWriter {
 public:
  explicit ReportWriter(std::string path);
  const std::string& path() const { return path_; }
  void write(const Report& report) const;

 private:
  std::string path_;
};

// Same guarantee for any text output (renders, exports).
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace moe::report
