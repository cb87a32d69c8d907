#include "probes/copy/copy_evidence.hpp"

#include <algorithm>
#include <cmath>

#include "probes/measure/l2_observation.hpp"

namespace moe {

CopyEvidence copy_evidence(std::size_t bytes, std::size_t l2_bytes, bool content_checked, const report::Measurement& m) {
  CopyEvidence e;
  e.buffer_over_l2 = static_cast<double>(bytes) / static_cast<double>(std::max<std::size_t>(l2_bytes, 1));
  // The stream is 4x the L2 or more; the flush before it only sets where it starts, so a flush
  // observed warm fails the proof, and no observation (no flush asked) leaves it to the size.
  e.l2_observed_cold = !m.l2_observed || measure::observed_cold(*m.l2_observed);
  e.buffer_defeats_l2 = content_checked && e.buffer_over_l2 >= 4.0 && e.l2_observed_cold;
  if (!content_checked)
    e.buffer_detail = "the timed kernel's content check failed: not every byte of the buffer was shown touched";
  else if (e.buffer_over_l2 < 4.0)
    e.buffer_detail = "the buffer is " + std::to_string(e.buffer_over_l2) + "x the L2, below 4x";
  else if (!e.l2_observed_cold)
    e.buffer_detail = "the L2 was not observed cold after the flush: " + measure::describe(*m.l2_observed);
  for (double us : m.gpu_time_us) e.samples_timed += std::isfinite(us) && us > 0 ? 1 : 0;
  e.samples_taken = !m.gpu_time_us.empty() && e.samples_timed == m.gpu_time_us.size();
  e.samples_detail = m.gpu_time_us.empty() ? "no sample was taken"
                                           : std::to_string(m.gpu_time_us.size() - e.samples_timed) + " of " +
                                                 std::to_string(m.gpu_time_us.size()) +
                                                 " samples have no positive event time";
  return e;
}

}  // namespace moe
