#pragma once
// The vendor peer of probe bandwidth (--peer cublas): cuBLAS's grouped GEMM over the same routed
// experts and tokens as one decode step of the engine, every layer, in the same run and under
// the same sampler (barrier, L2 flush, stopping rule). Routing is left out: each expert's token
// rows come from the engine's own routing of the same input, read once on the host and gathered
// before timing. Per layer: grouped GEMM gate_up, our SiLU-mul, grouped GEMM down (no router,
// no combine). Its output is checked against the CPU reference before it is timed.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.hpp"
#include "kernels/peer/cublas_library.hpp"
#include "probes/probe.hpp"

namespace moe {

// What the peer gives one configuration (shape, format, M) of the probe.
struct PeerFigure {
  bool measured = false;
  bool failed = false;                 // a cuBLAS call failed (not a missing library)
  std::string why_not;                 // when not measured
  std::optional<report::Check> check;  // its output against the CPU reference, when it ran
  report::Stats gpu_time;              // GPU-event time of the whole step, us
  double gbps = 0;                     // `bytes` over the median GPU time
  nlohmann::json evidence;             // the case's evidence.peer

  // Writes the figure into a case: evidence.peer always; when measured, the metrics
  // cublas_gpu_us (median GPU time of the step), cublas_gpu_us_per_layer, cublas_gbps and
  // moebench_over_cublas (`moebench_gpu_us`, the case's median step time, over cuBLAS's: below 1
  // moebench is faster); the reference check when it ran; and, when the peer was asked for by
  // name (`required`), a failed check cublas_peer_ran when a cuBLAS call failed.
  void add_to(report::CaseResult& c, double moebench_gpu_us, int layers, bool required) const;
};

class CublasPeer {
 public:
  // `cublas`: the library found for this run, or why there is none (then every figure says so).
  explicit CublasPeer(kernels::peer::CublasAvailability cublas) : cublas_(std::move(cublas)) {}

  // Times the peer over `engine`'s current input (m tokens) and the routing of its last forward. `bf16_bytes`: the step's dedup bytes as the case counts them,
  // with every expert counted in bf16 (the peer's GB/s is over these). For int4 the peer reads
  // bf16 copies of the same experts: cuBLAS has no int4 grouped GEMM.
  PeerFigure measure(ProbeState& state, Engine& engine, int m, double bf16_bytes,
                     const std::string& label);

 private:
  kernels::peer::CublasAvailability cublas_;
};

}  // namespace moe
