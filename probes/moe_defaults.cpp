#include "probes/moe_defaults.hpp"

#include "common/cuda_check.hpp"
#include "engine/shape_library.hpp"
#include "probes/layer_check.hpp"

namespace moe {

std::vector<Shape> shapes_or_default(const ProbeState& state,
                                     const std::vector<const char*>& defaults) {
  if (state.options().user_set_shapes) return state.options().shapes;
  const auto library = shape_library(state.options().fixtures_dir);
  std::vector<Shape> shapes;
  for (const char* name : defaults) shapes.push_back(resolve_shape(name, library));
  return shapes;
}

std::vector<int> ms_or_default(const ProbeState& state, const std::vector<int>& defaults) {
  return state.options().user_set_ms ? state.options().ms : defaults;
}

report::CaseResult moe_case(const ProbeState& state, std::string name, const Shape& shape,
                            kernels::WeightFormat format, std::optional<int> m,
                            std::optional<std::string> mode) {
  report::CaseResult c = state.new_case(std::move(name));
  c.shape = shape.name;
  c.shape_fingerprint = shape.fingerprint();
  c.format = std::string(kernels::to_string(format));
  c.m = m;
  c.mode = std::move(mode);
  c.parameters = {{"shape", shape.to_json()}, {"format", *c.format}};
  if (m) c.parameters["m"] = *m;
  if (c.mode) c.parameters["mode"] = *c.mode;
  return c;
}

EngineConfig engine_config(const ProbeState& state, const Shape& shape,
                           kernels::WeightFormat format, std::uint64_t purpose, int layers) {
  EngineConfig config;
  config.shape = shape;
  config.format = format;
  config.layers = layers;
  config.max_layers = state.options().max_layers;
  config.seed = derive_seed(state.options().seed, purpose);
  config.options = state.options().engine.forward();
  return config;
}

report::Check device_usable(ProbeState& state, const Shape& shape, kernels::WeightFormat format,
                            int m, const std::string& check_name) {
  int sent = 0x5eed, back = 0;
  DeviceBuffer one = state.allocator().allocate(sizeof(int));
  MOE_CUDA_CHECK(cudaMemcpy(one.data(), &sent, sizeof(int), cudaMemcpyHostToDevice));
  MOE_CUDA_CHECK(cudaMemcpy(&back, one.data(), sizeof(int), cudaMemcpyDeviceToHost));
  Engine fresh(engine_config(state, shape, format, 49, 1), state.allocator(), state.device());
  const std::uint64_t input = derive_seed(state.options().seed, 48, m);
  fresh.set_input(m, input);
  fresh.forward();
  const LayerCheck k = check_layer_output(fresh.layer(0), fresh.output(0), m, input);
  return {check_name, back == sent && k.passed,
          std::string("round trip ") + (back == sent ? "ok" : "corrupt") + "; fresh engine: " +
              k.detail};
}

std::uint64_t derive_seed(std::uint64_t run_seed, std::uint64_t purpose, std::uint64_t index) {
  std::uint64_t x = run_seed * 0x9E3779B97F4A7C15ull ^ (purpose << 32) ^ index;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

}  // namespace moe
