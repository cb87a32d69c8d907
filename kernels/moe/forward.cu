#include "kernels/moe/forward.hpp"

#include <limits>
#include <string>

#include "common/cuda_check.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/launch.cuh"

namespace moe::kernels {

namespace {

constexpr std::size_t kAlign = 256;
constexpr int kMaxExperts = 512;  // route kernel keeps 16 logits per lane
constexpr int kMaxTopK = 32;

std::size_t align_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

[[noreturn]] void bad(const std::string& what) {
  throw Error(ExitCode::probe_error, "enqueue_moe_forward: " + what);
}

}  // namespace

ScratchLayout scratch_layout(const MoeDims& d, int m) {
  ScratchLayout l;
  l.m = m;
  l.top_k = d.top_k;
  l.slots = d.top_k + d.shared;
  l.total_experts = d.total_experts();
  l.pairs = m * l.slots;
  l.max_tiles = (l.pairs + kTensorCoreTileRows - 1) / kTensorCoreTileRows + l.total_experts;
  l.bit_words = (m + 31) / 32;
  const std::size_t et = static_cast<std::size_t>(l.total_experts);
  std::size_t off = 0;
  auto take = [&](std::size_t bytes) {
    const std::size_t at = off;
    off = align_up(off + bytes);
    return at;
  };
  l.logits = take(sizeof(float) * m * d.experts);
  l.topk_ids = take(sizeof(int) * m * d.top_k);
  l.topk_weights = take(sizeof(float) * m * d.top_k);
  l.expert_counts = take(sizeof(int) * et);
  l.expert_offsets = take(sizeof(int) * (et + 1));
  l.num_active = take(sizeof(int));
  l.active_experts = take(sizeof(int) * et);
  l.num_tiles = take(sizeof(int));
  l.tiles = take(sizeof(int) * 2 * l.max_tiles);
  l.sorted_pairs = take(sizeof(int) * l.pairs);
  l.pair_position = take(sizeof(int) * l.pairs);
  l.membership = take(sizeof(std::uint32_t) * et * l.bit_words);
  l.membership_prefix = take(sizeof(int) * et * l.bit_words);
  l.route_tiles = (m + 7) / 8;
  l.done_counters = take(sizeof(std::uint32_t) * (1 + l.route_tiles));
  l.shared_gate = take(d.shared_gate ? sizeof(float) * m : 0);
  l.x_pairs = take(d.scale_input ? sizeof(std::uint16_t) * static_cast<std::size_t>(l.pairs) * d.hidden : 0);
  l.h = take(sizeof(std::uint16_t) * static_cast<std::size_t>(l.pairs) * d.inter);
  l.down_out = take(sizeof(float) * static_cast<std::size_t>(l.pairs) * d.hidden);
  l.total = off;
  return l;
}

std::size_t forward_scratch_bytes(const MoeDims& dims, int m) { return scratch_layout(dims, m).total; }

void validate_forward_args(const MoeForwardArgs& a) {
  const MoeDims& d = a.dims;
  if (d.hidden <= 0 || d.hidden % 32 != 0)
    bad("hidden " + std::to_string(d.hidden) + " must be a positive multiple of 32");
  if (d.inter <= 0 || d.inter % 32 != 0)
    bad("inter " + std::to_string(d.inter) + " must be a positive multiple of 32");
  if (d.experts <= 0 || d.experts > kMaxExperts)
    bad("experts " + std::to_string(d.experts) + " must be in [1, " + std::to_string(kMaxExperts) + "]");
  if (d.shared < 0 || d.shared > kMaxExperts)
    bad("shared " + std::to_string(d.shared) + " must be in [0, " + std::to_string(kMaxExperts) + "]");
  if (d.top_k <= 0 || d.top_k > d.experts || d.top_k > kMaxTopK)
    bad("top_k " + std::to_string(d.top_k) + " must be in [1, min(experts " +
        std::to_string(d.experts) + ", " + std::to_string(kMaxTopK) + ")]");
  if (d.routed_scaling <= 0 || !(d.routed_scaling < 1e30f))
    bad("routed_scaling " + std::to_string(d.routed_scaling) + " must be positive and finite");
  if (d.shared_gate && d.shared <= 0) bad("a shared gate needs shared experts");
  if (d.scale_input && d.top_k != 1) bad("scale_input needs top_k 1, got " + std::to_string(d.top_k));
  if (d.selection_bias() && !a.selection_bias) bad("noaux_tc needs selection_bias");
  if (a.m <= 0) bad("m " + std::to_string(a.m) + " must be >= 1");
  if (static_cast<long long>(a.m) * (d.top_k + d.shared) > (1LL << 30))
    bad("m " + std::to_string(a.m) + " too large");
  if (!a.x) bad("x is null");
  if (!a.out) bad("out is null");
  if (!a.router) bad("router is null");
  if (!a.experts.gate_up || !a.experts.down) bad("expert table gate_up/down is null");
  if (d.format == WeightFormat::int4 && (!a.experts.gate_up_scales || !a.experts.down_scales))
    bad("int4 format needs gate_up_scales and down_scales tables");
  if (const std::string m = weight_layout_mismatch(d, a.experts, a.options); !m.empty()) bad(m);
  if (!a.scratch) bad("scratch is null");
  const std::size_t need = forward_scratch_bytes(d, a.m);
  if (a.scratch_bytes < need)
    bad("scratch of " + std::to_string(a.scratch_bytes) + " bytes is too small: m " +
        std::to_string(a.m) + " needs " + std::to_string(need) + " bytes");
  if (reinterpret_cast<std::uintptr_t>(a.scratch) % kAlign != 0) bad("scratch must be 256-byte aligned");
  if (reinterpret_cast<std::uintptr_t>(a.x) % 16 != 0 || reinterpret_cast<std::uintptr_t>(a.out) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(a.router) % 16 != 0)
    bad("x, out and router must be 16-byte aligned");
}

std::string weight_layout_mismatch(const MoeDims& dims, const ExpertTable& experts, const ForwardOptions& options) {
  const bool int4 = dims.format == WeightFormat::int4;
  // Only automatic's own layouts depend on the device: the host-only checks run without one.
  const bool tiled = int4 ? experts.int4_layout != Int4Layout::rows : experts.bf16_layout != Bf16Layout::rows;
  const int sm = options.gemm == GemmFamily::automatic && tiled ? current_device_sm() : 0;
  const std::string_view have = int4 ? to_string(experts.int4_layout) : to_string(experts.bf16_layout);
  const std::string_view read =
      int4 ? to_string(int4_layout(options, dims, sm)) : to_string(bf16_layout(options, dims, sm));
  if (int4 ? reads_int4_layout(options, dims, sm, experts.int4_layout)
           : reads_bf16_layout(options, dims, sm, experts.bf16_layout))
    return {};
  return std::string(to_string(dims.format)) + " weights in the " + std::string(have) +
         " layout, but these options (gemm=" + to_string(options.gemm) + ", tiles=" + to_string(options.tiles) +
         ", stream-" + std::string(to_string(dims.format)) + "=" +
         ((int4 ? options.stream_int4 : options.stream_bf16) ? "on" : "off") + ") read the " + std::string(read) +
         (options.gemm == GemmFamily::automatic && read != "rows" ? " or rows" : "") + " layout here";
}

bool int4_decode_on_tensor_cores(int m, Int4Decode int4_decode) {
  if (current_device_sm() < 80) return false;  // mma.sync with bf16 operands
  switch (int4_decode) {
    case Int4Decode::simt: return false;
    case Int4Decode::tensor_cores: return true;
    case Int4Decode::automatic: break;
  }
  return m >= 2;
}

namespace detail {
bool programmatic_launch_supported() { return current_device_sm() >= 90; }
}  // namespace detail

int current_device_sm() {
  static int cached[64] = {};
  int dev = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && cached[dev]) return cached[dev];
  int major = 0, minor = 0;
  MOE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  MOE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  const int sm = major * 10 + minor;
  if (dev < 64) cached[dev] = sm;
  return sm;
}

int current_device_multiprocessors() {
  static int cached[64] = {};
  int dev = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && cached[dev]) return cached[dev];
  int sms = 0;
  MOE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  if (dev < 64) cached[dev] = sms;
  return sms;
}

ForwardPath resolve_forward_path(const MoeForwardArgs& a) {
  if (a.dims.scale_input && current_device_sm() < 80)
    bad("a routed expert input scaled by its weight (Llama-4) runs on the tensor-core path only, "
        "which needs sm_80; this device is sm_" + std::to_string(current_device_sm()));
  return takes_decode_path(a.path, a.options, a.dims, a.m, current_device_sm()) ? ForwardPath::decode
                                                                                 : ForwardPath::tensor_core;
}

bool runs_mma_gemm(const MoeForwardArgs& a) {
  return runs_mma_gemm(a.options, a.dims, a.experts.layouts(), a.m, current_device_sm());
}

bool runs_stream_gemm(const MoeForwardArgs& a) { return runs_stream_gemm(a.options, a.dims, a.experts.layouts(), a.m); }

void preload_forward_kernels(const MoeDims& dims, const ForwardOptions& options, WeightLayouts layouts) {
  preload_route_kernels();
  const ExpertGemmFamilies families = expert_gemm_families(options, dims, layouts, current_device_sm());
  if (families.mma) preload_mma_kernels(dims.format, layouts.int4);
  if (families.stream) preload_stream_kernels(dims.format);
  if (families.decode) preload_decode_kernels(dims.format);
  if (families.tiles) {
    // The wgmma tiles from some M on (automatic: kWgmmaAutoMinTokens), the wmma tiles below.
    if (wgmma_tiles_run(dims, options, layouts, std::numeric_limits<int>::max())) preload_wgmma_kernels(dims, layouts);
    if (!wgmma_tiles_run(dims, options, layouts, 1)) preload_tensor_core_kernels(dims.format);
  }
  preload_combine_kernels();
}

void enqueue_moe_forward(const MoeForwardArgs& args, cudaStream_t stream) {
  validate_forward_args(args);
  const ScratchLayout layout = scratch_layout(args.dims, args.m);
  const ForwardPath path = resolve_forward_path(args);
  // The mma and stream families read x by token, and under them int4 codes sit in the fragment
  // layout, which the tensor-core gate_up (the one reader of scaled inputs) cannot read: refuse,
  // never guess.
  if ((args.options.gemm == GemmFamily::mma || args.options.gemm == GemmFamily::stream) && args.dims.scale_input)
    bad("gemm=" + std::string(to_string(args.options.gemm)) +
        " does not read a routed expert's scaled input (Llama-4); use gemm=auto");
  enqueue_route(args, layout, stream);
  const ExpertGemmKernels kernels = enqueue_expert_gemms(args, layout, path, stream);
  enqueue_combine(args, layout, down_rows_in_bf16(args.options, kernels), stream);
}

ExpertGemmKernels enqueue_expert_gemms(const MoeForwardArgs& args, const ScratchLayout& layout, ForwardPath path,
                                       cudaStream_t stream) {
  const ExpertGemmKernels kernels = expert_gemm_kernels(args.options, args.dims, args.experts.layouts(), args.m,
                                                        current_device_sm(), path == ForwardPath::decode);
  switch (kernels) {
    case ExpertGemmKernels::stream:
      enqueue_gate_up_stream(args, layout, stream);
      enqueue_down_stream(args, layout, stream);
      break;
    case ExpertGemmKernels::mma:
      enqueue_gate_up_mma(args, layout, stream);
      enqueue_down_mma(args, layout, stream);
      break;
    case ExpertGemmKernels::decode:
      enqueue_gate_up_decode(args, layout, stream);
      enqueue_down_decode(args, layout, stream);
      break;
    case ExpertGemmKernels::wgmma_tiles:
      enqueue_gate_up_wgmma(args, layout, stream);
      enqueue_down_wgmma(args, layout, stream);
      break;
    case ExpertGemmKernels::wmma_tiles:
      enqueue_gate_up_tensor_core(args, layout, stream);
      enqueue_down_tensor_core(args, layout, stream);
      break;
  }
  return kernels;
}

}  // namespace moe::kernels
