#pragma once
// The timed half of a bandwidth case, shared by moebench's engine and an engine adapter's
// (bandwidth_probe.cpp, bandwidth_through_adapter.cpp): one step sampled, its bytes and FLOPs
// turned into GB/s, TFLOP/s, percent of the read and compute ceilings and of the roofline, the
// L2 defeat checked, the case concluded. The caller has checked the step's output against the
// reference first.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "probes/copy/compute_ceiling.hpp"
#include "probes/copy/read_ceiling.hpp"
#include "probes/probe.hpp"

namespace moe {

// Bytes one decode step must move: each distinct expert once per layer (dedup, from the
// engine's own routing, so the same tie-break), or once per (token, slot) (no dedup); plus the
// router, the input read and the output written by each layer.
struct StepBytes {
  double dedup = 0;
  double no_dedup = 0;
  double dedup_bf16 = 0;  // dedup with every expert counted in bf16: the cuBLAS peer's bytes
  std::vector<int> experts_touched;  // per layer
};

// The ceilings a case is judged against, both measured in the run: the read ceiling, and the
// dense bf16 tensor-core rate for the roofline column (absent, with why, where cuBLAS does not
// load or its GEMM fails its check: the cases then carry no compute figures).
struct StepCeilings {
  ReadCeiling read;
  std::optional<ComputeCeiling> compute;
  std::string compute_why;
};
StepCeilings measure_step_ceilings(ProbeState& state);

struct TimedStep {
  Stream& stream;
  std::function<void()> enqueue;
  std::string label;  // the NVTX range
  const StepBytes& bytes;
  double flops = 0;   // of the whole step
  int layers = 1;
  bool layers_reduced = false;
  const StepCeilings& ceilings;
  // Called with the median GPU time in us once the figures are in, before the checks (the peer's
  // figure goes there).
  std::function<void(report::CaseResult&, double)> beside;
};

void time_step(ProbeState& state, report::CaseResult& c, const TimedStep& step);

}  // namespace moe
