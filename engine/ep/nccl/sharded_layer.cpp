#include "engine/ep/nccl/sharded_layer.hpp"

#include <cstring>

#include "common/cuda_check.hpp"
#include "engine/ep/dispatch_plan.hpp"
#include "engine/ep/map_handshake.hpp"
#include "engine/fault_injection.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/forward.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/generate.hpp"

namespace moe::ep {

namespace {

// Every kernel a step can launch, loaded before the first step (ForwardOptions::preload_kernels:
// a first launch may otherwise wait for the work in flight, the exchange's included).
void preload_step_kernels(const kernels::MoeDims& d, const kernels::ForwardOptions& options) {
  kernels::preload_forward_kernels(d, options, kernels::Int4Layout::rows);  // the route, and the grouped path's GEMMs (bf16)
  kernels::ep::preload_pack_dispatch_kernels();
  kernels::ep::preload_expert_rows_kernels();
  if (options.ep_compute == kernels::EpCompute::grouped) kernels::ep::preload_grouped_rows_kernels();
  kernels::ep::preload_combine_returned_kernel();
}

template <class T>
DeviceBuffer upload(DeviceAllocator& alloc, const std::vector<T>& host, cudaStream_t stream) {
  DeviceBuffer b = alloc.allocate(sizeof(T) * std::max<std::size_t>(host.size(), 1));
  MOE_CUDA_CHECK(cudaMemcpyAsync(b.data(), host.data(), sizeof(T) * host.size(),
                                 cudaMemcpyHostToDevice, stream));
  return b;
}

}  // namespace

ShardedLayer::ShardedLayer(const ShardedLayerConfig& config, const ExpertMap& map,
                           Communicator& comm, Rendezvous& rendezvous, DeviceAllocator& allocator,
                           cudaStream_t stream)
    : config_(config), map_(map), comm_(comm), allocator_(allocator), stream_(stream),
      wire_(make_wire_layout(config.dims.hidden, config.dims.top_k, comm.world(),
                             config.capacity > 0 ? config.capacity : config.m)) {
  const kernels::MoeDims& d = config_.dims;
  if (d.format != kernels::WeightFormat::bf16)
    throw UsageError("expert-parallel layer: only bf16 weights are supported");
  if (map.ranks() != comm.world() || map.experts() != d.experts)
    throw UsageError("expert-parallel layer: the map (" + map.describe() + ") does not fit " +
                     std::to_string(comm.world()) + " ranks and " + std::to_string(d.experts) +
                     " experts");
  // Before any memory is committed: ranks that disagree would compute other experts' rows.
  if (!config_.skip_map_handshake) agree_on_expert_map(rendezvous, map);
  if (config_.options.preload_kernels) preload_step_kernels(d, config_.options);

  router_ = allocator_.allocate(kernels::router_bytes(d));
  kernels::generate_router(d, config_.seed, router_.as<__nv_bfloat16>(), stream_);
  auto make_bank = [&](const std::vector<int>& experts, DeviceBuffer& gu_table, DeviceBuffer& dn_table) {
    std::vector<const void*> gu, dn;
    for (int e : experts) {
      DeviceBuffer g = allocator_.allocate(kernels::expert_weight_bytes(d, kernels::TensorKind::gate_up));
      DeviceBuffer w = allocator_.allocate(kernels::expert_weight_bytes(d, kernels::TensorKind::down));
      kernels::generate_expert_tensor(d, kernels::TensorKind::gate_up, config_.seed, e, g.data(), nullptr, stream_);
      kernels::generate_expert_tensor(d, kernels::TensorKind::down, config_.seed, e, w.data(), nullptr, stream_);
      gu.push_back(g.data());
      dn.push_back(w.data());
      weights_.push_back(std::move(g));
      weights_.push_back(std::move(w));
    }
    gu_table = upload(allocator_, gu, stream_);
    dn_table = upload(allocator_, dn, stream_);
  };
  make_bank(map_.experts_of(comm.rank()), gate_up_table_, down_table_);
  std::vector<int> shared;
  for (int s = 0; s < d.shared; ++s) shared.push_back(d.experts + s);
  make_bank(shared, shared_gate_up_table_, shared_down_table_);
  std::vector<int> local(d.experts);
  for (int e = 0; e < d.experts; ++e) local[e] = map_.local_index(e);
  owner_ = upload(allocator_, map_.owners(), stream_);
  local_index_ = upload(allocator_, local, stream_);

  const int m = config_.m;
  scratch_bytes_ = kernels::forward_scratch_bytes(d, m);
  scratch_ = allocator_.allocate(scratch_bytes_);
  x_ = allocator_.allocate(kernels::input_bytes(d, m));
  out_ = allocator_.allocate(kernels::input_bytes(d, m));
  shared_out_ = allocator_.allocate(sizeof(float) * m * d.hidden);
  row_of_ = allocator_.allocate(sizeof(int) * m * comm.world());
  status_ = allocator_.allocate(sizeof(unsigned));
  previous_counts_ = allocator_.allocate(sizeof(int) * comm.world());
  const bool lsa = config_.exchange == ExchangeKind::lsa;
  send_ = allocator_.allocate(wire_.dispatch_bytes());
  if (!lsa) recv_blocks_ = allocator_.allocate(wire_.dispatch_bytes());
  combine_send_ = allocator_.allocate(wire_.combine_bytes());
  if (!lsa) combine_recv_blocks_ = allocator_.allocate(wire_.combine_bytes());
  if (lsa) {
    // Collective, like the handshake: the receive buffers are the window every rank registers
    // (cleared by it).
    lsa_ = std::make_unique<LsaExchange>(comm_, wire_, stream_);
    recv_ = {lsa_->dispatch_recv()};
    combine_recv_ = {lsa_->combine_recv()};
  } else {
    recv_ = {recv_blocks_.as<unsigned char>()};
    combine_recv_ = {combine_recv_blocks_.as<unsigned char>()};
  }
  // Zeroed once: headers of blocks nobody writes stay valid (count 0) and stale bytes are 0.
  for (DeviceBuffer* b : {&send_, &recv_blocks_, &combine_send_, &combine_recv_blocks_, &status_, &previous_counts_})
    if (*b) MOE_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->bytes(), stream_));
  if (config_.options.ep_compute == kernels::EpCompute::grouped) {
    grouped_ = allocator_.allocate(kernels::ep::grouped_rows_layout(d, wire_.geometry(), local_experts()).total);
    // The batch's rows of places without a record are never written; a GEMM's padded lanes may
    // read one (their results unused): zeros, never uninitialised memory.
    MOE_CUDA_CHECK(cudaMemsetAsync(grouped_.data(), 0, grouped_.bytes(), stream_));
  }
  for (cudaEvent_t& e : events_) MOE_CUDA_CHECK(cudaEventCreate(&e));
  comm_.wait(stream_, "building the sharded layer");
}

ShardedLayer::~ShardedLayer() {
  // Never waits: a layer dropped with a step in flight (its exchange still writing the receive
  // buffers on this and the peer ranks) hands every buffer back stream-ordered, so none is
  // handed to another owner before the step's completion is known (probe ep-drop-inflight).
  // Receive buffers last: the allocator hands the most recently freed block out first.
  std::vector<DeviceBuffer> buffers = std::move(weights_);
  DeviceBuffer* owned[] = {&router_, &gate_up_table_, &down_table_, &shared_gate_up_table_,
                           &shared_down_table_, &owner_, &local_index_, &scratch_, &x_, &out_,
                           &shared_out_, &row_of_, &status_, &grouped_, &previous_counts_, &send_,
                           &combine_send_, &recv_blocks_, &combine_recv_blocks_};
  if (mutation_active(Mutation::ep_free_recv_early)) {
    // The bug: the receive buffers go back at once, while the exchange may still write them.
    recv_blocks_.reset();
    combine_recv_blocks_.reset();
  }
  for (DeviceBuffer* b : owned)
    if (*b) buffers.push_back(std::move(*b));
  allocator_.release_after(std::move(buffers), stream_);
  for (cudaEvent_t e : events_)
    if (e) cudaEventDestroy(e);  // released by CUDA once their pending records complete
}

void ShardedLayer::generate_input(int first_token) {
  // generate_input fills rows 0..m-1 of a stream; this rank's rows start at first_token.
  const kernels::MoeDims& d = config_.dims;
  std::vector<std::uint16_t> host(static_cast<std::size_t>(config_.m) * d.hidden);
  std::vector<float> row(d.hidden);
  for (int t = 0; t < config_.m; ++t) {
    kernels::input_row_host(d, config_.seed, first_token + t, row.data());
    for (int h = 0; h < d.hidden; ++h)
      host[static_cast<std::size_t>(t) * d.hidden + h] = kernels::float_to_bf16_bits(row[h]);
  }
  MOE_CUDA_CHECK(cudaMemcpyAsync(x_.data(), host.data(), host.size() * 2, cudaMemcpyHostToDevice, stream_));
  comm_.wait(stream_, "uploading the input");
}

void ShardedLayer::set_input(const std::vector<float>& rows) {
  const std::size_t n = static_cast<std::size_t>(config_.m) * config_.dims.hidden;
  if (rows.size() != n)
    throw UsageError("sharded layer: " + std::to_string(rows.size()) + " input values, the layer holds " +
                     std::to_string(n) + " (" + std::to_string(config_.m) + " tokens of " +
                     std::to_string(config_.dims.hidden) + ")");
  std::vector<std::uint16_t> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = kernels::float_to_bf16_bits(rows[i]);
  MOE_CUDA_CHECK(cudaMemcpyAsync(x_.data(), host.data(), host.size() * 2, cudaMemcpyHostToDevice, stream_));
  comm_.wait(stream_, "uploading the input");
}

void ShardedLayer::enqueue_step(bool timed, int active) {
  const kernels::MoeDims& d = config_.dims;
  if (active < 0 || active > config_.m)
    throw UsageError("sharded layer: " + std::to_string(active) + " active tokens, the layer holds " +
                     std::to_string(config_.m));
  const int n = active > 0 ? active : config_.m;
  const kernels::ep::WireGeometry g = wire_.geometry();
  auto mark = [&](int i) {
    if (timed) MOE_CUDA_CHECK(cudaEventRecord(events_[i], stream_));
  };
  mark(0);
  kernels::MoeForwardArgs route;
  route.dims = d;
  route.m = n;
  route.x = x_.as<__nv_bfloat16>();
  route.out = out_.as<__nv_bfloat16>();
  route.router = router_.as<__nv_bfloat16>();
  route.experts.gate_up = gate_up_table_.as<const void* const>();
  route.experts.down = down_table_.as<const void* const>();
  route.scratch = scratch_.data();
  route.scratch_bytes = scratch_bytes_;
  route.options = config_.options;
  const kernels::ScratchLayout layout = kernels::scratch_layout(d, n);  // fits: n <= m
  kernels::enqueue_route(route, layout, stream_);
  mark(1);

  kernels::ep::PackArgs pack;
  pack.wire = g;
  pack.m = n;
  pack.experts = d.experts;
  pack.topk_ids = layout.at<int>(scratch_.data(), layout.topk_ids);
  pack.topk_weights = layout.at<float>(scratch_.data(), layout.topk_weights);
  pack.owner = owner_.as<int>();
  pack.local_index = local_index_.as<int>();
  pack.x = x_.as<__nv_bfloat16>();
  pack.send = send_.as<unsigned char>();
  pack.row_of = row_of_.as<int>();
  pack.status = status_.as<unsigned>();
  kernels::ep::enqueue_pack_dispatch(pack, stream_);
  if (lsa_)
    lsa_->enqueue_dispatch(send_.data());
  else
    enqueue_exchange(comm_, config_.exchange, send_.data(), recv_.data(), wire_.dispatch_block_bytes(), stream_);
  mark(2);

  const bool reuse_counts = mutation_active(Mutation::ep_reuse_counts);
  const int* stale_counts = reuse_counts ? previous_counts_.as<int>() : nullptr;
  if (config_.options.ep_compute == kernels::EpCompute::grouped) {
    kernels::ep::GroupedRowsArgs rows;
    rows.wire = g;
    rows.dims = d;
    rows.local_experts = local_experts();
    rows.experts.gate_up = gate_up_table_.as<const void* const>();
    rows.experts.down = down_table_.as<const void* const>();
    rows.options = config_.options;
    rows.recv = recv_.as<unsigned char>();
    rows.combine_send = combine_send_.as<unsigned char>();
    rows.status = status_.as<unsigned>();
    rows.stale_counts = stale_counts;
    rows.scratch = grouped_.data();
    rows.scratch_bytes = grouped_.bytes();
    kernels::ep::enqueue_grouped_rows(rows, stream_);
  } else {
    kernels::ep::ExpertRowsArgs rows;
    rows.wire = g;
    rows.dims = d;
    rows.local_experts = local_experts();
    rows.gate_up = gate_up_table_.as<const void* const>();
    rows.down = down_table_.as<const void* const>();
    rows.recv = recv_.as<unsigned char>();
    rows.combine_send = combine_send_.as<unsigned char>();
    rows.status = status_.as<unsigned>();
    rows.stale_counts = stale_counts;
    kernels::ep::enqueue_expert_rows(rows, stream_);
  }
  if (reuse_counts)  // the bug: remember this step's counts for the next one
    MOE_CUDA_CHECK(cudaMemcpy2DAsync(previous_counts_.data(), sizeof(int), recv_.data(),
                                     wire_.dispatch_block_bytes(), sizeof(int), wire_.ranks,
                                     cudaMemcpyDeviceToDevice, stream_));
  kernels::ep::SharedRowsArgs shared;
  shared.dims = d;
  shared.m = n;
  shared.x = x_.as<__nv_bfloat16>();
  shared.gate_up = shared_gate_up_table_.as<const void* const>();
  shared.down = shared_down_table_.as<const void* const>();
  shared.out = shared_out_.as<float>();
  kernels::ep::enqueue_shared_rows(shared, stream_);
  mark(3);

  if (lsa_)
    lsa_->enqueue_combine(combine_send_.data());
  else
    enqueue_exchange(comm_, config_.exchange, combine_send_.data(), combine_recv_.data(),
                     wire_.combine_block_bytes(), stream_);
  kernels::ep::CombineArgs combine;
  combine.wire = g;
  combine.m = n;
  combine.row_of = row_of_.as<int>();
  combine.combine_recv = combine_recv_.as<unsigned char>();
  combine.shared = d.shared > 0 ? shared_out_.as<float>() : nullptr;
  combine.out = out_.as<__nv_bfloat16>();
  kernels::ep::enqueue_combine_returned(combine, stream_);
  mark(4);
}

StepTimes ShardedLayer::finish(const std::string& what) {
  comm_.wait(stream_, what);
  if (lsa_) lsa_->raise_if_failed();  // a barrier that gave up leaves the stream idle
  unsigned status = 0;
  MOE_CUDA_CHECK(cudaMemcpy(&status, status_.data(), sizeof status, cudaMemcpyDeviceToHost));
  if (status & kernels::ep::kCapacityOverflow)
    throw CapacityOverflow("dispatch: rank " + std::to_string(comm_.rank()) +
                           " routed more rows to a destination than its capacity of " +
                           std::to_string(wire_.capacity) + " rows (raise the capacity to the "
                           "tokens per rank)");
  if (status & (kernels::ep::kBadCount | kernels::ep::kBadExpert))
    throw Error(ExitCode::check_failed, "rank " + std::to_string(comm_.rank()) +
                                            ": a received block had an impossible count or expert (status " +
                                            std::to_string(status) + ")");
  StepTimes t;
  float* parts[] = {&t.route_us, &t.dispatch_us, &t.compute_us, &t.combine_us};
  for (int i = 0; i < 4; ++i) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, events_[i], events_[i + 1]) == cudaSuccess) *parts[i] = ms * 1000.0f;
  }
  cudaGetLastError();  // an untimed step leaves the events unrecorded
  return t;
}

namespace {
std::vector<float> bf16_to_host(const DeviceBuffer& b, std::size_t n) {
  std::vector<std::uint16_t> raw(n);
  MOE_CUDA_CHECK(cudaMemcpy(raw.data(), b.data(), n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = kernels::bf16_bits_to_float(raw[i]);
  return out;
}
}  // namespace

std::vector<float> ShardedLayer::output_host() {
  return bf16_to_host(out_, static_cast<std::size_t>(config_.m) * config_.dims.hidden);
}
std::vector<float> ShardedLayer::input_host() {
  return bf16_to_host(x_, static_cast<std::size_t>(config_.m) * config_.dims.hidden);
}

std::vector<unsigned char> ShardedLayer::dispatch_sent_host() {
  std::vector<unsigned char> host(wire_.dispatch_bytes());
  MOE_CUDA_CHECK(cudaMemcpy(host.data(), send_.data(), host.size(), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<unsigned char> ShardedLayer::dispatch_received_host() {
  std::vector<unsigned char> host(wire_.dispatch_bytes());
  MOE_CUDA_CHECK(cudaMemcpy(host.data(), recv_.data(), host.size(), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<const void*> ShardedLayer::receive_buffers() const {
  return {recv_.data(), combine_recv_.data()};
}

std::size_t ShardedLayer::wire_bytes_sent() {
  std::vector<int> counts(wire_.ranks);
  for (int d = 0; d < wire_.ranks; ++d)
    MOE_CUDA_CHECK(cudaMemcpy(&counts[d], send_.as<unsigned char>() + wire_.dispatch_block_bytes() * d,
                              sizeof(int), cudaMemcpyDeviceToHost));
  std::size_t bytes = 0;
  for (int c : counts)
    bytes += 2 * WireLayout::kHeaderBytes + c * (wire_.dispatch_row_bytes() + wire_.combine_row_bytes());
  return bytes;
}

}  // namespace moe::ep
