#pragma once
// The visual key every plot of a page shares: one colour a weight format (the same format is the
// same colour in every plot and on every page), eager dashed and graph solid, floors dotted.
#include <string>

#include "reports/svg_plot.hpp"

namespace moe::report {

// bf16 and int4 have fixed colours; another format gets one of the rest of the palette by its
// name; no format (a copy case): grey.
std::string format_color(const std::string& format);

// eager: dashed; graph (and any other mode): solid.
LineStyle mode_style(const std::string& mode);

// The colour of things that belong to no format (a legend's style entries, a replay's host time).
inline constexpr const char* kNeutralColor = "#6b7280";

}  // namespace moe::report
