#pragma once
// What probes use to prove a hazard was forced and a path was reached (issue "a verdict is
// earned"): each answer comes from the device or the allocator, never from what the probe
// meant to happen.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/cuda_event.hpp"
#include "engine/device_allocator.hpp"
#include "engine/moe_layer.hpp"
#include "reports/report.hpp"

namespace moe {

// Whether the work recorded before `event` is still pending now (cudaEventQuery answers
// cudaErrorNotReady). Taken just before a destroy, free or regrow, it proves that work was in
// flight at that moment. Any other error belongs to the stream and is raised.
bool still_pending(const CudaEvent& event);

std::string hex(const void* p);

// The blocks released between two allocator marks that a request after `received_from`
// received again (address equality, from the allocator's ledger).
struct BlockReuse {
  std::size_t freed = 0;                 // blocks released in [freed_from, received_from)
  std::vector<const void*> reused;       // of those, the ones handed out since received_from
  std::string detail() const;
};
BlockReuse freed_blocks_received(const DeviceAllocator& allocator, std::uint64_t freed_from,
                                 std::uint64_t received_from);

// The resident table a layer's last forward handed the kernels, read back from the device and
// compared with the layer's own expert buffers: the fast path ran on its own experts only if
// every entry matches.
struct TableReadback {
  bool present = false;         // a table was handed to the kernels (a forward ran)
  std::size_t entries = 0;      // pointers read back
  std::size_t mismatches = 0;   // entries that are not this layer's own expert pointer
  std::string first_mismatch;   // "expert 3 gate_up: table 0x.. own 0x.." or ""
  bool matches() const { return present && entries > 0 && mismatches == 0; }
};
TableReadback read_back_resident_table(const MoeLayer& layer);

// "; sampling stopped at max_samples, not converged; 3 of 40 samples ran with the clocks
// throttled", or "" when the measurement converged unthrottled: appended to a verdict's reason.
std::string sampling_flags(const report::Measurement& m);

}  // namespace moe
