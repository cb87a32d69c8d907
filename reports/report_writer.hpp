#pragma once
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace moe::report {

// Writes the report file so that it is always whole: each write goes to a temporary file in
// the same folder, is flushed to disk, then renamed over the target (rename is atomic). Called
// after every case, so a crash mid-suite keeps every case measured before it.
// A measurement is never lost to an unwritable file: when the target cannot be written (its
// folder turned read-only, the path became a folder, the disk filled), the report goes to a
// fallback beside it, PATH.PID.fallback.json (else in the temp folder), and stderr says once
// where; later writes go there too. Throws only when the fallback fails as well.
class ReportWriter {
 public:
  explicit ReportWriter(std::string path);
  // Where the report is: the path asked for, or the fallback after a failed write.
  const std::string& path() const { return written_; }
  const std::string& requested_path() const { return path_; }
  bool fell_back() const { return written_ != path_; }
  void write(const Report& report) const;

  // The fallback names for `path`: beside it, then in the temp folder.
  static std::vector<std::string> fallback_paths(const std::string& path);

 private:
  std::string path_;
  mutable std::string written_;
};

// Same guarantee for any text output (renders, exports).
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace moe::report
