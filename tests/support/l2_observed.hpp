#pragma once
// A sampler's observation of its L2 flushes, fabricated for the CPU tests of the rules that judge
// it (probes/measure/l2_observation.hpp): `evicted` of the canary's 32 lines in the median (and
// least) observed sample, `unfinished` flushes still running when their sample began.
#include <cstddef>

#include "reports/report.hpp"

namespace moe::test {

inline report::L2Observed l2_observed(double evicted, std::size_t unfinished = 0) {
  report::L2Observed o;
  o.samples_observed = 5;
  o.observe_every = 4;
  o.lines = 32;
  o.evicted_fraction_median = o.evicted_fraction_min = evicted;
  o.cold_load_cycles_median = 600;
  o.hot_load_cycles_median = 280;
  o.flushes_unfinished = unfinished;
  return o;
}

}  // namespace moe::test
