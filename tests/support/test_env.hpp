#pragma once
// Lists the GPU tests narrow themselves to from the environment (compute-sanitizer runs: the
// tools slow every kernel 10-100x, so a run keeps a few M and one model shape). A bad value is
// exit 2 with the variable, the item and what is valid.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/moe/moe_types.hpp"

namespace moe::test {

// A list of M from the environment variable `name` ("1,4,64"), or `fallback` when unset.
inline std::vector<int> ms_from_env(const char* name, std::vector<int> fallback) {
  const char* env = std::getenv(name);
  if (!env || !*env) return fallback;
  std::vector<int> v;
  std::istringstream list(env);
  for (std::string item; std::getline(list, item, ',');) {
    char* end = nullptr;
    const long m = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || m < 1 || m > 65536) {
      std::fprintf(stderr, "%s='%s': '%s' is not a whole number 1..65536\n", name, env, item.c_str());
      std::exit(2);
    }
    v.push_back(static_cast<int>(m));
  }
  return v;
}

// The indices into `all` of the names MOE_TEST_SHAPES=a,b keeps, in its order; unset, every
// index. A name not in `all` is exit 2.
inline std::vector<std::size_t> shape_indices_from_env(const std::vector<std::string>& all) {
  std::vector<std::size_t> kept;
  const char* env = std::getenv("MOE_TEST_SHAPES");
  if (!env || !*env) {
    for (std::size_t i = 0; i < all.size(); ++i) kept.push_back(i);
    return kept;
  }
  std::istringstream list(env);
  for (std::string name; std::getline(list, name, ',');) {
    std::size_t i = 0;
    while (i < all.size() && all[i] != name) ++i;
    if (i == all.size()) {
      std::string valid;
      for (const std::string& n : all) valid += (valid.empty() ? "" : ", ") + n;
      std::fprintf(stderr, "MOE_TEST_SHAPES='%s': no shape '%s' (valid: %s)\n", env, name.c_str(), valid.c_str());
      std::exit(2);
    }
    kept.push_back(i);
  }
  return kept;
}

// The weight formats MOE_TEST_FORMATS=bf16,int4 keeps, in its order; unset, both (a racecheck
// run of a model-shape case takes minutes a format).
inline std::vector<kernels::WeightFormat> formats_from_env() {
  const char* env = std::getenv("MOE_TEST_FORMATS");
  if (!env || !*env) return {kernels::WeightFormat::bf16, kernels::WeightFormat::int4};
  std::vector<kernels::WeightFormat> kept;
  std::istringstream list(env);
  for (std::string name; std::getline(list, name, ',');) {
    bool known = false;
    for (kernels::WeightFormat f : {kernels::WeightFormat::bf16, kernels::WeightFormat::int4})
      if (kernels::to_string(f) == name) {
        kept.push_back(f);
        known = true;
      }
    if (!known) {
      std::fprintf(stderr, "MOE_TEST_FORMATS='%s': no format '%s' (valid: bf16, int4)\n", env, name.c_str());
      std::exit(2);
    }
  }
  return kept;
}

}  // namespace moe::test
