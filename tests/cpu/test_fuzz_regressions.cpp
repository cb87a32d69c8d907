// Inputs the fuzzers (tests/fuzz, scripts/fuzz.sh) found crashing or escaping with an exception
// other than moe::UsageError, kept so the fixes stay fixed. Each file under
// tests/fuzz/regressions/TARGET/ is a bad input its loader must refuse with UsageError; the
// named cases below say what each finding was.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "common/errors.hpp"
#include "engine/shape.hpp"
#include "reports/case_file.hpp"
#include "reports/gbench_export.hpp"
#include "reports/html_page.hpp"
#include "reports/markdown.hpp"
#include "reports/report.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kRegressions = fs::path(MOEBENCH_TEST_DATA_DIR) / ".." / "fuzz" / "regressions";

using Loader = std::function<void(const std::string& path)>;

const Loader kShapeLoader = [](const std::string& p) { (void)moe::load_shape_file(p); };
const Loader kReportLoader = [](const std::string& p) { (void)moe::report::load_report(p); };
const Loader kCaseLoader = [](const std::string& p) { (void)moe::report::load_case_file(p); };

// The loader's message, or "" when it accepted the input. Any other exception fails the test.
std::string refusal(const Loader& load, const std::string& path) {
  try {
    load(path);
  } catch (const moe::UsageError& e) {
    return e.what();
  }
  return "";
}

std::string write_temp(const std::string& text) {
  const fs::path p = fs::temp_directory_path() /
                     ("moebench-fuzz-regression-" + std::to_string(::getpid()) + ".json");
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  return p.string();
}

void check_every_file_refused(const std::string& target, const Loader& load) {
  const fs::path dir = kRegressions / target;
  REQUIRE(fs::is_directory(dir));
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    CAPTURE(entry.path().string());
    CHECK_FALSE(refusal(load, entry.path().string()).empty());
    ++files;
  }
  CHECK(files > 0);
}

}  // namespace

TEST_CASE("every saved fuzz finding is refused with a UsageError") {
  check_every_file_refused("fuzz_shape_loader", kShapeLoader);
  check_every_file_refused("fuzz_report_loader", kReportLoader);
  check_every_file_refused("fuzz_case_loader", kCaseLoader);
}

TEST_CASE("a number too large for a double is a usage error in every loader") {
  // nlohmann::json raises out_of_range (not parse_error) for 1e400; it used to escape.
  const std::string path = write_temp(R"({"schema": "moebench.report", "schema_version": 1e400})");
  CHECK(refusal(kShapeLoader, path).find("not valid JSON") != std::string::npos);
  CHECK(refusal(kReportLoader, path).find("not valid JSON") != std::string::npos);
  CHECK(refusal(kCaseLoader, path).find("not valid JSON") != std::string::npos);
}

TEST_CASE("a Qwen2-MoE config with a zero expert width is refused, not divided by") {
  // shared_expert_intermediate_size / moe_intermediate_size was a division by zero (SIGFPE).
  const std::string path = write_temp(R"({"model_type": "qwen2_moe", "hidden_size": 2048,
    "moe_intermediate_size": 0, "num_experts": 60, "num_experts_per_tok": 4,
    "shared_expert_intermediate_size": 5632})");
  // Named by the config's own key, not moebench's "moe_inter".
  CHECK(refusal(kShapeLoader, path).find("\"moe_intermediate_size\" = 0 must be positive") !=
        std::string::npos);
}

TEST_CASE("config sizes wider than an int are refused by name, not wrapped") {
  // 4294967304 used to wrap to 8 experts and load as a valid Mixtral-like shape.
  const std::string wrapped = write_temp(R"({"model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_local_experts": 4294967304, "num_experts_per_tok": 2})");
  CHECK(refusal(kShapeLoader, wrapped) ==
        wrapped + ": field \"num_local_experts\" = 4294967304 is out of range");
  // The shared-expert width rounding overflowed int (undefined behaviour); the width is now
  // kept as it is, and refused above the kernels' limit by its own key.
  const std::string wide = write_temp(R"({"model_type": "qwen2_moe", "hidden_size": 2048,
    "moe_intermediate_size": 1408, "num_experts": 60, "num_experts_per_tok": 4,
    "shared_expert_intermediate_size": 2147483647})");
  CHECK(refusal(kShapeLoader, wide).find("\"shared_expert_intermediate_size\" = 2147483647 is "
                                         "above the limit") != std::string::npos);
}

TEST_CASE("a report's schema fields are checked before they are read") {
  // A missing schema_version escaped as json::out_of_range; a non-string schema as type_error.
  CHECK(refusal(kReportLoader, write_temp(R"({"schema": "moebench.report"})"))
            .find("\"schema_version\" must be an integer") != std::string::npos);
  CHECK(refusal(kReportLoader, write_temp(R"({"schema": 1, "schema_version": 1})"))
            .find("is not a moebench report") != std::string::npos);
  // 2^32 + 1 used to wrap to version 1 and load as a current report.
  CHECK(refusal(kReportLoader, write_temp(R"({"schema": "moebench.report",
    "schema_version": 4294967297, "tool": {}, "invocation": {}, "environment": {},
    "options": {}, "cases": []})"))
            .find("has schema version 4294967297") != std::string::npos);
  CHECK(refusal(kReportLoader, write_temp(R"({"schema": "moebench.report",
    "schema_version": 0, "tool": {}, "invocation": {}, "environment": {},
    "options": {}, "cases": []})"))
            .find("\"schema_version\" = 0 must be at least 1") != std::string::npos);
}

TEST_CASE("a folder given where a file belongs is a usage error in every loader") {
  // Found by scripts/bad-inputs.sh, not a fuzzer (the fuzzers only write files): a folder opens
  // as a stream and then failed mid-read with std::ios_base::failure, which moebench reported
  // as an internal error (exit 4).
  const std::string dir = fs::temp_directory_path().string();
  CHECK(refusal(kShapeLoader, dir).find("is a folder") != std::string::npos);
  CHECK(refusal(kReportLoader, dir).find("is a folder") != std::string::npos);
  CHECK(refusal(kCaseLoader, dir).find("is a folder") != std::string::npos);
}

TEST_CASE("a metadata field a renderer reads as a type is refused by name when mistyped") {
  // tool.git_dirty = 1 loaded, then json::type_error escaped from describe_tool in the Markdown
  // renderer (CI's fuzz_report_loader, the saved input above is that finding).
  const std::string base = R"({"schema": "moebench.report", "schema_version": 1, "tool": TOOL,
    "invocation": INVOCATION, "environment": ENVIRONMENT, "options": {}, "cases": []})";
  auto with = [&](const std::string& tool, const std::string& invocation,
                  const std::string& environment) {
    std::string text = base;
    text.replace(text.find("TOOL"), 4, tool);
    text.replace(text.find("INVOCATION"), 10, invocation);
    text.replace(text.find("ENVIRONMENT"), 11, environment);
    return write_temp(text);
  };
  CHECK(refusal(kReportLoader, with(R"({"git_dirty": 1})", "{}", "{}"))
            .find("field \"tool.git_dirty\" = 1 must be true or false") != std::string::npos);
  CHECK(refusal(kReportLoader, with("{}", R"({"started_at": 5})", "{}"))
            .find("\"invocation.started_at\" = 5 must be a string") != std::string::npos);
  CHECK(refusal(kReportLoader, with("{}", R"({"complete": "yes"})", "{}"))
            .find("\"invocation.complete\"") != std::string::npos);
  CHECK(refusal(kReportLoader, with("{}", "{}", R"({"host": {"cpu_count": 1.5}})"))
            .find("\"environment.host.cpu_count\" = 1.5 must be an integer") != std::string::npos);
  CHECK(refusal(kReportLoader, with("{}", "{}", R"({"gpu": []})"))
            .find("\"environment.gpu\" = [] must be an object") != std::string::npos);
  CHECK(refusal(kReportLoader, with("[]", "{}", "{}"))
            .find("\"tool\" = [] must be an object") != std::string::npos);
  CHECK(refusal(kReportLoader, with(R"({"git_dirty": null})", "{}", "{}")).empty());  // absent
}

TEST_CASE("fields printed as text may hold any JSON and every renderer still runs") {
  const std::string path = write_temp(R"({"schema": "moebench.report", "schema_version": 1,
    "tool": {"version": "0.1.0", "cuda_architectures": ["90a", 100], "cxx_compiler": {}},
    "invocation": {}, "environment": {"gpu": {"name": {"odd": true}, "sm_count": "many",
    "available": true}, "software": {"cuda_driver": [1]}}, "options": {"l2": 7}, "cases": []})");
  const moe::report::Report r = moe::report::load_report(path);
  const std::string md = moe::report::render_markdown(r);
  CHECK(md.find("arch [\"90a\",100]") != std::string::npos);
  CHECK(md.find("many SMs") != std::string::npos);
  CHECK_FALSE(moe::report::render_html(r).empty());
  CHECK(moe::report::to_gbench_json(r)["context"]["moebench_version"] == "0.1.0");
}
