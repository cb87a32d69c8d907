#include "probes/bandwidth/cublas_peer.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "common/cuda_check.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/reference.hpp"
#include "kernels/peer/grouped_expert_gemm.hpp"
#include "kernels/peer/silu_mul.hpp"
#include "probes/layer_check.hpp"

namespace moe {

namespace {

using kernels::peer::ExpertRows;
using kernels::peer::GroupedExpertGemm;

// One layer of the peer: its experts in row order with their gathered input rows, the plan of
// its two grouped GEMMs and that plan's pointer table on the device.
struct PeerLayer {
  std::uint64_t weight_seed = 0;
  std::vector<int> experts, rows;          // expert ids and their token rows, in row order
  std::vector<std::uint16_t> x_host;       // [R, H] bf16 bits: each expert's token rows
  std::vector<DeviceBuffer> bf16_copies;   // int4 case: bf16 gate_up and down of each expert
  DeviceBuffer x, table;
  std::unique_ptr<GroupedExpertGemm> gemm;
};

// Relative L2 bound of the peer against the reference: gate_up and h stored in bf16, fp32
// accumulation, as the engine's own kernels (probes/layer_check.hpp gives the same bound).
constexpr double kBound = 2e-2;
// Multiply-adds the CPU reference may spend on one checked layer (about half a second).
constexpr double kCheckMacs = 4e8;

// Sums the squared error and the squared reference of `layer`'s output y [R, H] over a spread
// of its experts (the last one, a shared expert where there is one, included), two rows each.
void compare_layer(const PeerLayer& layer, const kernels::MoeDims& d,
                   const std::vector<std::uint16_t>& y, double& err, double& ref, int& rows_checked) {
  const int n = static_cast<int>(layer.experts.size());
  const int affordable = static_cast<int>(kCheckMacs / (6.0 * d.hidden * d.inter));
  const int picks = std::min(n, std::clamp(affordable, 1, 8));
  std::vector<std::size_t> first(static_cast<std::size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) first[i + 1] = first[i] + static_cast<std::size_t>(layer.rows[i]);
  const std::size_t hidden = static_cast<std::size_t>(d.hidden);
  for (int p = 0; p < picks; ++p) {
    const int i = picks == 1 ? n - 1 : static_cast<int>(static_cast<long long>(p) * (n - 1) / (picks - 1));
    const int rows = std::min(layer.rows[i], 2);
    std::vector<float> x(rows * hidden), h(static_cast<std::size_t>(rows) * d.inter);
    for (std::size_t k = 0; k < x.size(); ++k)
      x[k] = kernels::bf16_bits_to_float(layer.x_host[first[i] * hidden + k]);
    std::vector<double> out(rows * hidden);
    kernels::ref::expert_gate_up(d, layer.weight_seed, layer.experts[i], x.data(), rows, h.data());
    kernels::ref::expert_down(d, layer.weight_seed, layer.experts[i], h.data(), rows, out.data());
    for (std::size_t k = 0; k < out.size(); ++k) {
      const double diff = kernels::bf16_bits_to_float(y[first[i] * hidden + k]) - out[k];
      err += diff * diff;
      ref += out[k] * out[k];
    }
    rows_checked += rows;
  }
}

// Waits for the stream before the buffers declared ahead of it are freed, on every way out.
struct DrainOnExit {
  Stream& stream;
  ~DrainOnExit() {
    try {
      stream.drain();
    } catch (...) {  // the error surfaces at the caller's next drain
    }
  }
};

}  // namespace

void PeerFigure::add_to(report::CaseResult& c, double moebench_gpu_us, int layers, bool required) const {
  c.evidence["peer"] = evidence;
  if (check) c.checks.push_back(*check);
  if (failed && required) c.checks.push_back({"cublas_peer_ran", false, why_not});
  if (!measured) return;
  c.metrics["cublas_gpu_us"] = {gpu_time.median, "us"};
  c.metrics["cublas_gpu_us_per_layer"] = {gpu_time.median / std::max(layers, 1), "us"};
  c.metrics["cublas_gbps"] = {gbps, "GB/s"};
  c.metrics["moebench_over_cublas"] = {moebench_gpu_us / gpu_time.median, "x"};
}

PeerFigure CublasPeer::measure(ProbeState& state, Engine& engine, int m, double bf16_bytes,
                               const std::string& label) {
  PeerFigure f;
  const kernels::MoeDims dims = engine.layer(0).config().dims;
  const bool int4 = dims.format == kernels::WeightFormat::int4;
  f.evidence = {{"name", "cublas"},
                {"api", "cublasGemmGroupedBatchedEx"},
                {"precision", "bf16 inputs and outputs, fp32 compute (CUBLAS_COMPUTE_32F)"},
                {"weights", int4 ? "bf16 copies of the case's routed and shared experts: cuBLAS has "
                                   "no int4 grouped GEMM, so this is a bf16 figure"
                                 : "the engine's own bf16 experts (the same buffers)"},
                {"work", "per layer: grouped GEMM gate_up, our SiLU-mul kernel (in the time), "
                         "grouped GEMM down; no router, routing or combine"},
                {"routing", "token rows per expert from the engine's routing of the same input, "
                            "read once on the host and gathered before timing"},
                {"enqueue", "eager, in every mode"},
                {"bytes", bf16_bytes},
                {"looked_for", cublas_.looked_for}};
  auto not_measured = [&](std::string why) {
    f.why_not = std::move(why);
    f.evidence["measured"] = false;
    f.evidence["why_not"] = f.why_not;
    return f;
  };
  if (!cublas_.library) return not_measured(cublas_.missing_message());
  f.evidence["library"] = cublas_.library->soname();
  f.evidence["version"] = cublas_.library->version();

  Stream& stream = engine.stream();
  kernels::MoeDims d = dims;  // the peer's experts are bf16 in every case
  d.format = kernels::WeightFormat::bf16;
  const int slots = d.top_k + d.shared;
  const std::size_t hidden = static_cast<std::size_t>(d.hidden), inter = static_cast<std::size_t>(d.inter);
  const std::size_t pairs = static_cast<std::size_t>(m) * slots;
  try {
    stream.drain();
    const std::vector<std::uint16_t> x_host = copy_to_host(engine.input(), m * hidden);
    const kernels::peer::CublasHandle handle(cublas_.library, stream.handle());
    DeviceAllocator& alloc = state.allocator();
    DeviceBuffer gate_up = alloc.allocate(pairs * 2 * inter * 2), h = alloc.allocate(pairs * inter * 2),
                 y = alloc.allocate(pairs * hidden * 2);
    std::vector<PeerLayer> layers(static_cast<std::size_t>(engine.layers()));
    const DrainOnExit drain_on_exit{stream};
    std::vector<int> groups;
    for (int l = 0; l < engine.layers(); ++l) {
      const MoeLayer& layer = engine.layer(l);
      PeerLayer& p = layers[l];
      p.weight_seed = layer.weights().seed();
      const kernels::ref::Grouping g =
          kernels::ref::group_pairs(dims, m, read_topk_ids(layer, m, stream));
      std::vector<ExpertRows> experts;
      for (int e : g.active) {
        p.experts.push_back(e);
        p.rows.push_back(g.counts[e]);
        for (int r = 0; r < g.counts[e]; ++r) {
          const std::size_t token = static_cast<std::size_t>(g.sorted_pairs[g.offsets[e] + r] / slots);
          p.x_host.insert(p.x_host.end(), x_host.begin() + token * hidden, x_host.begin() + (token + 1) * hidden);
        }
        ExpertRows er{layer.weights().tensor_pointer(e, 0), layer.weights().tensor_pointer(e, 2), g.counts[e]};
        if (int4) {
          void* w[2] = {};
          for (auto kind : {kernels::TensorKind::gate_up, kernels::TensorKind::down}) {
            DeviceBuffer& b = p.bf16_copies.emplace_back(alloc.allocate(kernels::expert_weight_bytes(d, kind)));
            kernels::generate_expert_tensor(d, kind, p.weight_seed, e, b.data(), nullptr, stream.handle());
            w[kind == kernels::TensorKind::down] = b.data();
          }
          er.gate_up = w[0];
          er.down = w[1];
        }
        experts.push_back(er);
      }
      p.x = alloc.allocate(p.x_host.size() * 2);
      MOE_CUDA_CHECK(cudaMemcpyAsync(p.x.data(), p.x_host.data(), p.x_host.size() * 2,
                                     cudaMemcpyHostToDevice, stream.handle()));
      p.gemm = std::make_unique<GroupedExpertGemm>(
          d.hidden, d.inter, experts,
          kernels::peer::ExpertActivations{p.x.as<__nv_bfloat16>(), gate_up.as<__nv_bfloat16>(),
                                           h.as<__nv_bfloat16>(), y.as<__nv_bfloat16>()});
      const auto& table = p.gemm->pointer_table();
      p.table = alloc.allocate(table.size() * sizeof(void*));
      MOE_CUDA_CHECK(cudaMemcpyAsync(p.table.data(), table.data(), table.size() * sizeof(void*),
                                     cudaMemcpyHostToDevice, stream.handle()));
      groups.push_back(p.gemm->groups());
    }
    stream.drain();
    f.evidence["groups_per_layer"] = groups;
    f.evidence["rows_per_layer"] = pairs;
    // Traffic of our SiLU-mul, in the peer's time but not in `bytes` (the engine fuses it).
    f.evidence["silu_mul_bytes"] =
        engine.layers() * kernels::peer::silu_mul_bytes(static_cast<std::int64_t>(pairs), d.inter);

    // Correct first: the first and the last layer, each alone into poisoned buffers (0xFFFF is
    // a NaN in bf16, so a row left unwritten fails the bound).
    double err = 0, ref = 0;
    int rows_checked = 0;
    for (int l : {0, engine.layers() - 1}) {
      for (const DeviceBuffer* b : {&gate_up, &h, &y})
        MOE_CUDA_CHECK(cudaMemsetAsync(b->data(), 0xFF, b->bytes(), stream.handle()));
      layers[l].gemm->enqueue(handle, layers[l].table.as<void*>());
      stream.drain();
      compare_layer(layers[l], d, copy_to_host(y.as<__nv_bfloat16>(), pairs * hidden), err, ref, rows_checked);
      if (engine.layers() == 1) break;
    }
    const double rel = std::sqrt(err / std::max(ref, 1e-300));
    const bool matched = rel <= kBound;  // false for NaN: a poisoned row left unwritten
    f.check = report::Check{"cublas_peer_matches_reference", matched,
                            "relative L2 error " + std::to_string(rel) + " (bound " + std::to_string(kBound) +
                                ") over " + std::to_string(rows_checked) +
                                " expert rows of the first and last layer"};
    if (!matched) return not_measured("its output did not match the CPU reference; not timed");

    report::Measurement meas = state.sampler().measure(stream, label, [&] {
      for (const PeerLayer& p : layers) p.gemm->enqueue(handle, p.table.as<void*>());
    });
    f.gpu_time = meas.gpu_time();
    f.gbps = bf16_bytes / (f.gpu_time.median * 1e-6) * 1e-9;
    f.measured = true;
    f.evidence["measured"] = true;
    f.evidence["gpu_time_us"] = f.gpu_time;
    f.evidence["stop_reason"] = meas.stop_reason;
    f.evidence["l2_flushes"] = meas.l2_flushes.value_or(0);
    if (const std::string note = meas.throttling_note(); !note.empty()) f.evidence["throttling"] = note;
    return f;
  } catch (const kernels::peer::CublasError& e) {
    f.failed = true;
    return not_measured(e.what());
  } catch (const EnvironmentError& e) {  // device memory: the peer's buffers did not fit
    return not_measured(std::string("not enough device memory for the peer: ") + e.what());
  }
}

}  // namespace moe
