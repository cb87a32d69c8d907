// The probes that run through an engine adapter (--engine) and the capabilities each needs,
// without a GPU: each refused in one line naming what the adapter lacks, accepted by an adapter
// that has it, and the cuBLAS adapter's declarations and layer checks (where it is built).
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "engine/external/adapter_call.hpp"
#include "engine/external/adapter_library.hpp"
#include "engine/external/layer_description.hpp"
#include "probes/adapter_requirements.hpp"
#include "support/cli_runner.hpp"

using moe::external::AdapterLibrary;

namespace {

// Declares no capability, bf16 only (tests/adapters/test_adapter.c).
std::string bare_adapter() { return std::string(MOEBENCH_TEST_ADAPTER_DIR) + "/libmoebench_test_adapter_good.so"; }

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// Whether the dry run's table has a row of `probe` and `case_name` (its second and third columns).
bool has_row(const std::string& table, const std::string& probe, const std::string& case_name) {
  std::istringstream rows(table);
  for (std::string row; std::getline(rows, row);) {
    std::istringstream cells(row);
    std::string number, p, c;
    if (cells >> number >> p >> c && p == probe && c == case_name) return true;
  }
  return false;
}

struct Expected {
  const char* probe;
  const char* missing;  // adapter_refusal's text for the bare adapter
};
constexpr Expected kNewlyThroughAdapters[] = {
    {"bandwidth", "it needs route-counts (MOEBENCH_CAP_ROUTE_COUNTS), which adapter 'test-adapter' 1.2.3 does not "
                  "declare"},
    {"capture-replay", "it needs capture-safe-forward (MOEBENCH_CAP_CAPTURE_SAFE_FORWARD), which adapter "
                       "'test-adapter' 1.2.3 does not declare"},
    {"route-telemetry", "it needs capture-safe-forward (MOEBENCH_CAP_CAPTURE_SAFE_FORWARD), route-counts "
                        "(MOEBENCH_CAP_ROUTE_COUNTS), which adapter 'test-adapter' 1.2.3 does not declare"},
    {"drop-after-inflight", "it needs device-allocator (MOEBENCH_CAP_DEVICE_ALLOCATOR), which adapter "
                            "'test-adapter' 1.2.3 does not declare"},
};

// The layer of fixtures/shapes/tiny.json, as the ABI describes it.
moebench_layer_desc tiny_layer(moe::kernels::WeightFormat format = moe::kernels::WeightFormat::bf16) {
  moe::kernels::MoeDims d;
  d.hidden = 256;
  d.inter = 128;
  d.experts = 8;
  d.shared = 1;
  d.top_k = 2;
  d.format = format;
  return moe::external::describe_layer(d);
}

}  // namespace

TEST_CASE("bandwidth, capture-replay, route-telemetry and drop-after-inflight are refused by an adapter without "
          "their capabilities") {
  const AdapterLibrary bare(bare_adapter());
  const AdapterLibrary own(MOEBENCH_OWN_ADAPTER);
  for (const Expected& e : kNewlyThroughAdapters) {
    CAPTURE(e.probe);
    const moe::ProbeInfo& probe = moe::probe_by_name(e.probe);
    CHECK(probe.external.runs);
    CHECK(moe::adapter_refusal(probe, bare) == e.missing);
    CHECK(moe::adapter_refusal(probe, own).empty());  // moebench's own adapter has them all
    // Named on the command line: one line, exit 2, nothing run.
    const auto r = moe::test::moebench("run", e.probe, "--engine", bare_adapter());
    const std::string out = r.out + r.err;
    CAPTURE(out);
    CHECK(r.exit_code == 2);
    CHECK(lines(out) == 1);
    CHECK(out.find("--engine: probe " + std::string(e.probe) + " cannot run through adapter 'test-adapter' 1.2.3: " +
                   e.missing + " (probes that can: two-engine)") != std::string::npos);
  }
}

TEST_CASE("the probes of moebench's own engine's internals stay refused, with why") {
  const AdapterLibrary own(MOEBENCH_OWN_ADAPTER);
  for (const char* name : {"scratch-regrow", "expert-residency", "host-nonblocking"}) {
    CAPTURE(name);
    CHECK_FALSE(moe::adapter_refusal(moe::probe_by_name(name), own).empty());
  }
  const auto r = moe::test::moebench("run", "scratch-regrow", "--engine", MOEBENCH_OWN_ADAPTER);
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("(probes that can: bandwidth, capture-replay, route-telemetry, two-engine, drop-after-inflight)") !=
        std::string::npos);
}

TEST_CASE("through moebench's own adapter the dry run plans the newly enabled probes, route-telemetry's window only") {
  const auto r = moe::test::moebench("run", "bandwidth", "capture-replay", "route-telemetry", "drop-after-inflight", "--engine",
                                     MOEBENCH_OWN_ADAPTER, "--shape", "tiny", "--dry-run");
  const std::string out = r.out + r.err;
  CAPTURE(out);
  CHECK(r.exit_code == 0);
  CHECK(has_row(out, "bandwidth", "step"));
  CHECK(has_row(out, "capture-replay", "cycle"));
  CHECK(has_row(out, "route-telemetry", "window"));
  // Arming is the adapter's: there is no disarmed run to time the overhead against.
  CHECK_FALSE(has_row(out, "route-telemetry", "overhead"));
  // A layer is moebench's own object: case engine only.
  CHECK(has_row(out, "drop-after-inflight", "engine"));
  CHECK_FALSE(has_row(out, "drop-after-inflight", "layer"));
  // The same probes without an adapter: every case (the rows the checks above rely on exist).
  const auto direct = moe::test::moebench("run", "route-telemetry", "drop-after-inflight", "--shape", "tiny", "--dry-run");
  CHECK(has_row(direct.out + direct.err, "route-telemetry", "overhead"));
  CHECK(has_row(direct.out + direct.err, "drop-after-inflight", "layer"));
}

TEST_CASE("the cuBLAS adapter declares a capture-safe forward, route counts and bf16 only") {
  const std::string path = MOEBENCH_CUBLAS_ADAPTER;
  if (path.empty()) {
    MESSAGE("adapters/cublas_per_expert not built (no cuBLAS): nothing to check");
    return;
  }
  const AdapterLibrary a(path);
  CHECK(a.name() == "cublas-per-expert");
  CHECK(a.has(MOEBENCH_CAP_CAPTURE_SAFE_FORWARD));
  CHECK(a.has(MOEBENCH_CAP_ROUTE_COUNTS));
  CHECK_FALSE(a.has(MOEBENCH_CAP_RESIDENCY));
  CHECK(a.takes(moe::kernels::WeightFormat::bf16));
  CHECK_FALSE(a.takes(moe::kernels::WeightFormat::int4));
  CHECK_FALSE(a.has(MOEBENCH_CAP_DEVICE_ALLOCATOR));  // its memory is its own (cudaMalloc)
  for (const char* probe : {"bandwidth", "capture-replay", "route-telemetry", "two-engine"})
    CHECK(moe::adapter_refusal(moe::probe_by_name(probe), a).empty());
  CHECK(moe::adapter_refusal(moe::probe_by_name("drop-after-inflight"), a) ==
        "it needs device-allocator (MOEBENCH_CAP_DEVICE_ALLOCATOR), which adapter 'cublas-per-expert' " +
            a.version() + " does not declare");

  // check_layer answers without a device, naming the value it refuses.
  REQUIRE(static_cast<bool>(a.table().check_layer));
  moebench_error error = moe::external::empty_error();
  const moebench_layer_desc tiny = tiny_layer();
  CHECK(a.table().check_layer(&tiny, &error) == MOEBENCH_OK);
  const moebench_layer_desc int4 = tiny_layer(moe::kernels::WeightFormat::int4);
  CHECK(a.table().check_layer(&int4, &error) == MOEBENCH_ERROR_UNSUPPORTED);
  CHECK(moe::external::message_of(error).find("only bf16") != std::string::npos);
  moebench_layer_desc grouped = tiny;
  grouped.topk_method = MOEBENCH_TOPK_GROUP_LIMITED_GREEDY;
  CHECK(a.table().check_layer(&grouped, &error) == MOEBENCH_ERROR_UNSUPPORTED);
  CHECK(moe::external::message_of(error).find("top-k method 1: only greedy") != std::string::npos);
  moebench_layer_desc gated = tiny;
  gated.shared_gate = 1;
  CHECK(a.table().check_layer(&gated, &error) == MOEBENCH_ERROR_UNSUPPORTED);

  // Through the CLI: int4 cases are refused before anything runs, bf16 ones planned.
  const auto int4_run = moe::test::moebench("run", "bandwidth", "--engine", path, "--shape", "tiny", "--dry-run");
  CAPTURE(int4_run.err);
  CHECK(int4_run.exit_code == 2);
  CHECK(int4_run.err.find("does not take int4 weights") != std::string::npos);
  const auto bf16_run = moe::test::moebench("run", "bandwidth", "capture-replay", "route-telemetry", "two-engine", "--engine",
                                            path, "--shape", "tiny", "--weight-format", "bf16", "--dry-run");
  CAPTURE(bf16_run.err);
  CHECK(bf16_run.exit_code == 0);
}
