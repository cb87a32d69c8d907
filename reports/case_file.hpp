#pragma once
// Case files (schema "moebench.case", version 1): one reported bug as a rerunnable recipe, kept
// under fixtures/cases/ and rerun with `moebench repro FILE`. Field by field: docs/case-files.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::report {

inline constexpr int kCaseSchemaVersion = 1;
inline constexpr const char* kCaseSchemaName = "moebench.case";

struct CaseFile {
  std::string name;
  std::string description;
  std::string reproduces;  // one line on the reported failure
  std::string probe;       // checked against the probe registry by the caller
  // "run": what `moebench run` gets. Shapes are names, paths, or whole shape objects.
  std::vector<nlohmann::json> shapes;
  std::vector<int> ms;
  std::vector<std::string> weight_formats;  // bf16, int4
  std::vector<std::string> modes;           // eager, graph
  std::uint64_t seed = 1;
  std::optional<std::string> mutation;      // checked against the mutation registry by the caller
  // The engine adapter the case runs through: a library's file name, found among the adapters
  // built or installed beside moebench, or a path relative to the case file (apps' repro plan;
  // docs/case-files.md).
  std::optional<std::string> engine;
  std::optional<std::size_t> min_samples, max_samples, copy_bytes;
  std::optional<double> max_noise_pct, min_time_s, timeout_s;
  std::optional<std::string> l2;  // cold, hot
  std::optional<int> warmup;
  Verdict expected_verdict = Verdict::fail;
};

// Reads and validates a case file: malformed JSON, another schema, a newer schema version,
// unknown or missing fields and wrong types raise UsageError naming the file, the field, the
// value and the valid values.
CaseFile load_case_file(const std::string& path);
CaseFile parse_case_file(const nlohmann::json& j, const std::string& origin);

nlohmann::json to_json(const CaseFile& c);

}  // namespace moe::report
