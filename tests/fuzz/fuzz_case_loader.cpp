// libFuzzer target: case files (reports/case_file.cpp), as `moebench repro FILE` reads them.
// A bad input must end in moe::UsageError; a crash, a sanitizer report or any other exception
// escaping is a finding. An accepted case file must also survive its own round trip
// (to_json then parse again), since repro records it that way.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "reports/case_file.hpp"
#include "tests/fuzz/fuzz_input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = moe::fuzz::write_input_file(data, size);
  moe::report::CaseFile c;
  try {
    c = moe::report::load_case_file(path);
  } catch (const moe::UsageError&) {
    return 0;
  }
  // Not caught: an accepted case file that its own serialisation breaks is a finding.
  (void)moe::report::parse_case_file(moe::report::to_json(c), "round trip");
  return 0;
}
