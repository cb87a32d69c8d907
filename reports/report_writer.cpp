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

ReportWriter::ReportWriter(std::string path) : path_(std::move(path)) {}

void ReportWriter::write(const Report& report) const {
  write_file_atomically(path_, nlohmann::json(report).dump(1) + "\n");
}

}  // namespace moe::report
