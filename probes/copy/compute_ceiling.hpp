#pragma once
// The device's dense bf16 tensor-core rate in this run, beside its read ceiling
// (read_ceiling.hpp): one large square GEMM (bf16 in, fp32 accumulation, bf16 out) through
// cuBLAS, checked on sampled outputs against a float64 reference before it is trusted. A
// prefill figure is a percent of it as a decode figure is of the read ceiling.
#include <optional>
#include <string>

#include "probes/probe.hpp"

namespace moe {

struct ComputeCeiling {
  double tflops = 0;
  int n = 0;             // the GEMM's M = N = K
  std::string library;   // "libcublas.so.13 13.1.0"
  report::Measurement measurement;
  report::Check check;   // sampled outputs against the float64 reference
};

// Null when cuBLAS does not load; `why` then says what was looked for.
std::optional<ComputeCeiling> measure_compute_ceiling(ProbeState& state, std::string& why, int n = 8192);

}  // namespace moe
