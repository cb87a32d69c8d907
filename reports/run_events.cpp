#include "reports/run_events.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errors.hpp"
#include "reports/report_validation.hpp"

namespace moe::report {

using nlohmann::json;

RunEventWriter::RunEventWriter(int fd) : fd_(fd) {
  if (::fcntl(fd_, F_SETFD, FD_CLOEXEC) != 0)
    throw UsageError("--event-fd " + std::to_string(fd_) + " is not an open descriptor: " +
                     std::strerror(errno));
}

void RunEventWriter::send(const json& event) const {
  if (reader_gone_) return;
  const std::string line = event.dump() + "\n";  // dump() escapes newlines inside strings
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) {
      reader_gone_ = true;
      return;
    }
    if (n < 0)
      throw Error(ExitCode::probe_error,
                  std::string("cannot send a case to the parent run: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

void RunEventWriter::send_case(const CaseResult& c) const { send(json{{"case", c}}); }

void RunEventWriter::send_environment(const std::string& key, const json& value) const {
  send(json{{"environment", {{"key", key}, {"value", value}}}});
}

void RunEventWriter::send_complete() const { send(json{{"complete", true}}); }

std::vector<std::string> RunEventLines::feed(std::string_view bytes) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    partial_.append(bytes.substr(start, i - start));
    lines.push_back(std::move(partial_));
    partial_.clear();
    start = i + 1;
  }
  partial_.append(bytes.substr(start));
  return lines;
}

RunEvent parse_run_event(std::string_view line, std::size_t case_index) {
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded()) throw UsageError("a run event that is not JSON");
  if (!j.is_object() || j.size() != 1)
    throw UsageError("a run event must be one of {\"case\": ...}, {\"environment\": ...}, "
                     "{\"complete\": true}, got " + std::string(j.type_name()));
  RunEvent e;
  try {
    if (j.contains("case")) {
      e.kind = RunEvent::Kind::case_result;
      e.case_result = j.at("case").get<CaseResult>();
      validate_case(e.case_result, j.at("case"), case_index, "");
    } else if (j.contains("environment")) {
      e.kind = RunEvent::Kind::environment;
      j.at("environment").at("key").get_to(e.key);
      e.value = j.at("environment").at("value");
    } else if (j.contains("complete") && j.at("complete") == true) {
      e.kind = RunEvent::Kind::complete;
    } else {
      throw UsageError("a run event must be one of {\"case\": ...}, {\"environment\": ...}, "
                       "{\"complete\": true}, got the field \"" + j.begin().key() + "\"");
    }
  } catch (const json::exception& x) {
    throw UsageError(std::string("a run event has a missing or mistyped field: ") + x.what());
  }
  return e;
}

}  // namespace moe::report
