// The engine ABI's loader and everything that rides on it without a GPU: the checks each
// adapter of tests/adapters/ breaks, each as the loader raises it and as `moebench` prints it
// (one line, its exit code, nothing run), a failed call's message, the probes' declarations,
// the report's record of the adapter and compare's warning, repro and selftest.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/errors.hpp"
#include "common/sha256.hpp"
#include "engine/external/adapter_call.hpp"
#include "engine/external/adapter_library.hpp"
#include "engine/external/layer_description.hpp"
#include "probes/adapter_requirements.hpp"
#include "reports/compare.hpp"
#include "reports/report_writer.hpp"
#include "support/cli_runner.hpp"

using moe::external::AdapterLibrary;

namespace {

std::string adapter(const std::string& variant) {
  return std::string(MOEBENCH_TEST_ADAPTER_DIR) + "/libmoebench_test_adapter_" + variant + ".so";
}

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

template <class... Args>
Result run(const Args&... args) {
  const moe::test::CliResult r = moe::test::moebench(args...);
  return {r.exit_code, r.out + r.err};
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// The layer of fixtures/shapes/tiny.json in bf16, as the ABI describes it.
moebench_layer_desc tiny_layer() {
  moe::kernels::MoeDims d;
  d.hidden = 256;
  d.inter = 128;
  d.experts = 8;
  d.shared = 1;
  d.top_k = 2;
  return moe::external::describe_layer(d);
}

}  // namespace

TEST_CASE("SHA-256 of bytes and of a file is the FIPS 180-4 digest") {
  CHECK(moe::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(moe::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two blocks, and a message that fills the first exactly up to the length field.
  CHECK(moe::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(moe::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  const auto dir = moe::test::scratch_dir("sha256");
  moe::report::write_file_atomically((dir / "abc").string(), "abc");
  CHECK(moe::sha256_of_file(dir / "abc") == moe::sha256_hex("abc"));
  CHECK_THROWS_AS(moe::sha256_of_file(dir / "missing"), moe::UsageError);
}

TEST_CASE("a well-formed adapter loads with its name, version, ABI version, formats and digest") {
  const AdapterLibrary a(adapter("good"));
  CHECK(a.name() == "test-adapter");
  CHECK(a.version() == "1.2.3");
  CHECK(a.abi_version() == "1.1");
  CHECK(a.label() == "adapter 'test-adapter' 1.2.3");
  CHECK(a.path().is_absolute());
  CHECK(a.sha256() == moe::sha256_of_file(adapter("good")));
  CHECK(a.takes(moe::kernels::WeightFormat::bf16));
  CHECK_FALSE(a.takes(moe::kernels::WeightFormat::int4));
  const nlohmann::json j = a.to_json();
  CHECK(j.at("name") == "test-adapter");
  CHECK(j.at("version") == "1.2.3");
  CHECK(j.at("abi") == "1.1");
  CHECK(j.at("sha256") == a.sha256());
  CHECK(j.at("capabilities") == nlohmann::json::array());
  CHECK(j.at("weight_formats") == nlohmann::json::array({"bf16"}));
  CHECK(j.at("path") == a.path().string());
}

TEST_CASE("moebench's own adapter loads, declares a capture-safe forward, route counts, the lent allocator and both "
          "formats") {
  const AdapterLibrary a(MOEBENCH_OWN_ADAPTER);
  CHECK(a.name() == "moebench");
  CHECK(a.has(MOEBENCH_CAP_CAPTURE_SAFE_FORWARD));
  CHECK(a.has(MOEBENCH_CAP_ROUTE_COUNTS));
  CHECK(a.has(MOEBENCH_CAP_DEVICE_ALLOCATOR));
  CHECK_FALSE(a.has(MOEBENCH_CAP_RESIDENCY));
  CHECK(a.takes(moe::kernels::WeightFormat::bf16));
  CHECK(a.takes(moe::kernels::WeightFormat::int4));
  // Its check_layer answers without a device.
  const moebench_layer_desc layer = tiny_layer();
  moebench_error error = moe::external::empty_error();
  REQUIRE(static_cast<bool>(a.table().check_layer));
  CHECK(a.table().check_layer(&layer, &error) == MOEBENCH_OK);
  moebench_layer_desc fp8 = layer;
  fp8.weight_format = 7;
  CHECK(a.table().check_layer(&fp8, &error) == MOEBENCH_ERROR_UNSUPPORTED);
  CHECK(moe::external::message_of(error).find("weight format 7") != std::string::npos);
}

TEST_CASE("each adapter that breaks a rule of the ABI is refused in one line before anything runs") {
  const auto dir = moe::test::scratch_dir("engine-abi-refusals");
  const std::string text_file = (dir / "notes.so").string();
  moe::report::write_file_atomically(text_file, "not a library\n");
  const std::size_t table_bytes = sizeof(moebench_adapter);
  struct Case {
    std::string file;
    std::string says;
    int code;
  };
  const Case cases[] = {
      {(dir / "absent.so").string(), "no such file", 2},
      {text_file, "not a shared library (no ELF header", 2},
      {adapter("needs_missing_library"),
       "cannot be loaded on this machine: libmoebench_test_missing_dependency.so", 3},
      {moe::test::moebench_binary(), "an executable, not a shared library", 2},
      {adapter("no_entry"), "does not export moebench_engine_abi: not a moebench engine adapter", 2},
      {adapter("entry_refuses"),
       "moebench_engine_abi refused engine ABI 1.1 (MOEBENCH_ERROR_UNSUPPORTED): this adapter needs "
       "engine ABI 1.7 or newer",
       2},
      {adapter("other_major"), "built for engine ABI 2.1; this moebench speaks 1.1 (the major versions must match", 2},
      {adapter("table_size"), "its table is " + std::to_string(table_bytes - 8) + " bytes; engine ABI 1.1's is " +
                                  std::to_string(table_bytes),
       2},
      {adapter("null_forward"), "adapter 'test-adapter' 1.2.3 leaves forward null; every adapter must give create, "
                                "forward and destroy",
       2},
      {adapter("capability_without_function"),
       "declares route-counts (MOEBENCH_CAP_ROUTE_COUNTS) but leaves reset_route_counts null", 2},
      {adapter("no_format"), "takes no weight format", 2},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    // The loader: the error type carries the exit code.
    try {
      const AdapterLibrary a(c.file);
      FAIL("loaded");
    } catch (const moe::Error& e) {
      CHECK(moe::to_int(e.code()) == c.code);
      CHECK(std::string(e.what()).find(c.says) != std::string::npos);
      CHECK(std::string(e.what()).find("--engine '" + c.file + "'") == 0);
    }
    // The CLI: one line, the exit code, no report (nothing ran), before the GPU is looked for.
    const std::string report = (dir / "report.json").string();
    const Result r = run("run", "two-engine", "--engine", c.file, "-o", report);
    CAPTURE(r.out);
    CHECK(r.code == c.code);
    CHECK(r.out.find(c.says) != std::string::npos);
    CHECK(lines(r.out) == 1);
    CHECK_FALSE(std::filesystem::exists(report));
  }
}

TEST_CASE("an empty --engine is refused, not read as moebench's own engine") {
  for (const char* command : {"run", "repro", "selftest"}) {
    CAPTURE(command);
    const Result r = std::string(command) == "repro" ? run(command, "x.json", "--engine", "") : run(command, "--engine", "");
    CHECK(r.code == 2);
    CHECK(r.out.find("--engine: '' is not valid: the path of an engine adapter's shared library") != std::string::npos);
    CHECK(lines(r.out) == 1);
  }
}

TEST_CASE("a layer or format the adapter does not take is one line naming its own message") {
  const Result refused = run("run", "two-engine", "--engine", adapter("check_layer_refuses"), "--dry-run");
  CAPTURE(refused.out);
  CHECK(refused.code == 2);
  CHECK(refused.out.find("--engine: adapter 'test-adapter' 1.2.3: check_layer failed (MOEBENCH_ERROR_UNSUPPORTED): "
                         "shared experts are not implemented (probe two-engine, shape tiny (bf16))") !=
        std::string::npos);
  CHECK(lines(refused.out) == 1);
  const Result int4 = run("run", "two-engine", "--engine", adapter("good"), "--weight-format", "int4", "--dry-run");
  CAPTURE(int4.out);
  CHECK(int4.code == 2);
  CHECK(int4.out.find("adapter 'test-adapter' 1.2.3 does not take int4 weights, and probe two-engine would give "
                      "it shape tiny (int4)") != std::string::npos);
  CHECK(lines(int4.out) == 1);
}

TEST_CASE("a failed call into the adapter names the function, the status and the adapter's message") {
  const AdapterLibrary a(adapter("create_fails"));
  const moebench_layer_desc layer = tiny_layer();
  moebench_engine_desc desc{};
  desc.struct_size = sizeof desc;
  desc.layers = 1;
  desc.max_tokens = 4;
  desc.layer = &layer;
  moebench_engine* engine = nullptr;
  moebench_error error = moe::external::empty_error();
  const moebench_status status = a.table().create(&desc, &engine, &error);
  CHECK(status == MOEBENCH_ERROR_UNSUPPORTED);
  try {
    moe::external::check_call(a, "create", status, error);
    FAIL("no error raised");
  } catch (const moe::Error& e) {
    CHECK(e.code() == moe::ExitCode::probe_error);
    CHECK(std::string(e.what()) ==
          "adapter 'test-adapter' 1.2.3: create failed (MOEBENCH_ERROR_UNSUPPORTED): this engine builds no layer "
          "of 3 experts");
  }
  CHECK_NOTHROW(moe::external::check_call(a, "create", MOEBENCH_OK, error));
  // Out of memory is the machine's; a code the ABI does not define is named by its number.
  CHECK(moe::external::exit_code_for_status(MOEBENCH_ERROR_OUT_OF_MEMORY) == moe::ExitCode::environment);
  CHECK(moe::external::status_name(17) == "status 17");
  // A message is one printable line, bounded to its buffer even when left unterminated.
  moebench_error raw = moe::external::empty_error();
  std::memset(raw.message, 'x', sizeof raw.message);
  raw.message[3] = '\n';
  const std::string m = moe::external::message_of(raw);
  CHECK(m.size() == sizeof raw.message);
  CHECK(m.find('\n') == std::string::npos);
  CHECK(moe::external::message_of(moe::external::empty_error()) == "(no message)");
}

TEST_CASE("probes declare whether they run through an adapter and the capabilities they need") {
  const AdapterLibrary good(adapter("good"));
  const AdapterLibrary own(MOEBENCH_OWN_ADAPTER);
  // A probe that needs a capture-safe forward: refused by an adapter without it, by name.
  constexpr moe::ProbeInfo needs_capture{"needs-capture", "", nullptr, nullptr, false, false, 1, {},
                                         moe::ExternalEngineUse{.runs = true, .needs = MOEBENCH_CAP_CAPTURE_SAFE_FORWARD}};
  CHECK(moe::adapter_refusal(needs_capture, good) ==
        "it needs capture-safe-forward (MOEBENCH_CAP_CAPTURE_SAFE_FORWARD), which adapter 'test-adapter' 1.2.3 "
        "does not declare");
  CHECK(moe::adapter_refusal(needs_capture, own).empty());
  std::vector<const moe::ProbeInfo*> named{&needs_capture};
  CHECK_THROWS_WITH_AS(moe::select_probes_for_adapter(named, true, good),
                       doctest::Contains("--engine: probe needs-capture cannot run through adapter 'test-adapter' "
                                         "1.2.3: it needs capture-safe-forward"),
                       moe::UsageError);
  std::vector<const moe::ProbeInfo*> suite{&needs_capture, &moe::probe_by_name("two-engine")};
  const std::vector<std::string> left_out = moe::select_probes_for_adapter(suite, false, good);
  REQUIRE(suite.size() == 1);
  CHECK(suite[0]->name == "two-engine");
  REQUIRE(left_out.size() == 1);
  CHECK(left_out[0].find("needs-capture (it needs capture-safe-forward") == 0);

  // Through the CLI: a named probe that cannot is exit 2 naming why and the probes that can.
  const Result copy = run("run", "copy", "--engine", adapter("good"));
  CAPTURE(copy.out);
  CHECK(copy.code == 2);
  CHECK(copy.out.find("--engine: probe copy cannot run through adapter 'test-adapter' 1.2.3: it measures the device, "
                      "not an engine (probes that can: two-engine)") != std::string::npos);
  CHECK(lines(copy.out) == 1);
  // The default suite keeps the probes that can, and says which it left out and why.
  const Result suite_run = run("run", "--engine", adapter("good"), "--dry-run");
  CAPTURE(suite_run.out);
  CHECK(suite_run.code == 0);
  CHECK(suite_run.out.find("engine: adapter 'test-adapter' 1.2.3 (engine ABI 1.1, ") != std::string::npos);
  CHECK(suite_run.out.find("not run through it: copy (it measures the device, not an engine)") != std::string::npos);
  CHECK(suite_run.out.find("two-engine  sequence") != std::string::npos);
  CHECK(suite_run.out.find("bandwidth  step") == std::string::npos);
  // A mutation restores a bug of moebench's own engine: through an adapter it is refused.
  const Result mutation = run("run", "two-engine", "--engine", adapter("good"), "--mutation", "static-resident-cache");
  CHECK(mutation.code == 2);
  CHECK(mutation.out.find("--mutation static-resident-cache restores a bug in moebench's own engine") !=
        std::string::npos);
}

TEST_CASE("compare warns when two reports ran other engines") {
  // What a report records of an adapter (options.engine_adapter) is AdapterLibrary::to_json.
  const nlohmann::json recorded = AdapterLibrary(adapter("good")).to_json();
  moe::report::Report base, head;
  head.options["engine_adapter"] = recorded;
  auto diffs = moe::report::environment_differences(base, head);
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].field == "engine");
  CHECK(diffs[0].base == "moebench's own");
  CHECK(diffs[0].head.find("adapter test-adapter 1.2.3 (engine ABI 1.1, sha256 ") == 0);
  CHECK_FALSE(diffs[0].expected);
  CHECK(moe::report::environment_differences(head, head).empty());
  // Another build of the same adapter is another engine.
  moe::report::Report rebuilt = head;
  rebuilt.options["engine_adapter"]["sha256"] = std::string(64, '0');
  diffs = moe::report::environment_differences(head, rebuilt);
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].head.find("sha256 0000000000000000") != std::string::npos);

  // Through the CLI, on two report files.
  const auto dir = moe::test::scratch_dir("compare-engine");
  nlohmann::json a = nlohmann::json::parse(moe::test::read_text(moe::test::data_file("reports/h200-base.json")));
  nlohmann::json b = a;
  b["options"]["engine_adapter"] = recorded;
  moe::report::write_file_atomically((dir / "a.json").string(), a.dump());
  moe::report::write_file_atomically((dir / "b.json").string(), b.dump());
  const Result r = run("compare", (dir / "a.json").string(), (dir / "b.json").string());
  CAPTURE(r.out);
  CHECK(r.out.find("moebench's own") != std::string::npos);
  CHECK(r.out.find("adapter test-adapter 1.2.3") != std::string::npos);
}

TEST_CASE("repro and selftest check the adapter first; a report that ran through one needs --engine") {
  const Result selftest = run("selftest", "--engine", adapter("other_major"));
  CAPTURE(selftest.out);
  CHECK(selftest.code == 2);
  CHECK(selftest.out.find("built for engine ABI 2.1") != std::string::npos);
  CHECK(lines(selftest.out) == 1);

  // A case file under a mutation of moebench's own engine cannot go through an adapter.
  const Result mutated = run("repro", std::string(MOEBENCH_FIXTURES_DIR) + "/cases/stale-resident-pointers.json",
                             "--engine", adapter("good"), "--dry-run");
  CHECK(mutated.code == 2);
  CHECK(mutated.out.find("--mutation static-resident-cache restores a bug in moebench's own engine") !=
        std::string::npos);

  const auto dir = moe::test::scratch_dir("repro-engine");
  nlohmann::json through = nlohmann::json::parse(moe::test::read_text(moe::test::data_file("reports/h200-base.json")));
  through["options"]["engine_adapter"] = {{"path", "/elsewhere/libtheirs.so"}, {"name", "theirs"},
                                          {"version", "0.3"}, {"abi", "1.0"}, {"sha256", std::string(64, 'a')},
                                          {"capabilities", nlohmann::json::array()},
                                          {"weight_formats", {"bf16"}}};
  const std::string file = (dir / "through.json").string();
  moe::report::write_file_atomically(file, through.dump());
  const Result bare = run("repro", file, "--dry-run");
  CAPTURE(bare.out);
  CHECK(bare.code == 2);
  CHECK(bare.out.find("ran through engine adapter theirs 0.3 (sha256 " + std::string(64, 'a') +
                      "): give --engine PATH of that adapter to rerun it") != std::string::npos);
  CHECK(lines(bare.out) == 1);
  // Another file is a warning; then the run's own checks apply (the report's first probe is copy).
  const Result other = run("repro", file, "--engine", adapter("good"), "--dry-run");
  CAPTURE(other.out);
  CHECK(other.out.find("repro: warning: --engine '" + adapter("good") +
                       "' is not the file the report ran through (theirs 0.3") != std::string::npos);
  CHECK(other.code == 2);
  CHECK(other.out.find("cannot run through adapter 'test-adapter' 1.2.3: it measures the device") != std::string::npos);
}
