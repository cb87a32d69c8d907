#pragma once
// What `moebench repro FILE` reruns: a case file or a report turned into one or more RunRequests
// (one per injected mutation, since a mutation is active for a whole run) and the verdicts the
// source expects. Everything is validated here, before any device is touched.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/moebench/run_request.hpp"
#include "reports/report.hpp"

namespace moe::cli {

struct ExpectedVerdict {
  std::string key;  // a case key; for a case file, the case file's name (its overall verdict)
  report::Verdict verdict = report::Verdict::pass;
};

struct ReproPlan {
  std::string source;       // the file
  std::string source_kind;  // "case" or "report"
  nlohmann::json source_document;  // what `extra.repro` records about the source
  std::vector<RunRequest> runs;
  std::vector<std::string> run_descriptions;  // `moebench run ...` equivalents, for people
  std::vector<ExpectedVerdict> expected;
  bool compare_overall = false;  // case file: the worst verdict of the run is compared
  std::vector<std::string> warnings;  // one line each, for stderr (an adapter other than the recorded one)
};

// Shapes recorded as objects are written as shape files into `shape_dir` (which must exist and
// outlive the runs) and passed by path, so the rerun uses the recorded dimensions, not whatever
// the local library calls by that name. `engine` (--engine, may be empty) is the adapter every
// run goes through; a report that ran through one is refused without it, and a different file
// (by SHA-256) is a warning.
ReproPlan make_repro_plan(const std::string& file, const std::filesystem::path& shape_dir,
                          const std::string& fixtures, int device, const std::string& engine = "");

}  // namespace moe::cli
