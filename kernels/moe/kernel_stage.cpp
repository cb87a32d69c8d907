#include "kernels/moe/kernel_stage.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace moe::kernels {

namespace {

std::string demangled(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(std::string(name).c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

// "void ns::(anonymous namespace)::kernel<a, b>(Params)" -> "kernel<a, b>": from after the
// last "::" outside brackets before the template or parameter list, up to that list's end.
std::string without_scope(const std::string& full) {
  std::size_t open = std::string::npos;
  int depth = 0;
  // The name ends where its own '<' or '(' opens at depth 0; "(anonymous namespace)" is a
  // scope, recognised by the "::" right after its ')'.
  for (std::size_t i = 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '(' && full.compare(i, 21, "(anonymous namespace)") == 0) {
      i += 20;
      continue;
    }
    if (depth == 0 && (c == '<' || c == '(')) {
      open = i;
      break;
    }
  }
  const std::string head = full.substr(0, open);
  std::size_t start = head.rfind("::");
  start = start == std::string::npos ? head.rfind(' ') : start + 1;
  start = start == std::string::npos ? 0 : start + 1;
  if (open == std::string::npos) return full.substr(start);
  if (full[open] == '(') return full.substr(start, open - start);
  // Keep the template arguments: up to the matching '>'.
  std::size_t end = open;
  for (depth = 0; end < full.size(); ++end) {
    if (full[end] == '<') ++depth;
    if (full[end] == '>' && --depth == 0) break;
  }
  return full.substr(start, end + 1 - start);
}

// The top-level template arguments of "kernel<a, b, c>".
std::vector<std::string> template_args(const std::string& name) {
  std::vector<std::string> args;
  const std::size_t open = name.find('<');
  if (open == std::string::npos) return args;
  int depth = 0;
  std::string cur;
  for (std::size_t i = open + 1; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') {
      if (depth == 0) break;
      --depth;
    }
    if (c == ',' && depth == 0) {
      args.push_back(cur);
      cur.clear();
      continue;
    }
    if (c != ' ' || !cur.empty()) cur += c;
  }
  args.push_back(cur);
  return args;
}

}  // namespace

std::string_view to_string(Stage s) {
  switch (s) {
    case Stage::route: return "route";
    case Stage::gate_up: return "gate_up";
    case Stage::down: return "down";
    case Stage::combine: return "combine";
    case Stage::other: break;
  }
  return "other";
}

std::string short_kernel_name(std::string_view name) { return without_scope(demangled(name)); }

Stage stage_of_kernel(std::string_view name) {
  const std::string k = short_kernel_name(name);
  const std::string base = k.substr(0, k.find('<'));
  if (base == "route_kernel" || base == "route_cluster_kernel" || base == "route_group_words_kernel" ||
      base == "route_group_pairs_kernel")
    return Stage::route;
  if (base == "combine_kernel") return Stage::combine;
  // The expert GEMMs: which template argument is kGateUp (template <WeightFormat F, bool
  // kGateUp, ...>; the wgmma tiles <WeightFormat F, int kBN, bool kGateUp, Int4Layout L, Bf16Layout LB>).
  std::size_t gate_up_arg = 0;
  if (base == "decode_expert_gemm_kernel" || base == "tc_expert_gemm_kernel" || base == "mma_expert_gemm_kernel" ||
      base == "stream_expert_gemm_kernel")
    gate_up_arg = 1;
  if (base == "wgmma_expert_gemm_kernel") gate_up_arg = 2;
  if (gate_up_arg == 0) return Stage::other;
  const std::vector<std::string> args = template_args(k);
  if (args.size() > gate_up_arg && args[gate_up_arg] == "true") return Stage::gate_up;
  if (args.size() > gate_up_arg && args[gate_up_arg] == "false") return Stage::down;
  return Stage::other;
}

}  // namespace moe::kernels
