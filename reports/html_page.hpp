#pragma once
// A self-contained HTML page (inline CSS and SVG, no script, nothing fetched from a network):
// GB/s against M per shape with the read ceiling drawn in, the spread of samples per case, the
// case table and the environment. A comparison is drawn the same way, base beside head.
#include <string>

#include "reports/compare.hpp"
#include "reports/report.hpp"

namespace moe::report {

std::string render_html(const Report& report);
std::string render_html(const Comparison& comparison);

}  // namespace moe::report
