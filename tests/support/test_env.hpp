#pragma once
// Lists the GPU tests narrow themselves to from the environment (compute-sanitizer runs: the
// tools slow every kernel 10-100x, so a run keeps a few M and one model shape). A bad value is
// exit 2 with the variable, the item and what is valid.
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/moe/moe_types.hpp"

namespace moe::test {

// `text` as a whole number in [lo, hi], digits only (no sign, no spaces), into `v`.
inline bool whole_number(const std::string& text, long lo, long hi, int& v) {
  char* end = nullptr;
  const long x = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end || x < lo || x > hi) return false;
  v = static_cast<int>(x);
  return true;
}

// A list of M from the environment variable `name` ("1,4,64"), or `fallback` when unset.
inline std::vector<int> ms_from_env(const char* name, std::vector<int> fallback) {
  const char* env = std::getenv(name);
  if (!env || !*env) return fallback;
  std::vector<int> v;
  std::istringstream list(env);
  for (std::string item; std::getline(list, item, ',');) {
    int m = 0;
    if (!whole_number(item, 1, 65536, m)) {
      std::fprintf(stderr, "%s='%s': '%s' is not a whole number 1..65536\n", name, env, item.c_str());
      std::exit(2);
    }
    v.push_back(m);
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

// MOE_TEST_PART=k/n: a slow test case runs only the k-th of n interleaved shares of its inner
// cases (those whose count, from 0, is k-1 modulo n), so a sanitizer run can split it over n
// processes that each fit a time limit. Unset, 1/1: every inner case.
struct TestPart {
  int k = 1;
  int n = 1;
  int seen = 0;
  // Call once per inner case, in the same order in every part: true for this part's cases.
  bool take() { return seen++ % n == k - 1; }
};

// Parses "k/n" (1 <= k <= n <= 1000) into `part`; "" is 1/1. Returns what is wrong, or "".
inline std::string parse_test_part(std::string_view text, TestPart& part) {
  part = TestPart{};
  if (text.empty()) return "";
  const std::string s(text);
  const std::size_t slash = s.find('/');
  int k = 0, n = 0;
  if (slash == std::string::npos || !whole_number(s.substr(0, slash), 1, 1000, k) ||
      !whole_number(s.substr(slash + 1), 1, 1000, n))
    return "'" + s + "' is not k/n with whole numbers 1 <= k <= n <= 1000";
  if (k > n) return "'" + s + "': part " + std::to_string(k) + " of " + std::to_string(n) + " does not exist";
  part.k = k;
  part.n = n;
  return "";
}

// The environment variable `name` through `parse` (unset is ""); a bad value is exit 2 with
// the variable and parse's message.
template <class T>
T parsed_env(const char* name, std::string (*parse)(std::string_view, T&)) {
  const char* env = std::getenv(name);
  T value{};
  const std::string error = parse(env ? env : "", value);
  if (!error.empty()) {
    std::fprintf(stderr, "%s=%s\n", name, error.c_str());
    std::exit(2);
  }
  return value;
}

inline TestPart part_from_env() { return parsed_env<TestPart>("MOE_TEST_PART", parse_test_part); }

// MOE_TEST_REPEAT=0: the forward tests leave out a case's second run (the same inputs again,
// the same bits expected). Under a sanitizer that run makes the first's launches again on the
// same data, so it can find nothing new, yet it doubles a large case (Llama-4-Scout's GEMMs at
// M = 16 outlast a racecheck call). Unset or 1: the repeat runs.
// Parses "0" or "1" ("" is 1) into `repeat`. Returns what is wrong, or "".
inline std::string parse_test_repeat(std::string_view text, bool& repeat) {
  repeat = true;
  if (text.empty() || text == "1") return "";
  if (text == "0") {
    repeat = false;
    return "";
  }
  return "'" + std::string(text) + "' is not 0 (leave the repeat out) or 1 (run it, the default)";
}

inline bool repeat_from_env() { return parsed_env<bool>("MOE_TEST_REPEAT", parse_test_repeat); }

// Reads every knob above that needs no test's own lists, so a bad value is exit 2 before a run
// starts, not minutes into it under a sanitizer. MOE_TEST_SHAPES is checked against a test's
// shapes when the test reads it.
inline void check_env() {
  (void)ms_from_env("MOE_TEST_M", {});
  (void)formats_from_env();
  (void)part_from_env();
  (void)repeat_from_env();
}

}  // namespace moe::test
