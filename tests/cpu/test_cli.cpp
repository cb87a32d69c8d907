// Runs the real moebench binary: arguments, messages and exit codes as a user sees them.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "engine/device.hpp"
#include "engine/fault_injection.hpp"
#include "probes/probe.hpp"
#include "support/cli_runner.hpp"

namespace {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

Result run(const std::string& args) {
  const moe::test::CliResult r = moe::test::moebench_line(args);
  return {r.exit_code, r.out + r.err};
}

bool has_gpu() { return moe::Device::count() > 0; }

}  // namespace

TEST_CASE("an unknown probe is a usage error that lists the valid probes, and nothing runs") {
  const Result r = run("run nosuch -o /tmp/moebench-cli-nosuch.json");
  CHECK(r.code == 2);
  CHECK(r.out.find("unknown probe 'nosuch'") != std::string::npos);
  for (const moe::ProbeInfo& p : moe::all_probes())
    CHECK_MESSAGE(r.out.find(std::string(p.name)) != std::string::npos, p.name);
  CHECK_FALSE(std::filesystem::exists("/tmp/moebench-cli-nosuch.json"));
}

TEST_CASE("list shows every probe, shape and mutation with a description") {
  const Result r = run("list");
  CHECK(r.code == 0);
  for (const moe::ProbeInfo& p : moe::all_probes()) {
    CHECK(r.out.find(std::string(p.name)) != std::string::npos);
    CHECK(r.out.find(std::string(p.description)) != std::string::npos);
  }
  for (const moe::MutationInfo& m : moe::all_mutations())
    CHECK(r.out.find(std::string(m.name)) != std::string::npos);
  CHECK(r.out.find("deepseek-v2-lite") != std::string::npos);
  CHECK(r.out.find("ep-step exchanges: ") != std::string::npos);  // and whether lsa was built
  CHECK(run("list shapes").code == 0);
  const Result bad = run("list colours");
  CHECK(bad.code == 2);
  CHECK(bad.out.find("valid: probes, shapes, mutations") != std::string::npos);
}

TEST_CASE("test-only probes are never listed nor offered, and run by name without a GPU") {
  REQUIRE_FALSE(moe::test_probes().empty());
  const Result listed = run("list");
  const Result unknown = run("run nosuch -o /tmp/moebench-cli-nosuch.json");
  const Result dry = run("run --dry-run");
  for (const moe::ProbeInfo& p : moe::test_probes()) {
    const std::string name(p.name);
    CAPTURE(name);
    CHECK_FALSE(p.in_default_suite);
    CHECK_FALSE(p.needs_device);
    CHECK(listed.out.find(name) == std::string::npos);
    CHECK(unknown.out.find(name) == std::string::npos);
    CHECK(dry.out.find(name) == std::string::npos);  // not in the default suite
    CHECK(run("run " + name + " --dry-run").code == 0);
  }
}

TEST_CASE("bad values are refused with exit 2 before any device is touched") {
  struct Case {
    const char* args;
    const char* says;
  };
  const Case cases[] = {
      {"run copy --m 0", "--m '0' is not valid: whole numbers of tokens 1..65536"},
      {"run copy --m -3", "--m '-3' is not valid"},
      {"run copy --m 100000000", "--m '100000000' is not valid"},
      {"run copy --m 1,,2", "--m '1,,2' is not valid"},
      {"run copy --m 2.5", "--m '2.5' is not valid"},
      {"run copy --m abc", "--m 'abc' is not valid"},
      {"run copy --shape nope", "unknown shape 'nope'"},
      {"run copy --weight-format fp8", "valid: bf16, int4"},
      {"run copy --mode lazy", "valid: eager, graph"},
      {"run copy --l2 warm", "valid: cold, hot"},
      {"run two-engine --allocator fifo", "--allocator 'fifo' is not valid; valid: caching, plain"},
      {"run copy --min-samples 0", "--min-samples 0"},
      {"run copy --min-samples -1", "--min-samples"},
      {"run copy --min-samples 100 --max-samples 10", "--min-samples (100)"},
      {"run copy --max-noise 0", "--max-noise"},
      {"run copy --timeout -1", "--timeout"},
      {"run copy --warmup abc", "--warmup 'abc' is not valid: Untimed runs"},
      {"run copy --host-samples 0", "--host-samples 0 is out of range: 1..1000000"},
      {"run copy --host-samples -1", "--host-samples"},
      {"run copy --seed -1", "--seed"},
      {"run copy --copy-bytes 5", "--copy-bytes 5 is out of range"},
      {"run copy --max-layers 33", "--max-layers 33 is out of range: 0 (no cap) or 1..32"},
      {"run copy --max-layers -1", "--max-layers -1 is out of range"},
      {"run copy --barrier-reps 15", "--barrier-reps 15 is out of range: 16..100000"},
      {"run copy --barrier-reps 100001", "--barrier-reps 100001 is out of range"},
      {"run copy --barrier-reps abc", "--barrier-reps 'abc' is not valid"},
      {"run copy --format yaml", "valid: table, json"},
      {"run bandwidth --peer nvblas", "--peer 'nvblas' is not valid; valid: none, cublas"},
      {"run copy --peer cublas", "--peer cublas applies to probe bandwidth, which this run does not include"},
      {"run ep-step --exchange shm", "--exchange 'shm' is not valid; valid: alltoall, sendrecv, lsa"},
      {"run ep-step --exchange sendrecv,sendrecv", "--exchange 'sendrecv' is given twice"},
      {"run copy --exchange sendrecv", "--exchange applies to probe ep-step, which this run does not include"},
      {"run copy --mutation nosuch", "valid: static-resident-cache"},
      {"run copy --device -1", "--device -1"},
      {"run copy --fixtures /nonexistent", "--fixtures '/nonexistent' has no shapes/ folder"},
      {"run copy -o /nonexistent/dir/r.json", "does not exist or is not writable"},
      {"run --frob", "--frob"},
      {"list --fixtures /nonexistent", "/nonexistent"},
      {"frobnicate", "unknown command 'frobnicate'"},
      {"", "a command is required; valid: run"},
  };

  for (const Case& c : cases) {
    const std::string args = c.args;
    CAPTURE(args);
    const Result r = run(args);
    CAPTURE(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find(c.says) != std::string::npos);
    // One line, naming the value: nothing else is printed, no table, no plan.
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  }
}

TEST_CASE("help and version exit 0; help documents the exit codes") {
  const Result h = run("--help");
  CHECK(h.code == 0);
  CHECK(h.out.find("Exit codes") != std::string::npos);
  CHECK(run("run --help").code == 0);
  CHECK(run("--version").out.find("moebench") != std::string::npos);
}

TEST_CASE("without a GPU, run says so in one line and exits 3") {
  if (has_gpu()) {
    MESSAGE("a GPU is present: the no-GPU path is exercised on machines without one (CI)");
    return;
  }
  const Result r = run("run -o /tmp/moebench-cli-nogpu.json");
  CHECK(r.code == 3);
  CHECK(r.out.find("no usable CUDA GPU") != std::string::npos);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}
