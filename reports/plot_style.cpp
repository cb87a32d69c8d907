#include "reports/plot_style.hpp"

#include <cstdint>

namespace moe::report {

std::string format_color(const std::string& format) {
  if (format.empty()) return kNeutralColor;
  if (format == "bf16") return series_color(0);
  if (format == "int4") return series_color(1);
  // Other formats: a stable pick from the colours after the two fixed ones (never grey).
  constexpr std::size_t kFixed = 2, kOthers = 5;
  std::uint32_t h = 2166136261u;  // FNV-1a: the same colour on every build and machine
  for (unsigned char ch : format) h = (h ^ ch) * 16777619u;
  return series_color(kFixed + h % kOthers);
}

LineStyle mode_style(const std::string& mode) { return mode == "eager" ? LineStyle::dashed : LineStyle::solid; }

}  // namespace moe::report
