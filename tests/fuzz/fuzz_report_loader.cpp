// libFuzzer target: reports (reports/report.cpp), as `moebench compare`, `render` and `repro`
// read them, followed by what those commands do with an accepted report: render it in every
// format and compare it with itself. A bad input must end in moe::UsageError; a crash, a
// sanitizer report or any other exception escaping is a finding.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "reports/compare.hpp"
#include "reports/comparison_table.hpp"
#include "reports/gbench_export.hpp"
#include "reports/html_page.hpp"
#include "reports/markdown.hpp"
#include "reports/report.hpp"
#include "reports/table.hpp"
#include "tests/fuzz/fuzz_input_file.hpp"

namespace report = moe::report;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = moe::fuzz::write_input_file(data, size);
  try {
    const report::Report r = report::load_report(path);
    (void)report::render_table(r);
    (void)report::render_markdown(r);
    (void)report::render_html(r);
    (void)report::to_gbench_json(r).dump();
    (void)nlohmann::json(r).dump();
    const report::Comparison c = report::compare_reports(r, r, report::CompareOptions{});
    (void)report::render_comparison_table(c);
    (void)report::render_markdown(c);
    (void)report::render_html(c);
    (void)report::to_json(c).dump();
  } catch (const moe::UsageError&) {
  }
  return 0;
}
