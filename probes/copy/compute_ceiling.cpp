#include "probes/copy/compute_ceiling.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/cuda_check.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/generator.hpp"
#include "kernels/peer/cublas_handle.hpp"

namespace moe {

namespace {

// Seeds of the two operands (generate_input's counter stream: a value is a function of its
// index, so the host reference regenerates any element).
constexpr std::uint64_t kSeedA = 0xC0FFEE01, kSeedB = 0xC0FFEE02;
constexpr int kSampledOutputs = 64;

// Element i of an operand as generate_input fills it.
float operand(std::uint64_t seed, std::size_t i) {
  return kernels::bf16_bits_to_float(
      kernels::generated_bf16_bits(kernels::stream_key(seed, kernels::TensorKind::input, 0), i, 1.0f));
}

}  // namespace

std::optional<ComputeCeiling> measure_compute_ceiling(ProbeState& state, std::string& why, int n) {
  const kernels::peer::CublasAvailability cublas = kernels::peer::find_cublas();
  if (!cublas.library) {
    why = cublas.missing_message();
    return std::nullopt;
  }
  Stream stream;
  const std::size_t elems = static_cast<std::size_t>(n) * n;
  DeviceBuffer a = state.allocator().allocate(elems * 2), b = state.allocator().allocate(elems * 2),
               c = state.allocator().allocate(elems * 2);
  // A [n, n] row major is the weights, B the tokens, as an expert GEMM's: C[t][r] = sum_k A[r][k] B[t][k].
  kernels::MoeDims square;
  square.hidden = n;
  kernels::generate_input(square, n, kSeedA, a.as<__nv_bfloat16>(), stream.handle());
  kernels::generate_input(square, n, kSeedB, b.as<__nv_bfloat16>(), stream.handle());
  const kernels::peer::CublasHandle handle(cublas.library, stream.handle());
  const kernels::peer::CublasLibrary& lib = *cublas.library;
  const float one = 1.0f, zero = 0.0f;
  // Column major: A is [K, n] (lda K), used transposed; B [K, n]; C [n rows, n tokens].
  auto gemm = [&] {
    MOE_CUBLAS_CALL(lib, cublasGemmEx, handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a.data(), CUDA_R_16BF, n,
                    b.data(), CUDA_R_16BF, n, &zero, c.data(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  ComputeCeiling cc;
  cc.n = n;
  cc.library = lib.soname() + " " + lib.version();
  cc.measurement = state.sampler().measure(stream, "compute/bf16-gemm", gemm);
  // Checked after timing (the last sample's output): sampled outputs against float64.
  std::vector<std::uint16_t> out(elems);
  MOE_CUDA_CHECK(cudaMemcpy(out.data(), c.data(), elems * 2, cudaMemcpyDeviceToHost));
  int bad = 0;
  double worst = 0;
  for (int s = 0; s < kSampledOutputs; ++s) {
    const std::size_t r = (static_cast<std::size_t>(s) * 7919) % n, t = (static_cast<std::size_t>(s) * 104729) % n;
    double want = 0, mag = 0;
    for (int k = 0; k < n; ++k) {
      const double p = static_cast<double>(operand(kSeedA, r * n + k)) * operand(kSeedB, t * n + k);
      want += p;
      mag += std::abs(p);
    }
    const double got = kernels::bf16_bits_to_float(out[t * n + r]);
    // bf16 output rounding plus fp32 accumulation over n terms.
    const double bound = std::abs(want) * 0x1p-8 + mag * 1e-6 + 1e-6;
    worst = std::max(worst, std::abs(got - want) / bound);
    bad += !(std::abs(got - want) <= bound);
  }
  cc.check = {"compute_ceiling_gemm_matches_reference", bad == 0,
              std::to_string(kSampledOutputs - bad) + " of " + std::to_string(kSampledOutputs) +
                  " sampled outputs within bf16 rounding of the float64 product (worst " + std::to_string(worst) +
                  " of the bound)"};
  cc.tflops = 2.0 * n * static_cast<double>(n) * n / (cc.measurement.gpu_time().median * 1e-6) * 1e-12;
  return cc;
}

}  // namespace moe
