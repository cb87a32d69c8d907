// Probe test-ticks, test-only (probes/probe.hpp, test_probes): a case every 20 ms on the host,
// 2000 of them (40 s), so a CPU test can stop a real run of the real binary part way through a
// probe and read what the report on disk kept. It opens no device and measures nothing; each
// case records the process that made it, so a test can kill that process alone.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "probes/probe.hpp"

namespace moe {

namespace {
constexpr int kTicks = 2000;
constexpr std::chrono::milliseconds kTick{20};

std::vector<std::string> tick_names() {
  std::vector<std::string> names;
  for (int i = 0; i < kTicks; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "tick-%04d", i);
    names.emplace_back(name);
  }
  return names;
}
}  // namespace

extern const SweepDeclaration test_ticks_sweep;
const SweepDeclaration test_ticks_sweep{.cases = tick_names()};

void run_test_ticks_probe(ProbeState& state) {
  for (const SweepPoint& point : state.points()) {
    report::CaseResult c = state.start_case(point);
    std::this_thread::sleep_for(kTick);
    c.evidence["pid"] = static_cast<long long>(::getpid());
    c.checks.push_back({"ticked", true, "a test-only case: nothing measured"});
    c.conclude("test-only case of the runner's tests; nothing measured");
    state.add_case(std::move(c));
  }
}

}  // namespace moe
