#include "probes/evidence.hpp"

#include <cstdio>

#include "common/cuda_check.hpp"
#include "engine/block_ledger.hpp"

namespace moe {

bool still_pending(const CudaEvent& event) {
  const cudaError_t status = cudaEventQuery(event.handle());
  if (status == cudaErrorNotReady) return true;
  if (status != cudaSuccess) throw_cuda_error(status, "cudaEventQuery", __FILE__, __LINE__);
  return false;
}

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

std::string BlockReuse::detail() const {
  return std::to_string(reused.size()) + " of " + std::to_string(freed) +
         " freed blocks handed out again" +
         (reused.empty() ? "" : " (first " + hex(reused.front()) + ")");
}

BlockReuse freed_blocks_received(const DeviceAllocator& allocator, std::uint64_t freed_from,
                                 std::uint64_t received_from) {
  std::vector<BlockLedger::Entry> freed;
  for (const BlockLedger::Entry& e : allocator.released_since(freed_from))
    if (e.serial < received_from) freed.push_back(e);
  BlockReuse r;
  r.freed = freed.size();
  r.reused = BlockLedger::reused(freed, allocator.handed_out_since(received_from));
  return r;
}

TableReadback read_back_resident_table(const MoeLayer& layer) {
  TableReadback r;
  const kernels::ExpertTable& t = layer.last_expert_table();
  const auto& experts = layer.weights().experts();
  const std::size_t n = experts.size();
  r.present = t.gate_up != nullptr && t.down != nullptr && n > 0;
  if (!r.present) return r;
  struct Column {
    const char* name;
    const void* const* device;
    const DeviceBuffer MoeWeights::ExpertBuffers::*own;
  };
  const Column columns[] = {
      {"gate_up", t.gate_up, &MoeWeights::ExpertBuffers::gate_up},
      {"gate_up_scales", t.gate_up_scales, &MoeWeights::ExpertBuffers::gate_up_scales},
      {"down", t.down, &MoeWeights::ExpertBuffers::down},
      {"down_scales", t.down_scales, &MoeWeights::ExpertBuffers::down_scales},
  };
  std::vector<const void*> host(n);
  for (const Column& col : columns) {
    if (!col.device) continue;  // bf16: no scale tables
    MOE_CUDA_CHECK(cudaMemcpy(host.data(), col.device, n * sizeof(void*), cudaMemcpyDeviceToHost));
    for (std::size_t e = 0; e < n; ++e) {
      ++r.entries;
      const void* own = (experts[e].*col.own).data();
      if (host[e] != own) {
        if (r.first_mismatch.empty())
          r.first_mismatch = "expert " + std::to_string(e) + " " + col.name + ": table " +
                             hex(host[e]) + ", own " + hex(own);
        ++r.mismatches;
      }
    }
  }
  return r;
}

std::string sampling_flags(const report::Measurement& m) {
  std::string out;
  if (!m.stop_reason.empty() && m.stop_reason != "converged")
    out += "; sampling stopped at " + m.stop_reason + ", not converged";
  const std::string throttled = m.throttling_note();
  if (!throttled.empty()) out += "; " + throttled;
  return out;
}

}  // namespace moe
