#pragma once
// What probe copy proves of each ceiling, from measured figures (tested on the CPU): the timed
// kernel touched every byte of a buffer at least 4x the L2 (its content check passed), the L2
// was observed cold after the sampler's flush where it was observed, and every sample's event
// time completed with a positive value.
#include <cstddef>
#include <string>

#include "reports/report.hpp"

namespace moe {

struct CopyEvidence {
  double buffer_over_l2 = 0;
  bool l2_observed_cold = false;  // true also where nothing was observed (--l2 hot: no flush)
  bool buffer_defeats_l2 = false;
  std::string buffer_detail;  // why not, when not
  std::size_t samples_timed = 0;
  bool samples_taken = false;
  std::string samples_detail;
};

CopyEvidence copy_evidence(std::size_t bytes, std::size_t l2_bytes, bool content_checked, const report::Measurement& m);

}  // namespace moe
