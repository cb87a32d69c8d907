#include "reports/report_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/errors.hpp"

namespace moe::report {

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    throw UsageError("cannot write '" + path + "': " + std::strerror(errno));
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw UsageError("cannot write '" + path + "': " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw UsageError("cannot replace '" + path + "': " + std::strerror(err));
  }
}

ReportWriter::ReportWriter(std::string path) : path_(std::move(path)), written_(path_) {}

std::vector<std::string> ReportWriter::fallback_paths(const std::string& path) {
  const std::string suffix = "." + std::to_string(getpid()) + ".fallback.json";
  const std::filesystem::path p(path);
  std::error_code ec;
  return {path + suffix,
          (std::filesystem::temp_directory_path(ec) / (p.filename().string() + suffix)).string()};
}

void ReportWriter::write(const Report& report) const {
  const std::string text = nlohmann::json(report).dump(1) + "\n";
  try {
    write_file_atomically(written_, text);
    return;
  } catch (const UsageError& e) {
    if (fell_back()) throw;  // the fallback failed too
    std::string why = e.what();
    for (const std::string& fallback : fallback_paths(path_)) {
      try {
        write_file_atomically(fallback, text);
      } catch (const UsageError& f) {
        why += "; " + std::string(f.what());
        continue;
      }
      written_ = fallback;
      std::fprintf(stderr, "moebench: %s; the report is written to '%s' instead\n", e.what(),
                   fallback.c_str());
      return;
    }
    throw UsageError(why + ": the report could not be written anywhere");
  }
}

}  // namespace moe::report
