#include "probes/sweep.hpp"

#include <filesystem>

#include "common/errors.hpp"
#include "engine/shape_library.hpp"
#include "reports/report.hpp"

namespace moe {

namespace {

template <typename T, typename F>
std::string joined(const std::vector<T>& items, F text) {
  std::string out;
  for (const T& x : items) out += (out.empty() ? "" : ",") + text(x);
  return out.empty() ? "-" : out;
}

bool same_through(const SweepPoint& a, const SweepPoint& b, SweepAxis through) {
  const bool shape = a.shape.has_value() == b.shape.has_value() &&
                     (!a.shape || (a.shape->name == b.shape->name &&
                                   a.shape->fingerprint() == b.shape->fingerprint()));
  if (!shape || through == SweepAxis::shape) return shape;
  if (a.format != b.format || through == SweepAxis::format) return a.format == b.format;
  return a.m == b.m;
}

}  // namespace

std::vector<SweepPoint> enumerate_sweep(std::string_view probe, const SweepDeclaration& sweep,
                                        const RunOptions& options, int rep) {
  std::vector<std::optional<Shape>> shapes;
  if (sweep.shapes.empty()) {
    shapes.emplace_back();
  } else if (options.user_set_shapes) {
    shapes.assign(options.shapes.begin(), options.shapes.end());
  } else {
    const auto library = shape_library(options.fixtures_dir);
    for (const std::string& name : sweep.shapes) shapes.emplace_back(resolve_shape(name, library));
  }
  std::vector<std::optional<kernels::WeightFormat>> formats;
  if (sweep.formats.empty())
    formats.emplace_back();
  else
    for (auto f : options.formats.empty() ? sweep.formats : options.formats) formats.emplace_back(f);
  if (shapes.front() && !formats.front())
    throw Error(ExitCode::probe_error, "probe " + std::string(probe) +
                                           " declares a shape axis without a format axis");
  std::vector<std::optional<int>> ms;
  if (sweep.ms.empty())
    ms.emplace_back();
  else
    for (int m : options.user_set_ms ? options.ms : sweep.ms) ms.emplace_back(m);
  const std::vector<std::string> cases = sweep.cases_for ? sweep.cases_for(options) : sweep.cases;

  std::vector<SweepPoint> points;
  for (const std::optional<Shape>& shape : shapes)
    for (const std::optional<kernels::WeightFormat>& format : formats)
      for (const std::optional<int>& m : ms)
        for (const std::string& name : cases) {
          std::vector<std::optional<std::string>> modes;
          switch (sweep.modes) {
            case ModeAxis::none: modes.emplace_back(); break;
            case ModeAxis::fixed: modes.emplace_back(sweep.fixed_mode); break;
            case ModeAxis::case_name: modes.emplace_back(name); break;
            case ModeAxis::axis:
              for (const std::string& mode :
                   options.modes.empty() ? std::vector<std::string>{"eager", "graph"} : options.modes)
                modes.emplace_back(mode);
              break;
          }
          for (const std::optional<std::string>& mode : modes) {
            SweepPoint p{std::string(probe), name, shape, format, m, mode, rep, {}};
            // The key from the case the probe will record (ProbeState::new_case, moe_case).
            report::CaseResult c;
            c.probe = p.probe;
            c.name = options.repeat > 1 ? name + "#" + std::to_string(rep) : name;
            if (shape) {
              c.shape = shape->name;
              c.shape_fingerprint = shape->fingerprint();
            }
            if (format) c.format = std::string(kernels::to_string(*format));
            c.m = m;
            c.mode = mode;
            if (options.mutation) c.mutation = std::string(info(*options.mutation).name);
            p.key = c.key();
            points.push_back(std::move(p));
          }
        }
  return points;
}

std::vector<std::span<const SweepPoint>> runs_of(std::span<const SweepPoint> points,
                                                 SweepAxis through) {
  std::vector<std::span<const SweepPoint>> runs;
  std::size_t start = 0;
  for (std::size_t i = 1; i <= points.size(); ++i)
    if (i == points.size() || !same_through(points[start], points[i], through)) {
      runs.push_back(points.subspan(start, i - start));
      start = i;
    }
  return runs;
}

const SweepPoint* find_case(std::span<const SweepPoint> points, std::string_view case_name) {
  for (const SweepPoint& p : points)
    if (p.case_name == case_name) return &p;
  return nullptr;
}

SweepDefaults describe_defaults(const SweepDeclaration& s) {
  SweepDefaults d;
  d.cases = joined(s.cases, [](const std::string& x) { return x; });
  d.shapes = joined(s.shapes, [](const std::string& x) { return x; });
  d.ms = joined(s.ms, [](int m) { return std::to_string(m); });
  d.formats = joined(s.formats, [](kernels::WeightFormat f) { return std::string(kernels::to_string(f)); });
  switch (s.modes) {
    case ModeAxis::none: d.modes = "-"; break;
    case ModeAxis::fixed: d.modes = s.fixed_mode; break;
    case ModeAxis::axis: d.modes = "eager,graph"; break;
    case ModeAxis::case_name: d.modes = "the case's name"; break;
  }
  return d;
}

}  // namespace moe
