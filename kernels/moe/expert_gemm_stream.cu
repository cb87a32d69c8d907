// Stages 2 and 3 on the streaming expert GEMM (ForwardOptions::gemm, GemmFamily::stream; sm_90
// and newer): one block an SM, whose producer warp streams the block's equal share of the
// layer's weight bytes (stream_plan.hpp) with bulk copies (stage_ring.cuh) into a ring of
// shared-memory stages for each of 8 consumer warps, dealing the unit-passes to the warps in
// turn; each warp multiplies its stages on tensor cores as soon as they land and stores its
// own sums. The bytes in flight live in shared memory, not in the registers of the warps that
// compute, so the rings' depth does not trade against accumulators. Both formats are read in
// the family's own tiles (int4_stream_layout.hpp, bf16_stream_layout.hpp), where a stage is one
// copy.
//
// Under programmatic dependent launch, gate_up streams the shared experts' stages while the
// route still runs and the routed ones after its wait, and lets down be launched only once every
// one of its threads has waited: down's producer then knows the route is complete and streams
// all its stages (weights depend on the route, never on h) as gate_up's blocks leave their SMs;
// only down's consumers wait for gate_up.
#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/launch.cuh"
#include "kernels/moe/stream_consumer.cuh"
#include "kernels/moe/stream_producer.cuh"

namespace moe::kernels {

namespace {

using namespace stream;

// One block an SM: the rings take most of its shared memory, and the registers it leaves the
// consumer warps hold a whole stage and its activations.
template <WeightFormat F, bool kGateUp, int kChunks, int kTiles>
__global__ void __launch_bounds__(kThreads, 1) stream_expert_gemm_kernel(Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool kInt4 = F == WeightFormat::int4;
  extern __shared__ __align__(128) unsigned char smem[];
  if constexpr (!kGateUp) detail::allow_dependent_launch();  // gate_up: after its wait (run())
  Smem sm(smem, SmemLayout{stream::slot_bytes(kInt4)});
  if (threadIdx.x == 0) ring::init_slots(sm.full, sm.empty, kSlots, 1);
  __syncthreads();
  if (threadIdx.x >= 32 * kConsumerWarps) {
    Producer<kInt4, kGateUp, kChunks, kTiles>(p, sm).run();
  } else {
    Consumer<kInt4, kGateUp, kChunks, kTiles>(p, sm).run();
  }
#else
  (void)p;
  __trap();  // the host refuses the family below sm_90
#endif
}

template <WeightFormat F, bool kGateUp, int kChunks, int kTiles>
constexpr auto kKernel = stream_expert_gemm_kernel<F, kGateUp, kChunks, kTiles>;

// Lets the kernel use its largest dynamic shared memory, once per device (the call loads it).
template <WeightFormat F, bool kGateUp, int kChunks, int kTiles>
void configure_stream_kernel() {
  static bool configured[64] = {};
  int dev = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && configured[dev]) return;
  const std::size_t bytes = SmemLayout{stream::slot_bytes(F == WeightFormat::int4)}.bytes();
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kKernel<F, kGateUp, kChunks, kTiles>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
  if (dev < 64) configured[dev] = true;
}

template <WeightFormat F, bool kGateUp, int kChunks, int kTiles>
void launch_stream(const Params& p, bool programmatic, cudaStream_t stream) {
  configure_stream_kernel<F, kGateUp, kChunks, kTiles>();
  const std::size_t bytes = SmemLayout{stream::slot_bytes(F == WeightFormat::int4)}.bytes();
  detail::launch(kKernel<F, kGateUp, kChunks, kTiles>, dim3(current_device_multiprocessors()), dim3(kThreads), bytes, stream, programmatic,
                 "stream_expert_gemm_kernel", p);
}

// An expert holds at most one pair per token, so M bounds a pass: 1 or 2 chunks of 8 tokens
// (passes of 16 beyond). int4 units take two tiles where unit_tiles says (stream_plan.hpp:
// the activations' loads through L1 set the time there; H100, mixtral-8x7b M = 32, one tile a
// unit: L1 75% busy, DRAM 45%).
template <WeightFormat F, bool kGateUp>
void launch_stream_format(const Params& p, bool programmatic, cudaStream_t stream) {
  if (p.m <= 8) return launch_stream<F, kGateUp, 1, 1>(p, programmatic, stream);
  if constexpr (F == WeightFormat::int4)
    if (unit_tiles(true, p.m, p.top_k, p.experts, p.tiles) == 2)
      return launch_stream<F, kGateUp, 2, 2>(p, programmatic, stream);
  launch_stream<F, kGateUp, 2, 1>(p, programmatic, stream);
}

template <bool kGateUp>
void launch_stream_stage(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  if (current_device_sm() < 90)
    throw Error(ExitCode::probe_error, "the streaming expert GEMM (gemm=stream) needs bulk copies, sm_90 or newer; "
                                       "this device is sm_" + std::to_string(current_device_sm()));
  const MoeDims& d = a.dims;
  const bool int4 = d.format == WeightFormat::int4;
  if (int4 && a.experts.int4_layout != Int4Layout::stream_tiles)
    throw Error(ExitCode::probe_error, "gemm=stream reads int4 weights in the stream-tiles layout, not " +
                                           std::string(to_string(a.experts.int4_layout)));
  if (!int4 && a.experts.bf16_layout != Bf16Layout::stream_tiles)
    throw Error(ExitCode::probe_error, "gemm=stream reads bf16 weights in the stream-tiles layout, not " +
                                           std::string(to_string(a.experts.bf16_layout)));
  Params p{};
  void* s = a.scratch;
  p.weights = kGateUp ? a.experts.gate_up : a.experts.down;
  p.scales = kGateUp ? a.experts.gate_up_scales : a.experts.down_scales;
  p.input = kGateUp ? a.x : l.at<__nv_bfloat16>(s, l.h);
  p.k_len = kGateUp ? d.hidden : d.inter;
  p.out_rows = kGateUp ? d.inter : d.hidden;
  p.tiles = expert_tiles(kGateUp, d.hidden, d.inter);
  p.paired = kGateUp ? d.inter : 0;
  p.m = a.m;
  p.top_k = d.top_k;
  p.slots = l.slots;
  p.experts = d.experts;
  p.shared = d.shared;
  p.num_active = l.at<int>(s, l.num_active);
  p.active = l.at<int>(s, l.active_experts);
  p.offsets = l.at<int>(s, l.expert_offsets);
  p.sorted_pairs = l.at<int>(s, l.sorted_pairs);
  p.h_out = l.at<__nv_bfloat16>(s, l.h);
  p.down_out = l.at<float>(s, l.down_out);
  if (int4)
    launch_stream_format<WeightFormat::int4, kGateUp>(p, a.options.programmatic_launch, stream);
  else
    launch_stream_format<WeightFormat::bf16, kGateUp>(p, a.options.programmatic_launch, stream);
}

template <WeightFormat F>
void preload_stream_format() {
  configure_stream_kernel<F, true, 1, 1>();
  configure_stream_kernel<F, true, 2, 1>();
  configure_stream_kernel<F, false, 1, 1>();
  configure_stream_kernel<F, false, 2, 1>();
  if constexpr (F == WeightFormat::int4) {
    configure_stream_kernel<F, true, 2, 2>();
    configure_stream_kernel<F, false, 2, 2>();
  }
}

}  // namespace

void preload_stream_kernels(WeightFormat format) {
  if (current_device_sm() < 90) return;  // launch_stream_stage refuses the family there
  if (format == WeightFormat::bf16)
    preload_stream_format<WeightFormat::bf16>();
  else
    preload_stream_format<WeightFormat::int4>();
}

void enqueue_gate_up_stream(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_stream_stage<true>(a, l, stream);
}

void enqueue_down_stream(const MoeForwardArgs& a, const ScratchLayout& l, cudaStream_t stream) {
  launch_stream_stage<false>(a, l, stream);
}

}  // namespace moe::kernels
