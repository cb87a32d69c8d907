#include "probes/external_layer_check.hpp"

namespace moe {

namespace {
std::size_t output_elements(const external::ExternalEngine& e) {
  return static_cast<std::size_t>(e.input_tokens()) * static_cast<std::size_t>(e.weights(0).dims().hidden);
}
}  // namespace

LayerCheck check_external_layer(external::ExternalEngine& engine, int layer, std::uint64_t input_seed,
                                int max_tokens) {
  engine.stream().drain();
  const int m = engine.input_tokens();
  const LayerReference ref = LayerReference::of(engine.weights(layer));
  if (max_tokens <= 0) max_tokens = affordable_tokens(ref.dims, m);
  return check_output(ref, copy_to_host(engine.output(layer), output_elements(engine)), m, input_seed, nullptr,
                      max_tokens);
}

std::vector<std::vector<std::uint16_t>> copy_outputs(external::ExternalEngine& engine) {
  engine.stream().drain();
  std::vector<std::vector<std::uint16_t>> out;
  for (int l = 0; l < engine.layers(); ++l) out.push_back(copy_to_host(engine.output(l), output_elements(engine)));
  return out;
}

std::size_t count_output_differences(external::ExternalEngine& engine,
                                     const std::vector<std::vector<std::uint16_t>>& earlier) {
  engine.stream().drain();
  std::size_t differ = 0;
  for (int l = 0; l < engine.layers(); ++l)
    differ += count_differences(engine.output(l), earlier[static_cast<std::size_t>(l)], output_elements(engine));
  return differ;
}

}  // namespace moe
