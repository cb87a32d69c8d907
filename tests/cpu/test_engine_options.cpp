// The engine switches as one value: parsing from the environment and --switch, the report
// block, its round trip, and what `env`, `list switches`, `run` and `compare` make of them.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "common/errors.hpp"
#include "reports/report_writer.hpp"
#include "engine/engine_options.hpp"
#include "reports/compare.hpp"
#include "support/cli_runner.hpp"

using moe::EngineOptions;
using moe::EngineSwitch;

namespace {

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) { ::setenv(n.c_str(), v.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

// A value of `s` other than its default.
std::string other_value(const EngineSwitch& s) {
  for (std::string_view v : s.values)
    if (v != s.default_value) return std::string(v);
  FAIL("switch " << s.name << " has no value besides its default");
  return "";
}

}  // namespace

TEST_CASE("every switch has a default among its values, an environment variable and a meaning") {
  std::set<std::string_view> names, envs;
  for (const EngineSwitch& s : moe::engine_switches()) {
    CAPTURE(s.name);
    CHECK(names.insert(s.name).second);
    CHECK(envs.insert(s.env).second);
    CHECK(s.env.starts_with("MOE_"));
    REQUIRE(s.values.size() >= 2);
    CHECK(s.values.front() == s.default_value);
    CHECK_FALSE(s.meaning.empty());
  }
  CHECK(moe::engine_switches().size() == 10);
}

TEST_CASE("defaults: every switch at its default, and the kernels' defaults") {
  const EngineOptions o;
  CHECK(o.forward() == moe::kernels::ForwardOptions{});
  for (const EngineSwitch& s : moe::engine_switches()) {
    CHECK(o.value(s.name) == s.default_value);
    CHECK(o.is_default(s.name));
  }
  const nlohmann::json j = o.to_json();
  CHECK(j.size() == moe::engine_switches().size());
  CHECK(j.at("pdl") == nlohmann::json{{"value", "on"}, {"default", true}, {"source", "default"}});
}

TEST_CASE("each switch, set to another value, changes its own field of the forward's options") {
  for (const EngineSwitch& s : moe::engine_switches()) {
    CAPTURE(s.name);
    EngineOptions o;
    o.set(s.name, other_value(s), "--switch");
    CHECK(o.value(s.name) == other_value(s));
    CHECK_FALSE(o.is_default(s.name));
    CHECK_FALSE(o.forward() == moe::kernels::ForwardOptions{});
    // Only that switch moved.
    for (const EngineSwitch& t : moe::engine_switches())
      if (t.name != s.name) CHECK(o.is_default(t.name));
    CHECK(o.to_json().at(std::string(s.name)).at("source") == "--switch");
  }
  EngineOptions o;
  o.assign("pdl=off", "--switch");
  CHECK_FALSE(o.forward().programmatic_launch);
  o.assign("int4-decode=simt", "--switch");
  CHECK(o.forward().int4_decode == moe::kernels::Int4Decode::simt);
  o.assign("route-select=rounds", "--switch");
  CHECK(o.forward().top_k_select == moe::kernels::TopKSelect::rounds);
  o.assign("gemm=mma", "--switch");
  CHECK(o.forward().gemm == moe::kernels::GemmFamily::mma);
  CHECK(moe::kernels::int4_layout(o.forward()) == moe::kernels::Int4Layout::mma_fragments);
  o.assign("gemm=stream", "--switch");
  CHECK(o.forward().gemm == moe::kernels::GemmFamily::stream);
  CHECK(o.value("gemm") == "stream");
  CHECK(moe::kernels::int4_layout(o.forward()) == moe::kernels::Int4Layout::stream_tiles);  // all it reads
  o.assign("gemm=legacy", "--switch");
  CHECK(moe::kernels::int4_layout(o.forward()) == moe::kernels::Int4Layout::rows);
  CHECK(o.forward().tiles == moe::kernels::TensorCoreTiles::automatic);  // the wmma tiles by default
  o.assign("tiles=wgmma", "--switch");
  CHECK(o.forward().tiles == moe::kernels::TensorCoreTiles::wgmma);
  CHECK(o.value("tiles") == "wgmma");
  CHECK(moe::kernels::int4_layout(o.forward()) == moe::kernels::Int4Layout::rows);  // it reads the row layout
  CHECK(o.forward().ep_compute == moe::kernels::EpCompute::rows);  // the per-row kernel by default
  o.assign("ep-compute=grouped", "--switch");
  CHECK(o.forward().ep_compute == moe::kernels::EpCompute::grouped);
  o.assign("route-cluster=0", "--switch");  // 0 and 1 as the environment variables take them
  CHECK_FALSE(o.forward().cluster_route);
  CHECK(o.value("route-cluster") == "off");
}

TEST_CASE("tiles=auto runs the wgmma tiles on sm_90a from M = 1024 and the wmma tiles elsewhere; the names force one") {
  using moe::kernels::runs_wgmma_tiles;
  using moe::kernels::TensorCoreTiles;
  using moe::kernels::WeightFormat;
  moe::kernels::ForwardOptions o;  // tiles=auto
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4}) {
    CAPTURE(static_cast<int>(f));
    CHECK_FALSE(runs_wgmma_tiles(o, f, 2048, 1408, 1023, 90));
    CHECK(runs_wgmma_tiles(o, f, 2048, 1408, 1024, 90));
    CHECK(runs_wgmma_tiles(o, f, 2880, 2880, 16384, 90));
    for (int sm : {80, 89, 100}) CHECK_FALSE(runs_wgmma_tiles(o, f, 2048, 1408, 4096, sm));  // wgmma is sm_90a's
  }
  CHECK(runs_wgmma_tiles(o, WeightFormat::bf16, 96, 168, 4096, 90));        // 8-element chunks
  CHECK_FALSE(runs_wgmma_tiles(o, WeightFormat::int4, 96, 168, 4096, 90));  // 168 codes: not whole 32-code chunks
  o.tiles = TensorCoreTiles::wgmma;
  CHECK(runs_wgmma_tiles(o, WeightFormat::bf16, 2048, 1408, 5, 90));
  CHECK_FALSE(runs_wgmma_tiles(o, WeightFormat::bf16, 2048, 1408, 5, 80));
  o.tiles = TensorCoreTiles::wmma;
  CHECK_FALSE(runs_wgmma_tiles(o, WeightFormat::bf16, 2048, 1408, 4096, 90));
}

TEST_CASE("gemm=auto runs the mma family for bf16 at 8..16 tokens and for int4 from the decode path's end to 64, on sm_80+") {
  using moe::kernels::GemmFamily;
  using moe::kernels::Int4Decode;
  using moe::kernels::Int4Layout;
  using moe::kernels::WeightFormat;
  using moe::kernels::runs_mma_gemm;
  moe::kernels::ForwardOptions automatic;
  REQUIRE(automatic.gemm == GemmFamily::automatic);  // the default
  CHECK(moe::kernels::int4_layout(automatic) == Int4Layout::rows);  // which every kernel reads
  auto mma_ms = [](const moe::kernels::ForwardOptions& o, WeightFormat f) {
    std::set<int> ms;
    for (int m = 1; m <= 512; ++m)
      if (runs_mma_gemm(o, f, m, false, 90)) ms.insert(m);
    return ms;
  };
  CHECK(mma_ms(automatic, WeightFormat::bf16) == std::set<int>{8, 9, 10, 11, 12, 13, 14, 15, 16});
  const std::set<int> int4 = mma_ms(automatic, WeightFormat::int4);
  CHECK(int4.size() == 64 - 8);
  CHECK(*int4.begin() == 9);  // the decode kernels to M = 8
  CHECK(*int4.rbegin() == moe::kernels::kMmaAutoMaxTokensInt4);
  moe::kernels::ForwardOptions simt = automatic;
  simt.int4_decode = Int4Decode::simt;  // SIMT decode ends at M = 2: the family from 3
  CHECK(*mma_ms(simt, WeightFormat::int4).begin() == 3);
  for (int m : {1, 8, 16, 64}) {
    CAPTURE(m);
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4}) {
      CHECK_FALSE(runs_mma_gemm(automatic, f, m, true, 90));   // Llama-4's scaled input
      CHECK_FALSE(runs_mma_gemm(automatic, f, m, false, 75));  // no bf16 mma.sync
    }
  }
  moe::kernels::ForwardOptions named = automatic;
  named.gemm = GemmFamily::legacy;
  for (int m : {1, 8, 16, 64})
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4}) CHECK_FALSE(runs_mma_gemm(named, f, m, false, 90));
  named.gemm = GemmFamily::mma;
  for (int m : {1, 8, 16, 64}) {
    CHECK(runs_mma_gemm(named, WeightFormat::bf16, m, false, 90));
    CHECK(runs_mma_gemm(named, WeightFormat::int4, m, false, 90));
  }
  // The stream family runs only when named, and then no other family does.
  CHECK_FALSE(moe::kernels::runs_stream_gemm(automatic));
  named.gemm = GemmFamily::stream;
  CHECK(moe::kernels::runs_stream_gemm(named));
  for (int m : {1, 8, 16, 64})
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4}) CHECK_FALSE(runs_mma_gemm(named, f, m, false, 90));
}

TEST_CASE("a layer preloads exactly the expert GEMM families its forward can run at some M") {
  using moe::kernels::ExpertGemmFamilies;
  using moe::kernels::GemmFamily;
  using moe::kernels::WeightFormat;
  using moe::kernels::expert_gemm_families;
  moe::kernels::ForwardOptions o;  // gemm=auto
  // Each family is preloaded iff some M in 1..512 runs it (runs_mma_gemm, the path by M).
  for (GemmFamily g : {GemmFamily::automatic, GemmFamily::legacy, GemmFamily::mma})
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4})
      for (bool scaled : {false, true})
        for (int sm : {75, 90}) {
          o.gemm = g;
          CAPTURE(static_cast<int>(g));
          CAPTURE(static_cast<int>(f));
          CAPTURE(scaled);
          CAPTURE(sm);
          bool any_mma = false, any_legacy = false;
          for (int m = 1; m <= 512; ++m) {
            const bool mma = moe::kernels::runs_mma_gemm(o, f, m, scaled, sm);
            any_mma |= mma;
            any_legacy |= !mma;
          }
          CHECK(expert_gemm_families(o, f, scaled, sm) == ExpertGemmFamilies{any_mma, any_legacy, false});
        }
  o.gemm = GemmFamily::automatic;
  CHECK(expert_gemm_families(o, WeightFormat::bf16, false, 90) == ExpertGemmFamilies{true, true});
  CHECK(expert_gemm_families(o, WeightFormat::int4, false, 90) == ExpertGemmFamilies{true, true});
  CHECK(expert_gemm_families(o, WeightFormat::int4, true, 90) == ExpertGemmFamilies{false, true});  // Llama-4
  o.gemm = GemmFamily::stream;  // the stream family alone, at every M
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4})
    CHECK(expert_gemm_families(o, f, false, 90) == ExpertGemmFamilies{false, false, true});
}

TEST_CASE("bad names and values are refused, naming the valid ones") {
  EngineOptions o;
  CHECK_THROWS_WITH_AS(o.assign("pdl", "--switch"), doctest::Contains("NAME=VALUE"), moe::UsageError);
  CHECK_THROWS_WITH_AS(o.assign("=on", "--switch"), doctest::Contains("NAME=VALUE"), moe::UsageError);
  CHECK_THROWS_WITH_AS(o.assign("warp=on", "--switch"),
                       doctest::Contains("valid: pdl, route-cluster"), moe::UsageError);
  CHECK_THROWS_WITH_AS(o.assign("pdl=maybe", "--switch"), doctest::Contains("valid: on, off"),
                       moe::UsageError);
  CHECK_THROWS_WITH_AS(o.set("int4-decode", "foo", "MOE_INT4_DECODE"),
                       doctest::Contains("MOE_INT4_DECODE: 'foo'"), moe::UsageError);
  CHECK_THROWS_WITH_AS(o.set("int4-decode", "foo", "MOE_INT4_DECODE"),
                       doctest::Contains("valid: auto, simt, tensor_cores"), moe::UsageError);
  CHECK(o.forward() == moe::kernels::ForwardOptions{});  // nothing changed on the way
}

TEST_CASE("the environment variables set the switches, and an invalid one is an error") {
  {
    const ScopedEnv pdl("MOE_PDL", "0"), select("MOE_ROUTE_SELECT", "ranks");
    const EngineOptions o = EngineOptions::from_environment();
    CHECK_FALSE(o.forward().programmatic_launch);
    CHECK(o.forward().top_k_select == moe::kernels::TopKSelect::ranks);
    CHECK(o.to_json().at("pdl").at("source") == "MOE_PDL");
    CHECK(o.to_json().at("pdl").at("default") == false);
    CHECK(o.is_default("route-cluster"));
  }
  {
    const ScopedEnv pdl("MOE_PDL", "1");  // set, but to the default
    const EngineOptions o = EngineOptions::from_environment();
    CHECK(o.is_default("pdl"));
    CHECK(o.to_json().at("pdl").at("source") == "MOE_PDL");
  }
  {
    const ScopedEnv gemm("MOE_GEMM", "mma");
    const EngineOptions o = EngineOptions::from_environment();
    CHECK(o.forward().gemm == moe::kernels::GemmFamily::mma);
    CHECK(o.to_json().at("gemm") == nlohmann::json{{"value", "mma"}, {"default", false}, {"source", "MOE_GEMM"}});
  }
  {
    const ScopedEnv gemm("MOE_GEMM", "fast");
    CHECK_THROWS_WITH_AS(EngineOptions::from_environment(), doctest::Contains("valid: auto, legacy, mma"),
                         moe::UsageError);
  }
  const ScopedEnv bad("MOE_INT4_DECODE", "foo");
  CHECK_THROWS_AS(EngineOptions::from_environment(), moe::UsageError);
}

TEST_CASE("the report block reads back to the same options") {
  EngineOptions o;
  o.assign("pdl=off", "MOE_PDL");
  o.assign("int4-decode=tensor_cores", "--switch");
  const EngineOptions back = EngineOptions::from_json(o.to_json());
  CHECK(back.forward() == o.forward());
  CHECK(back.to_json() == o.to_json());
  CHECK_THROWS_AS(EngineOptions::from_json(nlohmann::json{{"pdl", {{"value", "sideways"}}}}),
                  moe::UsageError);
  CHECK_THROWS_AS(EngineOptions::from_json(nlohmann::json{{"nosuch", {{"value", "on"}}}}),
                  moe::UsageError);
  CHECK_THROWS_AS(EngineOptions::from_json(nlohmann::json{{"pdl", {{"value", 3}}}}), moe::UsageError);
}

// ---- what a user sees --------------------------------------------------------------------

TEST_CASE("moebench env records the switches in force; MOE_PDL=0 changes the record") {
  const auto plain = moe::test::run_shell(moe::test::quote(moe::test::moebench_binary()) + " env --format json");
  const auto off = moe::test::run_shell("MOE_PDL=0 " + moe::test::quote(moe::test::moebench_binary()) +
                                        " env --format json");
  REQUIRE(plain.exit_code == 0);
  REQUIRE(off.exit_code == 0);
  const nlohmann::json a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(off.out);
  CHECK(a.at("engine_options").at("pdl").at("value") == "on");
  CHECK(b.at("engine_options").at("pdl").at("value") == "off");
  CHECK(b.at("engine_options").at("pdl").at("default") == false);
  CHECK(a.at("engine_options") != b.at("engine_options"));
}

TEST_CASE("an invalid switch value in the environment or on the command line is exit 2") {
  const std::string bin = moe::test::quote(moe::test::moebench_binary());
  const auto env = moe::test::run_shell("MOE_INT4_DECODE=foo " + bin + " run bandwidth -o /tmp/moebench-switch.json");
  CHECK(env.exit_code == 2);
  CHECK(env.err.find("MOE_INT4_DECODE: 'foo'") != std::string::npos);
  CHECK(env.err.find("valid: auto, simt, tensor_cores") != std::string::npos);
  const auto gemm = moe::test::run_shell("MOE_GEMM=fast " + bin + " run bandwidth -o /tmp/moebench-switch.json");
  CHECK(gemm.exit_code == 2);
  CHECK(gemm.err.find("valid: auto, legacy, mma") != std::string::npos);
  const auto cli = moe::test::moebench("run", "bandwidth", "--switch", "pdl=maybe");
  CHECK(cli.exit_code == 2);
  CHECK(cli.err.find("valid: on, off") != std::string::npos);
  const auto name = moe::test::moebench("run", "bandwidth", "--switch", "warp=on");
  CHECK(name.exit_code == 2);
  CHECK(name.err.find("engine switch 'warp' is unknown") != std::string::npos);
}

TEST_CASE("moebench list switches shows each switch with its default and meaning") {
  const auto r = moe::test::moebench("list", "switches");
  REQUIRE(r.exit_code == 0);
  for (const EngineSwitch& s : moe::engine_switches()) {
    CHECK(r.out.find(std::string(s.name)) != std::string::npos);
    CHECK(r.out.find(std::string(s.env)) != std::string::npos);
    CHECK(r.out.find(std::string(s.meaning)) != std::string::npos);
  }
}

TEST_CASE("compare warns when the engine switches differ") {
  moe::report::Report base, head;
  EngineOptions off;
  off.assign("pdl=off", "MOE_PDL");
  base.options["engine"] = EngineOptions().to_json();
  head.options["engine"] = off.to_json();
  const auto diffs = moe::report::environment_differences(base, head);
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0].field == "engine switch pdl");
  CHECK(diffs[0].base == "on");
  CHECK(diffs[0].head == "off");
  CHECK_FALSE(diffs[0].expected);
  CHECK(moe::report::environment_differences(base, base).empty());
  // A report from before switches were recorded: one warning, not one per switch.
  moe::report::Report old;
  const auto against_old = moe::report::environment_differences(old, head);
  REQUIRE(against_old.size() == 1);
  CHECK(against_old[0].field == "engine switches");

  // Through the CLI, on two report files.
  const auto dir = moe::test::scratch_dir("compare-switches");
  const nlohmann::json recorded = nlohmann::json::parse(
      moe::test::read_text(moe::test::data_file("reports/h200-base.json")));
  nlohmann::json a = recorded, b = recorded;
  a["options"]["engine"] = base.options["engine"];
  b["options"]["engine"] = head.options["engine"];
  moe::report::write_file_atomically((dir / "a.json").string(), a.dump());
  moe::report::write_file_atomically((dir / "b.json").string(), b.dump());
  const auto r = moe::test::moebench("compare", (dir / "a.json").string(), (dir / "b.json").string());
  CHECK(r.out.find("engine switch pdl") != std::string::npos);
}
