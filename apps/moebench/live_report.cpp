#include "apps/moebench/live_report.hpp"

#include <ctime>

#include "apps/moebench/stop_signals.hpp"

namespace moe::cli {

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

LiveReport::LiveReport(report::Report& report, const report::ReportWriter& writer,
                       const report::RunEventWriter* events)
    : report_(report), writer_(writer), events_(events) {}

void LiveReport::write_locked() {
  if (stop_signal_) set_interruption_locked();
  writer_.write(report_);
}

void LiveReport::add_case(report::CaseResult c) {
  const std::lock_guard lock(mutex_);
  if (final_) return;
  report_.cases.push_back(std::move(c));
  write_locked();  // nothing measured is lost if a later case dies
  if (events_) events_->send_case(report_.cases.back());
}

void LiveReport::set_environment(const std::string& key, nlohmann::json value) {
  const std::lock_guard lock(mutex_);
  if (final_) return;
  report_.environment[key] = value;
  write_locked();
  if (events_) events_->send_environment(key, value);
}

void LiveReport::update(const std::function<void(report::Report&)>& change) {
  const std::lock_guard lock(mutex_);
  if (final_) return;
  change(report_);
  write_locked();
}

void LiveReport::start_probe(const std::string& probe) {
  const std::lock_guard lock(mutex_);
  probe_ = probe;
  probe_first_case_ = report_.cases.size();
}

void LiveReport::end_probe() {
  const std::lock_guard lock(mutex_);
  probe_.clear();
}

void LiveReport::set_planned_cases(std::size_t planned) {
  const std::lock_guard lock(mutex_);
  planned_cases_ = planned;
}

void LiveReport::set_interruption_locked() {
  nlohmann::json& inv = report_.invocation;
  inv["complete"] = false;
  inv["interrupted"] = true;
  const std::string at = inv.contains("interruption") ? inv["interruption"].value("at", now_iso8601())
                                                      : now_iso8601();
  inv["interruption"] = {
      {"signal", signal_name(stop_signal_)},
      {"signal_number", stop_signal_},
      {"exit_code", exit_code_for_signal(stop_signal_)},
      {"at", at},
      {"probe", probe_.empty() ? nlohmann::json(nullptr) : nlohmann::json(probe_)},
      {"probe_cases", probe_.empty() ? 0 : report_.cases.size() - probe_first_case_},
      {"cases", report_.cases.size()},
      {"planned_cases", planned_cases_}};
}

std::size_t LiveReport::record_interruption(int signal, bool final) {
  const std::lock_guard lock(mutex_);
  if (final_) return report_.cases.size();
  stop_signal_ = signal;
  write_locked();
  final_ = final;
  return report_.cases.size();
}

void LiveReport::record_complete() {
  const std::lock_guard lock(mutex_);
  if (final_) return;
  report_.invocation["finished_at"] = now_iso8601();
  report_.invocation["complete"] = true;
  write_locked();
  if (events_) events_->send_complete();
}

std::size_t LiveReport::case_count() const {
  const std::lock_guard lock(mutex_);
  return report_.cases.size();
}

}  // namespace moe::cli
