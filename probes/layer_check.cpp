#include "probes/layer_check.hpp"

#include <cmath>
#include <sstream>

#include "common/cuda_check.hpp"
#include "engine/stream.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/reference.hpp"

namespace moe {

namespace {
constexpr double kRelL2Bound = 2e-2;
}

std::vector<std::uint16_t> copy_to_host(const __nv_bfloat16* device, std::size_t elements) {
  std::vector<std::uint16_t> host(elements);
  MOE_CUDA_CHECK(cudaMemcpy(host.data(), device, elements * sizeof(std::uint16_t),
                            cudaMemcpyDeviceToHost));
  return host;
}

std::size_t count_differences(const __nv_bfloat16* a, const std::vector<std::uint16_t>& b_host,
                              std::size_t elements) {
  const std::vector<std::uint16_t> a_host = copy_to_host(a, elements);
  std::size_t diff = 0;
  for (std::size_t i = 0; i < elements; ++i) diff += a_host[i] != b_host[i];
  return diff;
}

std::vector<int> read_topk_ids(const MoeLayer& layer, int m, Stream& stream) {
  const kernels::MoeDims& dims = layer.config().dims;
  const kernels::ScratchLayout layout = kernels::scratch_layout(dims, m);
  std::vector<int> ids(static_cast<std::size_t>(m) * dims.top_k);
  stream.drain();
  MOE_CUDA_CHECK(cudaMemcpy(ids.data(), layout.at<int>(layer.last_scratch(), layout.topk_ids),
                            ids.size() * sizeof(int), cudaMemcpyDeviceToHost));
  return ids;
}

std::set<int> touched_experts(const kernels::MoeDims& dims, const std::vector<int>& ids) {
  std::set<int> experts(ids.begin(), ids.end());
  for (int s = 0; s < dims.shared; ++s) experts.insert(dims.experts + s);
  return experts;
}

LayerCheck check_layer_output(MoeLayer& layer, const __nv_bfloat16* out, int m,
                              std::uint64_t input_seed, int max_tokens) {
  const kernels::MoeDims& dims = layer.config().dims;
  const std::uint64_t wseed = layer.config().seed;
  const int H = dims.hidden, k = dims.top_k;
  const std::vector<int> gpu_ids = read_topk_ids(layer, m, layer.stream());
  const std::vector<std::uint16_t> gpu_out =
      copy_to_host(out, static_cast<std::size_t>(m) * static_cast<std::size_t>(H));

  // Tokens to check: spread over the batch, first and last included.
  std::vector<int> tokens;
  const int n = std::min(m, max_tokens);
  for (int i = 0; i < n; ++i) tokens.push_back(n == 1 ? 0 : static_cast<int>((static_cast<long>(m - 1) * i) / (n - 1)));

  std::vector<float> bias;
  if (layer.weights().router_bias()) {
    bias.resize(static_cast<std::size_t>(dims.experts));
    MOE_CUDA_CHECK(cudaMemcpy(bias.data(), layer.weights().router_bias(),
                              bias.size() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  std::vector<float> x(static_cast<std::size_t>(n) * H);
  for (int i = 0; i < n; ++i)
    kernels::input_row_host(dims, input_seed, tokens[i], x.data() + static_cast<std::size_t>(i) * H);
  const std::vector<double> logits =
      kernels::ref::router_logits(dims, wseed, x, n, bias.empty() ? nullptr : bias.data());

  LayerCheck r;
  r.bound = kRelL2Bound;
  r.tokens_checked = n;
  std::vector<int> ids(static_cast<std::size_t>(n) * k);
  std::vector<double> weights(static_cast<std::size_t>(n) * k);
  for (int i = 0; i < n; ++i) {
    const double* lg = logits.data() + static_cast<std::size_t>(i) * dims.experts;
    int* ref_ids = ids.data() + static_cast<std::size_t>(i) * k;
    kernels::ref::route_token(dims, lg, ref_ids, weights.data() + static_cast<std::size_t>(i) * k);
    const int* g = gpu_ids.data() + static_cast<std::size_t>(tokens[i]) * k;
    if (!std::equal(g, g + k, ref_ids)) {
      // A different choice is legitimate only at a near-tie of fp32 accumulation; then the
      // reference follows the GPU's choice so the rest of the layer is still checked.
      if (kernels::ref::topk_margin(dims, lg) < 1e-3) {
        ++r.near_ties;
        std::copy(g, g + k, ref_ids);
        kernels::ref::weights_for_ids(dims, lg, ref_ids,
                                      weights.data() + static_cast<std::size_t>(i) * k);
      } else {
        ++r.routing_mismatches;
      }
    }
  }
  const std::vector<double> ref = kernels::ref::moe_layer(dims, wseed, x, n, ids, weights);
  double num = 0, den = 0;
  bool finite = true;
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < H; ++h) {
      const double got = kernels::bf16_bits_to_float(
          gpu_out[static_cast<std::size_t>(tokens[i]) * H + h]);
      const double want = ref[static_cast<std::size_t>(i) * H + h];
      finite = finite && std::isfinite(got);
      num += (got - want) * (got - want);
      den += want * want;
    }
  r.rel_l2 = std::sqrt(num / std::max(den, 1e-300));
  if (!finite) r.rel_l2 = INFINITY;
  r.passed = finite && r.routing_mismatches == 0 && r.rel_l2 < r.bound;
  std::ostringstream d;
  d << n << " of " << m << " tokens vs CPU reference: rel L2 error " << r.rel_l2 << " (bound "
    << r.bound << "), " << r.routing_mismatches << " routing mismatches, " << r.near_ties
    << " near-ties";
  r.detail = d.str();
  return r;
}

}  // namespace moe
