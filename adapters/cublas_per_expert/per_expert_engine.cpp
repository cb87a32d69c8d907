#include "adapters/cublas_per_expert/per_expert_engine.hpp"

#include <cuda_bf16.h>

#include <stdexcept>
#include <string>

#include "adapters/cublas_per_expert/layer_support.hpp"
#include "adapters/cublas_per_expert/per_expert_kernels.hpp"

namespace cublas_adapter {

namespace {

// cuBLAS asks for at least 32 MiB on Hopper; given once, so it never allocates in a step.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

void upload(const DeviceMemory& to, const void* from, std::size_t bytes) {
  CUBLAS_ADAPTER_CUDA(cudaMemcpy(to.data(), from, bytes, cudaMemcpyHostToDevice));
}

std::vector<const void*> entry_pointers(const DeviceMemory& base, std::size_t entry_bytes, int entries) {
  std::vector<const void*> out;
  for (int j = 0; j < entries; ++j) out.push_back(base.as<char>() + static_cast<std::size_t>(j) * entry_bytes);
  return out;
}

}  // namespace

PerExpertEngine::PerExpertEngine(const moebench_engine_desc& desc) {
  if (desc.struct_size < sizeof(moebench_engine_desc) || !desc.layer || !desc.weights || desc.layers < 1 ||
      desc.max_tokens < 1)
    throw std::invalid_argument("engine description too small, or no layer, weights, layers or tokens");
  const moebench_layer_desc& d = *desc.layer;
  if (const std::string why = layer_not_supported(d); !why.empty()) throw std::invalid_argument(why);
  hidden_ = d.hidden;
  inter_ = d.intermediate;
  experts_ = d.experts;
  shared_ = d.shared_experts;
  top_k_ = d.top_k;
  softmax_ = d.scoring == MOEBENCH_SCORING_SOFTMAX;
  renormalize_ = d.renormalize != 0;
  routed_scaling_ = d.routed_scaling;
  max_tokens_ = desc.max_tokens;

  const int total = experts_ + shared_;
  for (int l = 0; l < desc.layers; ++l) {
    const moebench_layer_weights* w = desc.weights[l];
    if (!w || w->struct_size < sizeof(moebench_layer_weights) || w->total_experts != total)
      throw std::invalid_argument("layer " + std::to_string(l) + ": weights missing, too small or not " +
                                  std::to_string(total) + " experts");
    // The layer's own table of its experts (the descriptor's arrays die with create).
    Layer layer;
    layer.router = w->router;
    layer.router_bias = w->router_bias;
    layer.gate_up_table = DeviceMemory(sizeof(void*) * total);
    layer.down_table = DeviceMemory(sizeof(void*) * total);
    upload(layer.gate_up_table, w->gate_up, sizeof(void*) * total);
    upload(layer.down_table, w->down, sizeof(void*) * total);
    layers_.push_back(std::move(layer));
  }

  const std::size_t M = static_cast<std::size_t>(max_tokens_);
  const int entries = routed_entries(max_tokens_) + shared_;
  const std::size_t gate_up_entry = M * 2 * inter_ * sizeof(float);
  const std::size_t h_entry = M * inter_ * sizeof(__nv_bfloat16);
  const std::size_t down_entry = M * hidden_ * sizeof(float);
  workspace_ = DeviceMemory(kWorkspaceBytes);
  x_ = DeviceMemory(M * hidden_ * sizeof(__nv_bfloat16));
  ids_ = DeviceMemory(M * top_k_ * sizeof(int));
  weights_ = DeviceMemory(M * top_k_ * sizeof(float));
  routed_ = DeviceMemory((experts_ + 31) / 32 * sizeof(std::uint32_t));
  entry_of_expert_ = DeviceMemory(sizeof(int) * total);
  gate_up_batch_ = DeviceMemory(sizeof(void*) * entries);
  down_batch_ = DeviceMemory(sizeof(void*) * entries);
  gate_up_out_ = DeviceMemory(gate_up_entry * entries);
  h_ = DeviceMemory(h_entry * entries);
  down_out_ = DeviceMemory(down_entry * entries);
  // The arrays of pointers that do not depend on the routing: set once.
  x_batch_ = DeviceMemory(sizeof(void*) * entries);
  gate_up_out_batch_ = DeviceMemory(sizeof(void*) * entries);
  h_batch_ = DeviceMemory(sizeof(void*) * entries);
  down_out_batch_ = DeviceMemory(sizeof(void*) * entries);
  const std::vector<const void*> x_all(static_cast<std::size_t>(entries), x_.data());
  upload(x_batch_, x_all.data(), sizeof(void*) * entries);
  upload(gate_up_out_batch_, entry_pointers(gate_up_out_, gate_up_entry, entries).data(), sizeof(void*) * entries);
  upload(h_batch_, entry_pointers(h_, h_entry, entries).data(), sizeof(void*) * entries);
  upload(down_out_batch_, entry_pointers(down_out_, down_entry, entries).data(), sizeof(void*) * entries);
  counts_ = DeviceMemory(sizeof(unsigned long long) * experts_ * layers_.size());
  CUBLAS_ADAPTER_CUDA(cudaMemset(counts_.data(), 0, counts_.bytes()));
  // cudaMemset is ordered on the legacy stream only, which the caller's non-blocking streams do
  // not wait for: done before the first forward can run.
  CUBLAS_ADAPTER_CUDA(cudaStreamSynchronize(nullptr));
}

int PerExpertEngine::routed_entries(int tokens) const {
  const long long pairs = static_cast<long long>(tokens) * top_k_;
  return static_cast<int>(pairs < experts_ ? pairs : experts_);
}

void PerExpertEngine::forward(const moebench_forward_args& args) {
  if (args.struct_size < sizeof(moebench_forward_args) || !args.input || !args.outputs)
    throw std::invalid_argument("forward arguments missing or too small");
  if (args.tokens < 1 || args.tokens > max_tokens_)
    throw std::invalid_argument(std::to_string(args.tokens) + " tokens; the engine was built for 1.." +
                                std::to_string(max_tokens_));
  const cudaStream_t stream = args.stream;
  streams_.insert(stream);
  const int M = args.tokens;
  const int routed = routed_entries(M);
  const int entries = routed + shared_;
  const std::size_t Mmax = static_cast<std::size_t>(max_tokens_);
  // The input into the engine's own buffer: the fixed pointer arrays name it.
  CUBLAS_ADAPTER_CUDA(cudaMemcpyAsync(x_.data(), args.input, static_cast<std::size_t>(M) * hidden_ * 2,
                                      cudaMemcpyDeviceToDevice, stream));
  // cublasSetStream puts the default workspace back: ours goes after it, every step.
  CUBLAS_ADAPTER_CUBLAS(cublasSetStream(cublas_.get(), stream));
  CUBLAS_ADAPTER_CUBLAS(cublasSetWorkspace(cublas_.get(), workspace_.data(), workspace_.bytes()));
  const float one = 1.0f, zero = 0.0f;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    CUBLAS_ADAPTER_CUDA(cudaMemsetAsync(routed_.data(), 0, routed_.bytes(), stream));
    RouteParams r;
    r.x = x_.as<__nv_bfloat16>();
    r.router = static_cast<const __nv_bfloat16*>(layer.router);
    r.router_bias = layer.router_bias;
    r.tokens = M;
    r.hidden = hidden_;
    r.experts = experts_;
    r.top_k = top_k_;
    r.softmax = softmax_;
    r.renormalize = renormalize_;
    r.routed_scaling = routed_scaling_;
    r.ids = ids_.as<int>();
    r.weights = weights_.as<float>();
    r.routed = routed_.as<std::uint32_t>();
    r.counts = counts_.as<unsigned long long>() + l * static_cast<std::size_t>(experts_);
    enqueue_route(r, stream);

    PlanParams p;
    p.routed = routed_.as<std::uint32_t>();
    p.gate_up = layer.gate_up_table.as<const void* const>();
    p.down = layer.down_table.as<const void* const>();
    p.experts = experts_;
    p.shared = shared_;
    p.routed_entries = routed;
    p.gate_up_batch = gate_up_batch_.as<const void*>();
    p.down_batch = down_batch_.as<const void*>();
    p.entry_of_expert = entry_of_expert_.as<int>();
    enqueue_plan(p, stream);

    // gate_up of entry j: [2I, M] = W_j [2I, H] x X^T, column-major (W row-major is [H, 2I]^T).
    CUBLAS_ADAPTER_CUBLAS(cublasGemmBatchedEx(
        cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, 2 * inter_, M, hidden_, &one, gate_up_batch_.as<const void* const>(),
        CUDA_R_16BF, hidden_, x_batch_.as<const void* const>(), CUDA_R_16BF, hidden_, &zero,
        gate_up_out_batch_.as<void* const>(), CUDA_R_32F, 2 * inter_, entries, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    enqueue_swiglu(gate_up_out_.as<float>(), h_.as<__nv_bfloat16>(), entries, M, inter_, Mmax * 2 * inter_,
                   Mmax * inter_, stream);
    // down of entry j: [H, M] = D_j [H, I] x h_j.
    CUBLAS_ADAPTER_CUBLAS(cublasGemmBatchedEx(
        cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, hidden_, M, inter_, &one, down_batch_.as<const void* const>(),
        CUDA_R_16BF, inter_, h_batch_.as<const void* const>(), CUDA_R_16BF, inter_, &zero,
        down_out_batch_.as<void* const>(), CUDA_R_32F, hidden_, entries, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));

    CombineParams c;
    c.down_out = down_out_.as<float>();
    c.stride = Mmax * hidden_;
    c.ids = ids_.as<int>();
    c.weights = weights_.as<float>();
    c.entry_of_expert = entry_of_expert_.as<int>();
    c.tokens = M;
    c.hidden = hidden_;
    c.top_k = top_k_;
    c.shared = shared_;
    c.routed_entries = routed;
    c.out = static_cast<__nv_bfloat16*>(args.outputs[l]);
    enqueue_combine(c, stream);
  }
}

void PerExpertEngine::read_route_counts(moebench_route_counts& out, cudaStream_t stream) const {
  if (out.struct_size < sizeof(moebench_route_counts) || !out.counts)
    throw std::invalid_argument("route counts struct too small or no counts array");
  if (out.layer < 0 || out.layer >= static_cast<int>(layers_.size()))
    throw std::invalid_argument("layer " + std::to_string(out.layer) + "; valid: 0.." +
                                std::to_string(layers_.size() - 1));
  if (out.experts != experts_)
    throw std::invalid_argument(std::to_string(out.experts) + " experts asked; the layer has " +
                                std::to_string(experts_));
  std::vector<unsigned long long> host(static_cast<std::size_t>(experts_));
  CUBLAS_ADAPTER_CUDA(cudaMemcpyAsync(host.data(), counts_.as<unsigned long long>() + out.layer * static_cast<std::size_t>(experts_),
                                      host.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
  CUBLAS_ADAPTER_CUDA(cudaStreamSynchronize(stream));
  for (int e = 0; e < experts_; ++e) out.counts[e] = host[static_cast<std::size_t>(e)];
  out.window = window_;
  out.flags = 0;  // 64-bit counts: never saturate; ids are in range by construction
}

bool PerExpertEngine::reset_route_counts(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUBLAS_ADAPTER_CUDA(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return false;
  CUBLAS_ADAPTER_CUDA(cudaMemsetAsync(counts_.data(), 0, counts_.bytes(), stream));
  ++window_;
  return true;
}

void PerExpertEngine::wait_for_forwards() const {
  for (cudaStream_t s : streams_) CUBLAS_ADAPTER_CUDA(cudaStreamSynchronize(s));
}

}  // namespace cublas_adapter
