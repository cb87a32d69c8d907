#pragma once
// How a probe's child process tells the run that started it what it measured, as it measures:
// one JSON object a line on a pipe, each line written whole as soon as a case is finished, so
// the parent's report holds every finished case even when the child is killed (SIGKILL, a
// crash, the OOM killer) or stopped by a signal mid-case. The lines:
//   {"case": CASE}                        a finished case, as a report's "cases" entry
//   {"environment": {"key": K, "value": V}}  environment.K of the report (the ranks of the
//                                         expert-parallel probes)
//   {"complete": true}                    the child's run reached its end
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::report {

// The child's end: writes each event as one line to `fd` (inherited from the parent; closed on
// exec from here on, so the child's own children do not hold the pipe open). Once the pipe has
// no reader (the parent died; EPIPE, with SIGPIPE ignored) events are dropped: the child is
// being stopped (child_process.hpp, stop_with_parent) and keeps its own report.
class RunEventWriter {
 public:
  explicit RunEventWriter(int fd);
  void send_case(const CaseResult& c) const;
  void send_environment(const std::string& key, const nlohmann::json& value) const;
  void send_complete() const;

 private:
  void send(const nlohmann::json& event) const;
  int fd_;
  mutable bool reader_gone_ = false;
};

// The parent's end: cuts the bytes read from the pipe into whole lines. A last line without its
// newline (the child died while writing it) is never returned: it is not a whole event.
class RunEventLines {
 public:
  std::vector<std::string> feed(std::string_view bytes);
  std::size_t pending_bytes() const { return partial_.size(); }

 private:
  std::string partial_;
};

struct RunEvent {
  enum class Kind { case_result, environment, complete };
  Kind kind = Kind::complete;
  CaseResult case_result;  // Kind::case_result
  std::string key;         // Kind::environment
  nlohmann::json value;    // Kind::environment
};

// One line as an event. A case is checked as load_report checks a report's cases
// (validate_case); `case_index` is its place among the stream's cases, for the message. Raises
// UsageError naming what is wrong: not JSON, not one of the events above, a missing or
// mistyped field, an impossible value.
RunEvent parse_run_event(std::string_view line, std::size_t case_index);

}  // namespace moe::report
