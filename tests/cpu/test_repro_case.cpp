// Case files (schema moebench.case) and `moebench repro`: validation of case files and reports
// before any device work, the plan a report turns into, and the exit codes.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>

#include "support/cli_runner.hpp"
#include "common/errors.hpp"
#include "reports/case_file.hpp"

using namespace moe::report;
using moe::test::data_file;
using moe::test::moebench;
using nlohmann::json;

namespace {

json valid_case() {
  return json::parse(moe::test::read_text(data_file("cases/copy-read-ceiling.json")));
}

std::string write(const std::filesystem::path& dir, const std::string& name, const json& j) {
  std::ofstream(dir / name) << j.dump(2);
  return (dir / name).string();
}

}  // namespace

TEST_CASE("case file: a valid file loads with every field") {
  const CaseFile c = load_case_file(data_file("cases/with-shape-object.json"));
  CHECK(c.name == "shape-object");
  CHECK(c.probe == "copy");
  REQUIRE(c.shapes.size() == 2);
  CHECK(c.shapes[0] == "tiny");
  CHECK(c.shapes[1].at("hidden") == 256);
  CHECK(c.ms == std::vector<int>{1, 4});
  CHECK(c.weight_formats == std::vector<std::string>{"bf16", "int4"});
  CHECK(c.modes == std::vector<std::string>{"graph"});
  CHECK(c.seed == 7);
  CHECK(c.mutation == "noop-timing-barrier");
  CHECK(c.expected_verdict == Verdict::fail);
  // Round trip.
  const CaseFile again = parse_case_file(to_json(c), "round trip");
  CHECK(to_json(again) == to_json(c));
}

TEST_CASE("case file: every malformed field is refused naming the field, value and valid values") {
  struct Bad {
    const char* what;
    std::function<void(json&)> edit;
    std::vector<std::string> expect;  // all must appear in the message
  };
  const Bad bad[] = {
      {"unknown top field", [](json& j) { j["colour"] = "red"; },
       {"unknown field \"colour\"", "expected_verdict"}},
      {"unknown run field", [](json& j) { j["run"]["batch"] = 4; },
       {"unknown field \"run.batch\"", "weight_formats"}},
      {"m not an array", [](json& j) { j["run"]["m"] = "1,2"; }, {"\"run.m\"", "array"}},
      {"m element not an integer", [](json& j) { j["run"]["m"] = {1, "two"}; },
       {"\"run.m[1]\"", "integer", "\"two\""}},
      {"m out of range", [](json& j) { j["run"]["m"] = {0}; }, {"\"run.m[0]\"", "1..65536"}},
      {"seed negative", [](json& j) { j["run"]["seed"] = -1; }, {"\"run.seed\"", "-1"}},
      {"seed a string", [](json& j) { j["run"]["seed"] = "1"; }, {"\"run.seed\"", "integer"}},
      {"weight format", [](json& j) { j["run"]["weight_formats"] = {"fp8"}; },
       {"\"fp8\"", "valid: bf16, int4"}},
      {"mode", [](json& j) { j["run"]["modes"] = {"lazy"}; }, {"\"lazy\"", "valid: eager, graph"}},
      {"l2", [](json& j) { j["run"]["l2"] = "warm"; }, {"\"warm\"", "valid: cold, hot"}},
      {"max noise", [](json& j) { j["run"]["max_noise_pct"] = "low"; },
       {"\"run.max_noise_pct\"", "number"}},
      {"expected verdict", [](json& j) { j["expected_verdict"] = "ERROR"; },
       {"\"ERROR\"", "valid: PASS, FAIL, INCONCLUSIVE"}},
      {"missing probe", [](json& j) { j.erase("probe"); }, {"\"probe\" is missing"}},
      {"missing reproduces", [](json& j) { j.erase("reproduces"); }, {"\"reproduces\" is missing"}},
      {"run not an object", [](json& j) { j["run"] = json::array(); }, {"run", "object"}},
      {"shape neither name nor object", [](json& j) { j["run"]["shapes"] = {42}; },
       {"\"run.shapes[0]\"", "42"}},
      {"newer schema", [](json& j) { j["schema_version"] = 2; },
       {"case schema version 2", "newer moebench"}},
      {"another schema", [](json& j) { j["schema"] = "moebench.shape"; },
       {"not a moebench case file"}},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.what);
    json j = valid_case();
    b.edit(j);
    try {
      parse_case_file(j, "case file 'x.json'");
      FAIL("accepted");
    } catch (const moe::UsageError& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find("x.json") != std::string::npos);
      for (const std::string& part : b.expect) CHECK(msg.find(part) != std::string::npos);
    }
  }
}

TEST_CASE("moebench repro: malformed case files and reports exit 2 naming the problem") {
  const auto dir = moe::test::scratch_dir("repro-bad");
  json unknown_probe = valid_case();
  unknown_probe["probe"] = "warp-drive";
  json unknown_mutation = valid_case();
  unknown_mutation["run"]["mutation"] = "free-twice";
  json unknown_field = valid_case();
  unknown_field["run"]["shape"] = {"tiny"};
  json newer_case = valid_case();
  newer_case["schema_version"] = 7;
  json bad_shape = valid_case();
  bad_shape["run"]["shapes"] = {json{{"name", "broken"}, {"hidden", -1}}};

  json rep = json::parse(moe::test::read_text(data_file("reports/h200-copy.json")));
  json report_unknown_probe = rep;
  report_unknown_probe["cases"][0]["probe"] = "warp-drive";
  json report_newer = rep;
  report_newer["schema_version"] = 2;
  json report_bad_m = rep;
  report_bad_m["options"]["m"] = "1,8";
  json report_bad_mutation = rep;
  report_bad_mutation["cases"][1]["mutation"] = "free-twice";
  json report_empty = rep;
  report_empty["cases"] = json::array();

  struct Bad {
    std::string file;
    std::vector<std::string> expect;
  };
  const Bad bad[] = {
      {write(dir, "unknown-probe.json", unknown_probe),
       {"\"probe\"", "unknown probe 'warp-drive'", "valid probes:", "copy"}},
      {write(dir, "unknown-mutation.json", unknown_mutation),
       {"\"run.mutation\"", "free-twice", "noop-timing-barrier"}},
      {write(dir, "unknown-field.json", unknown_field), {"unknown field \"run.shape\""}},
      {write(dir, "newer-case.json", newer_case), {"case schema version 7"}},
      {write(dir, "bad-shape.json", bad_shape), {"\"run.shapes[0]\""}},
      {write(dir, "report-unknown-probe.json", report_unknown_probe),
       {"unknown probe 'warp-drive'", "case warp-drive/read", "valid probes:"}},
      {write(dir, "report-newer.json", report_newer), {"schema version 2", "newer moebench"}},
      {write(dir, "report-bad-m.json", report_bad_m), {"\"options.m\"", "array"}},
      {write(dir, "report-bad-mutation.json", report_bad_mutation), {"free-twice"}},
      {write(dir, "report-empty.json", report_empty), {"no cases"}},
      {write(dir, "neither.json", json{{"schema", "moebench.shape"}}),
       {"neither a moebench case file nor a report", "moebench.case", "moebench.report"}},
      {(dir / "missing.json").string(), {"cannot be opened"}},
  };
  {
    std::ofstream(dir / "not-json.json") << "{ \"schema\": ";
  }
  const Bad not_json{(dir / "not-json.json").string(), {"not valid JSON"}};
  for (const Bad& b : {bad[0], bad[1], bad[2], bad[3], bad[4], bad[5], bad[6], bad[7], bad[8],
                       bad[9], bad[10], bad[11], not_json}) {
    CAPTURE(b.file);
    for (bool dry : {true, false}) {
      const auto r = dry ? moebench("repro", b.file, "--dry-run")
                         : moebench("repro", b.file, "-o", (dir / "out.json").string());
      CAPTURE(r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(b.file) != std::string::npos);
      for (const std::string& part : b.expect) CHECK(r.err.find(part) != std::string::npos);
    }
  }
  CHECK_FALSE(std::filesystem::exists(dir / "out.json"));  // nothing ran
}

TEST_CASE("moebench repro --dry-run: a report reruns its probes, options and mutations") {
  const auto r = moebench("repro", data_file("reports/h200-copy-mutations.json"), "--dry-run");
  REQUIRE(r.exit_code == 0);
  // One run without and one with the mutation its cases were recorded under.
  CHECK(r.err.find("2 run(s)") != std::string::npos);
  CHECK(r.err.find("--mutation noop-timing-barrier") != std::string::npos);
  // The recorded options: shape objects, M, the copy buffer size.
  CHECK(r.err.find("--shape deepseek-v2-lite") != std::string::npos);
  CHECK(r.err.find("--m 1,8") != std::string::npos);
  CHECK(r.err.find("--copy-bytes 1073741824") != std::string::npos);
  // A report from before the host pass records no host_samples: the default reruns it.
  CHECK(r.err.find("--host-samples 100") != std::string::npos);
  json recorded = json::parse(moe::test::read_text(data_file("reports/h200-copy-mutations.json")));
  recorded["options"]["host_samples"] = 7;
  const auto dir = moe::test::scratch_dir("repro-host-samples");
  const auto h = moebench("repro", write(dir, "report.json", recorded), "--dry-run");
  REQUIRE(h.exit_code == 0);
  CHECK(h.err.find("--host-samples 7") != std::string::npos);
  // Older reports record neither the layer cap nor the stream blocker: no cap, blocker on.
  CHECK(r.err.find("--max-layers 0") != std::string::npos);
  CHECK(r.err.find("--no-stream-blocker") == std::string::npos);
  CHECK(r.err.find("--barrier-reps 300") != std::string::npos);  // nor the barrier's loop length
  recorded["options"]["max_layers"] = 2;
  recorded["options"]["stream_blocker"] = false;
  recorded["options"]["barrier_reps"] = 16;
  const auto sb = moebench("repro", write(dir, "report-sanitizer.json", recorded), "--dry-run");
  REQUIRE(sb.exit_code == 0);
  CHECK(sb.err.find("--max-layers 2") != std::string::npos);
  CHECK(sb.err.find("--no-stream-blocker") != std::string::npos);
  CHECK(sb.err.find("--barrier-reps 16") != std::string::npos);
  // ep-step's --exchange is rerun with ep-step only: these runs of copy go without it.
  recorded["options"]["exchanges"] = json::array({"sendrecv"});
  const auto ex = moebench("repro", write(dir, "report-exchanges.json", recorded), "--dry-run");
  REQUIRE(ex.exit_code == 0);
  CHECK(ex.err.find("--exchange") == std::string::npos);
  // Every recorded case and its verdict is expected back.
  CHECK(r.out.find("copy/read/mode=read") != std::string::npos);
  CHECK(r.out.find("copy/memcpy/mode=memcpy/mutation=noop-timing-barrier") != std::string::npos);

  const auto c = moebench("repro", data_file("cases/copy-read-ceiling.json"), "--dry-run");
  REQUIRE(c.exit_code == 0);
  CHECK(c.err.find("moebench run copy") != std::string::npos);
  CHECK(c.err.find("--min-time 0.2") != std::string::npos);
  CHECK(c.out.find("copy-read-ceiling") != std::string::npos);
}

TEST_CASE("moebench repro: a valid case file passes validation and reaches the GPU") {
  // Without a GPU the run stops at opening the device (exit 3); with one, it reproduces (0).
  const auto dir = moe::test::scratch_dir("repro-run");
  const auto out = (dir / "repro.json").string();
  const auto r = moebench("repro", data_file("cases/copy-read-ceiling.json"), "-o", out);
  CAPTURE(r.err);
  if (r.exit_code == 3) {
    CHECK(r.err.find("GPU") != std::string::npos);
    return;
  }
  CHECK(r.exit_code == 0);
  const json j = json::parse(moe::test::read_text(out));
  CHECK(j.at("extra").at("repro").at("reproduced") == true);
  CHECK(j.at("extra").at("repro").at("source_kind") == "case");
}
