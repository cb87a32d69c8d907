#pragma once
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

#include "reports/report.hpp"
#include "reports/report_writer.hpp"
#include "reports/run_events.hpp"

namespace moe::cli {

// The report of a run in progress, shared by the thread that measures and the one that ends the
// run on a stop signal (ExitOnStopSignal): every change is made under one lock and written at
// once, whole, to the report file, and in a probe's child process also sent to the parent run
// (report::RunEventWriter), so no finished case is lost whatever ends the process.
class LiveReport {
 public:
  LiveReport(report::Report& report, const report::ReportWriter& writer,
             const report::RunEventWriter* events = nullptr);

  void add_case(report::CaseResult c);
  void set_environment(const std::string& key, nlohmann::json value);
  // Any other change (invocation fields), then the file written.
  void update(const std::function<void(report::Report&)>& change);

  // Where the run is, for an interruption's record: the probe now running (its cases are those
  // added from here on) and the cases the run's declared sweeps planned.
  void start_probe(const std::string& probe);
  void end_probe();
  void set_planned_cases(std::size_t planned);

  // invocation.interrupted and invocation.interruption (reports/SCHEMA.md): which signal, when,
  // in which probe and after how many cases; then the file written. From here every write
  // keeps the counts true (the parent run still adds the cases its child sends before it ends).
  // `final`: the process is about to end, and the report takes no further change, so the file
  // stays as recorded. Returns the cases in the report.
  std::size_t record_interruption(int signal, bool final = false);
  // invocation.complete and finished_at, written, and the parent told the run reached its end.
  void record_complete();

  std::size_t case_count() const;
  const std::string& path() const { return writer_.path(); }

 private:
  void write_locked();
  void set_interruption_locked();

  mutable std::mutex mutex_;
  report::Report& report_;
  const report::ReportWriter& writer_;
  const report::RunEventWriter* events_;
  std::string probe_;                 // empty between probes
  std::size_t probe_first_case_ = 0;  // cases before the running probe's first
  std::size_t planned_cases_ = 0;
  int stop_signal_ = 0;  // the signal recorded by record_interruption; 0: none
  bool final_ = false;   // record_interruption(final): no change is made any more
};

// UTC now as ISO 8601 ("2026-12-02T18:01:15Z"), as the report's times are written.
std::string now_iso8601();

}  // namespace moe::cli
