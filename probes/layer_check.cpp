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

double reference_macs_per_token(const kernels::MoeDims& dims) {
  return 3.0 * dims.hidden * dims.inter * (dims.top_k + dims.shared) +
         static_cast<double>(dims.experts) * dims.hidden;
}

int affordable_tokens(const kernels::MoeDims& dims, int m, int floor) {
  constexpr double kBudgetMacs = 2e8;
  const double per_token = reference_macs_per_token(dims);
  const int affordable = static_cast<int>(std::min<double>(m, kBudgetMacs / std::max(per_token, 1.0)));
  return std::min(m, std::max(floor, affordable));
}

LayerReference LayerReference::of(const MoeLayer& layer) { return of(layer.weights()); }

LayerReference LayerReference::of(const MoeWeights& weights) {
  LayerReference r;
  r.dims = weights.dims();
  r.weight_seed = weights.seed();
  if (const float* bias = weights.router_bias()) {
    r.router_bias.resize(static_cast<std::size_t>(r.dims.experts));
    MOE_CUDA_CHECK(cudaMemcpy(r.router_bias.data(), bias, r.router_bias.size() * sizeof(float),
                              cudaMemcpyDeviceToHost));
  }
  return r;
}

LayerCheck check_layer_output(MoeLayer& layer, const __nv_bfloat16* out, int m,
                              std::uint64_t input_seed, int max_tokens) {
  const std::vector<int> gpu_ids = read_topk_ids(layer, m, layer.stream());
  return check_output(
      LayerReference::of(layer),
      copy_to_host(out, static_cast<std::size_t>(m) * static_cast<std::size_t>(layer.config().dims.hidden)),
      m, input_seed, &gpu_ids, max_tokens);
}

LayerCheck check_output(const LayerReference& layer, const std::vector<std::uint16_t>& gpu_out,
                        int m, std::uint64_t input_seed, const std::vector<int>* gpu_ids,
                        int max_tokens) {
  const kernels::MoeDims& dims = layer.dims;
  const int H = dims.hidden, k = dims.top_k;

  // Tokens to check: spread over the batch, first and last included.
  std::vector<int> candidates;
  const int n_max = std::min(m, max_tokens);
  for (int i = 0; i < n_max; ++i)
    candidates.push_back(n_max == 1 ? 0 : static_cast<int>((static_cast<long>(m - 1) * i) / (n_max - 1)));
  std::vector<float> x_all(static_cast<std::size_t>(n_max) * H);
  for (int i = 0; i < n_max; ++i)
    kernels::input_row_host(dims, input_seed, candidates[i], x_all.data() + static_cast<std::size_t>(i) * H);
  const std::vector<double> logits = kernels::ref::router_logits(
      dims, layer.weight_seed, x_all, n_max,
      layer.router_bias.empty() ? nullptr : layer.router_bias.data());

  // noaux_tc's correction bias: the generator's, as the layer's weights hold it.
  const std::vector<float> selection_bias = kernels::selection_bias_host(dims, layer.weight_seed);
  const float* sel = selection_bias.empty() ? nullptr : selection_bias.data();

  LayerCheck r;
  r.bound = kRelL2Bound;
  std::vector<int> tokens, ids;
  std::vector<float> x;
  std::vector<double> weights;
  for (int i = 0; i < n_max; ++i) {
    const double* lg = logits.data() + static_cast<std::size_t>(i) * dims.experts;
    std::vector<int> ref_ids(static_cast<std::size_t>(k));
    std::vector<double> w(static_cast<std::size_t>(k));
    kernels::ref::route_token(dims, lg, ref_ids.data(), w.data(), sel);
    const bool near_tie = kernels::ref::topk_margin(dims, lg, sel) < 1e-3;
    if (gpu_ids) {
      const int* g = gpu_ids->data() + static_cast<std::size_t>(candidates[i]) * k;
      if (!std::equal(g, g + k, ref_ids.begin())) {
        // A different choice is legitimate only at a near-tie of fp32 accumulation; then the
        // reference follows the GPU's choice so the rest of the layer is still checked.
        if (near_tie) {
          ++r.near_ties;
          std::copy(g, g + k, ref_ids.begin());
          kernels::ref::weights_for_ids(dims, lg, ref_ids.data(), w.data());
        } else {
          ++r.routing_mismatches;
        }
      }
    } else if (near_tie) {
      ++r.near_ties;  // the GPU's choice is unknown: leave this token out
      continue;
    }
    tokens.push_back(candidates[i]);
    ids.insert(ids.end(), ref_ids.begin(), ref_ids.end());
    weights.insert(weights.end(), w.begin(), w.end());
    x.insert(x.end(), x_all.begin() + static_cast<std::ptrdiff_t>(i) * H,
             x_all.begin() + static_cast<std::ptrdiff_t>(i + 1) * H);
  }
  const int n = static_cast<int>(tokens.size());
  r.tokens_checked = n;
  const std::vector<double> ref = kernels::ref::moe_layer(dims, layer.weight_seed, x, n, ids, weights);
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
  r.rel_l2 = n == 0 ? 0 : std::sqrt(num / std::max(den, 1e-300));
  if (!finite) r.rel_l2 = INFINITY;
  r.passed = n > 0 && finite && r.routing_mismatches == 0 && r.rel_l2 < r.bound;
  std::ostringstream d;
  d << n << " of " << m << " tokens vs CPU reference: rel L2 error " << r.rel_l2 << " (bound "
    << r.bound << "), " << r.routing_mismatches << " routing mismatches, " << r.near_ties
    << " near-ties";
  r.detail = d.str();
  return r;
}

}  // namespace moe
