#include "engine/moe_weights.hpp"

#include <cstdio>

#include "common/cuda_check.hpp"
#include "engine/fault_injection.hpp"
#include "engine/stream.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/weights_checksum.hpp"

namespace moe {

using kernels::TensorKind;
using kernels::WeightFormat;

MoeWeights::MoeWeights(const kernels::MoeDims& dims, std::uint64_t seed, Routing routing,
                       DeviceAllocator& allocator, Stream& stream, kernels::Int4Layout int4_layout,
                       kernels::Bf16Layout bf16_layout)
    : dims_(dims), seed_(seed), int4_layout_(int4_layout), bf16_layout_(bf16_layout), routing_(routing), allocator_(allocator), resident_(allocator) {
  router_ = allocator_.allocate(kernels::router_bytes(dims_));
  kernels::generate_router(dims_, seed_, router_.as<__nv_bfloat16>(), stream.handle());
  // Synchronous copies on purpose: the host vectors die at the end of this scope.
  auto upload = [&](const std::vector<float>& values, DeviceBuffer& to) {
    if (values.empty()) return;
    to = allocator_.allocate(values.size() * sizeof(float));
    MOE_CUDA_CHECK(cudaMemcpy(to.data(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
  };
  upload(routing_bias(routing_, dims_.experts, dims_.top_k), router_bias_);
  upload(kernels::selection_bias_host(dims_, seed_), selection_bias_);
  const bool int4 = dims_.format == WeightFormat::int4;
  experts_.resize(static_cast<std::size_t>(dims_.total_experts()));
  for (int e = 0; e < dims_.total_experts(); ++e) {
    ExpertBuffers& b = experts_[static_cast<std::size_t>(e)];
    for (TensorKind kind : {TensorKind::gate_up, TensorKind::down}) {
      DeviceBuffer& w = kind == TensorKind::gate_up ? b.gate_up : b.down;
      DeviceBuffer& s = kind == TensorKind::gate_up ? b.gate_up_scales : b.down_scales;
      w = allocator_.allocate(kernels::expert_weight_bytes(dims_, kind));
      if (int4) s = allocator_.allocate(kernels::expert_scale_bytes(dims_, kind));
      kernels::generate_expert_tensor(dims_, kind, seed_, e, w.data(), s.data(), stream.handle(), int4_layout,
                                       bf16_layout);
    }
  }
  placement_.assign(static_cast<std::size_t>(dims_.experts), Placement::device);
}

DeviceBuffer& MoeWeights::ExpertBuffers::device(int t) {
  return const_cast<DeviceBuffer&>(static_cast<const ExpertBuffers&>(*this).device(t));
}

const DeviceBuffer& MoeWeights::ExpertBuffers::device(int t) const {
  switch (t) {
    case 0: return gate_up;
    case 1: return gate_up_scales;
    case 2: return down;
    default: return down_scales;
  }
}

const void* MoeWeights::tensor_pointer(int e, int t) const {
  const ExpertBuffers& b = experts_[static_cast<std::size_t>(e)];
  const PinnedBuffer& h = b.host[static_cast<std::size_t>(t)];
  // By placement, not by which copy exists: while a transition commits, a moved tensor has both
  // (table_pointer says why that matters). Shared experts are always on the device.
  const Placement where = e < dims_.experts ? placement_[static_cast<std::size_t>(e)] : Placement::device;
  return table_pointer(where, b.device(t).data(), h ? h.device_pointer() : nullptr);
}

void MoeWeights::apply_residency(const std::vector<Placement>& target, Stream& stream, ResidencyFaultPoint fault) {
  const std::vector<ExpertMove> moves = moves_between(placement_, target);
  if (moves.empty()) return;
  auto fault_message = [&](std::size_t step, int e, int t) {
    return "residency fault injected at step " + std::to_string(step) + " (expert " + std::to_string(e) +
           ", tensor " + std::to_string(t) + ")";
  };
  if (mutation_active(Mutation::residency_no_rollback)) {
    // ---- The half-applied design, live only under Mutation::residency_no_rollback ----------
    // Each tensor moves in place, its source freed at once; a fault stops the loop where it
    // is: an expert's tensors split between device and host, the tables still pointing at the
    // freed sources.
    std::size_t step = 0;
    for (const ExpertMove& m : moves) {
      ExpertBuffers& b = experts_[static_cast<std::size_t>(m.expert)];
      for (int t = 0; t < kernels::kExpertTensors; ++t) {
        const std::size_t bytes = m.to == Placement::host ? b.device(t).bytes() : b.host[static_cast<std::size_t>(t)].bytes();
        if (bytes == 0) continue;
        if (fault.hits(++step)) throw ResidencyFault(fault_message(step, m.expert, t));
        if (m.to == Placement::host) {
          PinnedBuffer h(bytes);
          MOE_CUDA_CHECK(cudaMemcpyAsync(h.host(), b.device(t).data(), bytes, cudaMemcpyDeviceToHost, stream.handle()));
          stream.drain();
          b.host[static_cast<std::size_t>(t)] = std::move(h);
          residency_.device_bytes_released += bytes;
          b.device(t).reset();
        } else {
          DeviceBuffer d = allocator_.allocate(bytes);
          MOE_CUDA_CHECK(cudaMemcpyAsync(d.data(), b.host[static_cast<std::size_t>(t)].host(), bytes,
                                         cudaMemcpyHostToDevice, stream.handle()));
          stream.drain();
          b.device(t) = std::move(d);
          residency_.device_bytes_taken_back += bytes;
          b.host[static_cast<std::size_t>(t)].reset();
        }
        placement_[static_cast<std::size_t>(m.expert)] = m.to;
      }
    }
    resident_.rebuild(*this, stream);
    ++residency_.transitions;
    return;
  }

  // Prepare: a destination copy of every tensor that moves; sources untouched.
  struct Prepared {
    int expert = 0, tensor = 0;
    DeviceBuffer device;
    PinnedBuffer host;
  };
  std::vector<Prepared> ready;
  ready.reserve(moves.size() * kernels::kExpertTensors);  // undo actions hold indices into it
  TransitionJournal journal;
  try {
    for (const ExpertMove& m : moves) {
      ExpertBuffers& b = experts_[static_cast<std::size_t>(m.expert)];
      for (int t = 0; t < kernels::kExpertTensors; ++t) {
        const std::size_t bytes = m.to == Placement::host ? b.device(t).bytes() : b.host[static_cast<std::size_t>(t)].bytes();
        if (bytes == 0) continue;
        if (fault.hits(journal.steps() + 1)) throw ResidencyFault(fault_message(journal.steps() + 1, m.expert, t));
        Prepared p;
        p.expert = m.expert;
        p.tensor = t;
        if (m.to == Placement::host) {
          p.host = PinnedBuffer(bytes);
          MOE_CUDA_CHECK(cudaMemcpyAsync(p.host.host(), b.device(t).data(), bytes, cudaMemcpyDeviceToHost, stream.handle()));
        } else {
          p.device = allocator_.allocate(bytes);
          MOE_CUDA_CHECK(cudaMemcpyAsync(p.device.data(), b.host[static_cast<std::size_t>(t)].host(), bytes,
                                         cudaMemcpyHostToDevice, stream.handle()));
        }
        ready.push_back(std::move(p));
        const std::size_t at = ready.size() - 1;
        journal.prepared([&ready, at] {
          ready[at].device.reset();
          ready[at].host.reset();
        });
      }
    }
    stream.drain();  // every copy landed before any source goes
  } catch (...) {
    // Copies may still be writing the destinations: wait, then undo newest first.
    try {
      stream.drain();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moebench: drain before residency rollback failed: %s\n", e.what());
    }
    journal.rollback();
    ++residency_.rollbacks;
    throw;
  }
  // Commit: nothing below can fail but the table upload, after which the sources are freed.
  journal.commit();
  for (Prepared& p : ready) {
    ExpertBuffers& b = experts_[static_cast<std::size_t>(p.expert)];
    auto& host = b.host[static_cast<std::size_t>(p.tensor)];
    if (p.host) {
      residency_.device_bytes_released += b.device(p.tensor).bytes();
      host = std::move(p.host);
    } else {
      residency_.device_bytes_taken_back += p.device.bytes();
      b.device(p.tensor) = std::move(p.device);
    }
  }
  // Both copies of every moved tensor exist here: the placement, set first, is what the rebuilt
  // tables follow (tensor_pointer), so they name the new copies and none of the sources freed below.
  for (const ExpertMove& m : moves) placement_[static_cast<std::size_t>(m.expert)] = m.to;
  resident_.rebuild(*this, stream);
  stream.drain();  // the new tables are uploaded: the old pointers are no longer read
  for (const ExpertMove& m : moves) {
    ExpertBuffers& b = experts_[static_cast<std::size_t>(m.expert)];
    for (int t = 0; t < kernels::kExpertTensors; ++t) {
      if (m.to == Placement::host) b.device(t).reset();
      else b.host[static_cast<std::size_t>(t)].reset();
    }
  }
  ++residency_.transitions;
}

const kernels::ExpertTable& MoeWeights::resident_table(Stream& stream) {
  return resident_.acquire(*this, stream);
}

std::size_t MoeWeights::expert_bytes() const {
  std::size_t bytes = 0;
  for (TensorKind kind : {TensorKind::gate_up, TensorKind::down})
    bytes += kernels::expert_weight_bytes(dims_, kind) + kernels::expert_scale_bytes(dims_, kind);
  return bytes;
}

// The router's rows (with the shared gate's); noaux_tc's fp32 bias of E values is left out.
std::size_t MoeWeights::router_bytes() const { return kernels::router_bytes(dims_); }

std::size_t MoeWeights::total_bytes() const {
  return router_bytes() + expert_bytes() * static_cast<std::size_t>(dims_.total_experts());
}

}  // namespace moe
