// A layer's FLOPs (probes/bandwidth/step_flops.hpp) against a multiply-add count of its loops,
// and the roofline bound: the bytes' time at the read ceiling or the FLOPs' at the compute
// ceiling, whichever is longer.
#include <doctest/doctest.h>

#include "probes/bandwidth/step_flops.hpp"

namespace {

// Two FLOPs a multiply-add, counted the way the forward's loops run.
double counted_flops(const moe::kernels::MoeDims& d, int m) {
  double macs = 0;
  for (int t = 0; t < m; ++t) {
    for (int e = 0; e < d.experts; ++e) macs += d.hidden;  // router logit
    for (int slot = 0; slot < d.top_k + d.shared; ++slot) {
      for (int r = 0; r < 2 * d.inter; ++r) macs += d.hidden;  // gate and up rows
      for (int r = 0; r < d.hidden; ++r) macs += d.inter;      // down rows
    }
  }
  return 2 * macs;
}

}  // namespace

TEST_CASE("layer FLOPs are the router's and every pair's gate_up and down, two a multiply-add") {
  moe::kernels::MoeDims d;
  d.hidden = 96;
  d.inter = 40;
  d.experts = 7;
  d.top_k = 3;
  for (int shared : {0, 2})
    for (int m : {1, 5, 64}) {
      d.shared = shared;
      CAPTURE(shared);
      CAPTURE(m);
      CHECK(moe::layer_flops(d, m) == counted_flops(d, m));
    }
  // mixtral-8x7b at one token: 2 pairs of 3 x 4096 x 14336 MACs, and the router.
  moe::kernels::MoeDims mixtral;
  mixtral.hidden = 4096;
  mixtral.inter = 14336;
  mixtral.experts = 8;
  mixtral.top_k = 2;
  CHECK(moe::layer_flops(mixtral, 1) == doctest::Approx(2.0 * (2 * 3.0 * 4096 * 14336 + 8 * 4096)));
}

TEST_CASE("the roofline bound is the longer of the bytes' and the FLOPs' time") {
  // 4.8 GB at 4800 GB/s: 1 ms; 1e12 FLOP at 1000 TFLOP/s: 1 ms.
  CHECK(moe::roofline_seconds(4.8e9, 4800, 1e9, 1000) == doctest::Approx(1e-3));    // decode: the bytes
  CHECK(moe::roofline_seconds(4.8e6, 4800, 1e12, 1000) == doctest::Approx(1e-3));   // prefill: the FLOPs
  CHECK(moe::roofline_seconds(4.8e9, 4800, 2e12, 1000) == doctest::Approx(2e-3));
}
