#pragma once
// Which stage of the MoE forward a kernel belongs to, from the name CUPTI records for it, so a
// probe can attribute kernel time to route, gate_up, down and combine. The stage is read from
// the kernel's own name and, for the expert GEMMs (one template for both projections), from
// its kGateUp template argument; the GPU test of the stages probe checks that every kernel of
// a forward maps to a stage, so a renamed kernel cannot silently fall into `other`.
#include <string>
#include <string_view>

namespace moe::kernels {

enum class Stage { route, gate_up, down, combine, other };
inline constexpr Stage kStages[] = {Stage::route, Stage::gate_up, Stage::down, Stage::combine,
                                    Stage::other};

std::string_view to_string(Stage s);

// `name`: mangled (as CUPTI gives it) or already demangled.
Stage stage_of_kernel(std::string_view name);

// The kernel's name without namespaces and parameters ("decode_expert_gemm_kernel<...>"), for
// evidence a reader can match against the source.
std::string short_kernel_name(std::string_view name);

}  // namespace moe::kernels
