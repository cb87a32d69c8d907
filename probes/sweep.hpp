#pragma once
// A probe's sweep declared as axes, as nvbench benchmarks declare theirs: its case names and
// the default shapes, Ms, weight formats and modes they run over. One declaration serves the
// probe (it iterates the enumerated points instead of loops of its own), the runner (--filter,
// the "case i of n" progress lines), the dry run and `moebench list`.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/shape.hpp"
#include "kernels/moe/moe_types.hpp"
#include "probes/run_options.hpp"

namespace moe {

// How a declared case gets its mode.
enum class ModeAxis {
  none,       // no mode
  fixed,      // always SweepDeclaration::fixed_mode
  axis,       // eager and graph, or those of --mode
  case_name,  // the case's own name (probe copy: read, memcpy, copy-kernel)
};

struct SweepDeclaration {
  std::vector<std::string> cases{};              // each over the whole sweep, in this order
  std::vector<std::string> shapes{};             // defaults, --shape replaces; empty: no shape axis
  std::vector<int> ms{};                         // defaults, --m replaces; empty: no M axis
  std::vector<kernels::WeightFormat> formats{};  // defaults, --weight-format replaces; empty: none
  ModeAxis modes = ModeAxis::none;
  std::string fixed_mode{};                      // with ModeAxis::fixed
  // The cases an option chooses instead of `cases` (bandwidth's step-l2-hot under --l2 hot,
  // route-telemetry's --telemetry); null: always `cases`.
  std::vector<std::string> (*cases_for)(const RunOptions&) = nullptr;
};

// One case a run makes: the value of each axis it has and the key its report case carries.
struct SweepPoint {
  std::string probe;
  std::string case_name;  // as declared; the report's name adds "#rep" under --repeat
  std::optional<Shape> shape;
  std::optional<kernels::WeightFormat> format;
  std::optional<int> m;
  std::optional<std::string> mode;
  int rep = 0;            // which repetition of the probe (--repeat)
  std::string key;        // report::CaseResult::key() of the case it records
};

// The points of `probe`'s declaration for `options` (--shape, --m, --weight-format and --mode
// over the defaults, on the axes the probe has), in the order the probe runs them: shape,
// format, M, case, mode. Every case key is the one ProbeState::new_case and moe_case give.
std::vector<SweepPoint> enumerate_sweep(std::string_view probe, const SweepDeclaration& sweep,
                                        const RunOptions& options, int rep = 0);

// The axes a point shares with its neighbours, coarsest first.
enum class SweepAxis { shape, format, m };

// `points` cut into runs of consecutive points equal on `through` and every coarser axis: the
// points of one engine (SweepAxis::format), of one input (SweepAxis::m).
std::vector<std::span<const SweepPoint>> runs_of(std::span<const SweepPoint> points,
                                                 SweepAxis through);

// The first point of `points` whose case is `case_name`; null when none is (--filter).
const SweepPoint* find_case(std::span<const SweepPoint> points, std::string_view case_name);

// The declaration's defaults in words, for `moebench list` and the dry run.
struct SweepDefaults {
  std::string cases, shapes, ms, formats, modes;
};
SweepDefaults describe_defaults(const SweepDeclaration& sweep);

}  // namespace moe
