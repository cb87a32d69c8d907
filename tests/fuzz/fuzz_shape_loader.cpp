// libFuzzer target: shape files and Hugging Face config.json files (engine/shape.cpp).
// A bad input must end in moe::UsageError; a crash, a sanitizer report or any other exception
// escaping is a finding. Run with scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "engine/shape.hpp"
#include "tests/fuzz/fuzz_input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // As `--shape FILE` reads it: the file decides between a shape file and a config.json.
  const std::string path = moe::fuzz::write_input_file(data, size);
  try {
    const moe::Shape s = moe::load_shape_file(path);
    (void)s.to_json().dump();
  } catch (const moe::UsageError&) {
  }

  // Both readers on every parsable document, so each sees the other's inputs too.
  const nlohmann::json j =
      nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    (void)moe::parse_shape_json(j, "fuzz");
  } catch (const moe::UsageError&) {
  }
  try {
    const moe::Shape s = moe::shape_from_hf_config(j, "fuzz/config.json");
    // What the rest of moebench does with an accepted shape: a valid shape round-trips.
    (void)moe::parse_shape_json(s.to_json(), "round trip");
  } catch (const moe::UsageError&) {
  }
  return 0;
}
