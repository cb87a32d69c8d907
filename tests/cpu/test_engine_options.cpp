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

moe::kernels::MoeDims dims(moe::kernels::WeightFormat format, int hidden, int inter) {
  moe::kernels::MoeDims d;
  d.hidden = hidden;
  d.inter = inter;
  d.experts = 64;
  d.top_k = 6;
  d.format = format;
  return d;
}
moe::kernels::MoeDims int4_dims(int hidden, int inter) { return dims(moe::kernels::WeightFormat::int4, hidden, inter); }
// Where a layer built under o on sm generates its int4 weights.
moe::kernels::Int4Layout generated(const moe::kernels::ForwardOptions& o, const moe::kernels::MoeDims& d, int sm) {
  return moe::kernels::int4_layout(o, d, sm);
}

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
  CHECK(moe::engine_switches().size() == 13);
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
  const moe::kernels::MoeDims int4 = int4_dims(2048, 1408);
  o.assign("gemm=mma", "--switch");
  CHECK(o.forward().gemm == moe::kernels::GemmFamily::mma);
  CHECK(moe::kernels::int4_layout(o.forward(), int4, 90) == moe::kernels::Int4Layout::mma_fragments);
  o.assign("gemm=stream", "--switch");
  CHECK(o.forward().gemm == moe::kernels::GemmFamily::stream);
  CHECK(o.value("gemm") == "stream");
  CHECK(moe::kernels::int4_layout(o.forward(), int4, 90) == moe::kernels::Int4Layout::stream_tiles);  // all it reads
  o.assign("gemm=legacy", "--switch");
  CHECK(moe::kernels::int4_layout(o.forward(), int4, 90) == moe::kernels::Int4Layout::rows);
  CHECK(o.forward().tiles == moe::kernels::TensorCoreTiles::automatic);  // the wmma tiles by default
  o.assign("tiles=wgmma", "--switch");
  CHECK(o.forward().tiles == moe::kernels::TensorCoreTiles::wgmma);
  CHECK(o.value("tiles") == "wgmma");
  CHECK(moe::kernels::int4_layout(o.forward(), int4, 90) == moe::kernels::Int4Layout::rows);  // it reads both
  CHECK(o.forward().stream_int4);  // int4 streams on sm_90a by default
  o.assign("gemm=auto", "--switch");
  CHECK(moe::kernels::int4_layout(o.forward(), int4, 90) == moe::kernels::Int4Layout::stream_tiles);
  o.assign("stream-int4=off", "--switch");  // int4 in rows, under the rule for rows
  CHECK(moe::kernels::int4_layout(o.forward(), int4, 90) == moe::kernels::Int4Layout::rows);
  CHECK_FALSE(moe::kernels::streams_int4(o.forward(), int4, 90));
  CHECK(moe::kernels::runs_mma_gemm(o.forward(), int4, moe::kernels::Int4Layout::rows, 16, 90));
  CHECK(o.forward().ep_compute == moe::kernels::EpCompute::rows);  // the per-row kernel by default
  o.assign("ep-compute=grouped", "--switch");
  CHECK(o.forward().ep_compute == moe::kernels::EpCompute::grouped);
  o.assign("route-cluster=0", "--switch");  // 0 and 1 as the environment variables take them
  CHECK_FALSE(o.forward().cluster_route);
  CHECK(o.value("route-cluster") == "off");
}

TEST_CASE("tiles=auto runs the wgmma tiles on sm_90a from M = 1024 (int4 in the stream tiles: at every M) and the wmma tiles elsewhere; the names force one") {
  using moe::kernels::Int4Layout;
  using moe::kernels::TensorCoreTiles;
  using moe::kernels::WeightFormat;
  const auto wgmma = [](const moe::kernels::ForwardOptions& o, const moe::kernels::MoeDims& d, int m, int sm) {
    return moe::kernels::runs_wgmma_tiles(o, d, generated(o, d, sm), m, sm);
  };
  moe::kernels::ForwardOptions o;  // tiles=auto
  o.gemm = moe::kernels::GemmFamily::legacy;  // int4 in rows
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4}) {
    CAPTURE(static_cast<int>(f));
    CHECK_FALSE(wgmma(o, dims(f, 2048, 1408), 1023, 90));
    CHECK(wgmma(o, dims(f, 2048, 1408), 1024, 90));
    CHECK(wgmma(o, dims(f, 2880, 2880), 16384, 90));
    for (int sm : {80, 89, 100}) CHECK_FALSE(wgmma(o, dims(f, 2048, 1408), 4096, sm));  // sm_90a's
  }
  CHECK(wgmma(o, dims(WeightFormat::bf16, 96, 168), 4096, 90));        // 8-element chunks
  CHECK_FALSE(wgmma(o, dims(WeightFormat::int4, 96, 168), 4096, 90));  // 168 codes: not whole 32-code chunks
  // gemm=auto: int4 in the stream tiles, which of the tiles only the wgmma ones read: every M.
  o.gemm = moe::kernels::GemmFamily::automatic;
  CHECK(wgmma(o, int4_dims(2048, 1408), 65, 90));
  CHECK_FALSE(moe::kernels::runs_wgmma_tiles(o, int4_dims(2048, 1408), Int4Layout::rows, 65, 90));  // an adapter's rows
  CHECK_FALSE(wgmma(o, dims(WeightFormat::bf16, 2048, 1408), 65, 90));
  CHECK_FALSE(wgmma(o, int4_dims(2048, 1408), 65, 80));
  o.tiles = TensorCoreTiles::wgmma;
  CHECK(wgmma(o, dims(WeightFormat::bf16, 2048, 1408), 5, 90));
  CHECK_FALSE(wgmma(o, dims(WeightFormat::bf16, 2048, 1408), 5, 80));
  o.tiles = TensorCoreTiles::wmma;
  CHECK_FALSE(wgmma(o, dims(WeightFormat::bf16, 2048, 1408), 4096, 90));
  CHECK_FALSE(wgmma(o, int4_dims(2048, 1408), 4096, 90));
  CHECK(generated(o, int4_dims(2048, 1408), 90) == Int4Layout::rows);  // tiles=wmma keeps int4 in rows
}

TEST_CASE("gemm=auto generates int4 in the stream tiles on sm_90a and streams it to M = 64; it reads the row layout too") {
  using moe::kernels::GemmFamily;
  using moe::kernels::Int4Layout;
  using moe::kernels::WeightFormat;
  using moe::kernels::runs_stream_gemm;
  moe::kernels::ForwardOptions automatic;
  REQUIRE(automatic.gemm == GemmFamily::automatic);  // the default
  const moe::kernels::MoeDims int4 = int4_dims(2048, 1408), bf16 = dims(WeightFormat::bf16, 2048, 1408);
  CHECK(moe::kernels::streams_int4(automatic, int4, 90));
  CHECK(generated(automatic, int4, 90) == Int4Layout::stream_tiles);
  for (int m = 1; m <= 4096; ++m) {
    CAPTURE(m);
    CHECK(runs_stream_gemm(automatic, int4, Int4Layout::stream_tiles, m) == (m <= moe::kernels::kStreamAutoMaxTokensInt4));
    CHECK_FALSE(moe::kernels::runs_mma_gemm(automatic, int4, Int4Layout::stream_tiles, m, 90));
    CHECK_FALSE(runs_stream_gemm(automatic, int4, Int4Layout::rows, m));  // rows: the rule for rows
    CHECK_FALSE(runs_stream_gemm(automatic, bf16, Int4Layout::stream_tiles, m));  // bf16 stays in rows
  }
  // Elsewhere int4 stays in rows, which every other kernel reads.
  for (int sm : {80, 89, 100}) {
    CAPTURE(sm);
    CHECK(generated(automatic, int4, sm) == Int4Layout::rows);
  }
  moe::kernels::MoeDims scaled = int4;
  scaled.scale_input = true;  // Llama-4: only the wmma gate_up reads it
  CHECK(generated(automatic, scaled, 90) == Int4Layout::rows);
  CHECK(generated(automatic, int4_dims(96, 168), 90) == Int4Layout::rows);  // not whole 32-code chunks
  CHECK(generated(automatic, int4_dims(2880, 2880), 90) == Int4Layout::stream_tiles);
  CHECK(moe::kernels::bf16_layout(automatic, bf16, 90) == moe::kernels::Bf16Layout::rows);  // stream-bf16 is off
  // What a forward accepts: automatic its own layout and rows (an engine adapter's weights); a
  // named family only its own.
  using moe::kernels::reads_int4_layout;
  CHECK(reads_int4_layout(automatic, int4, 90, Int4Layout::stream_tiles));
  CHECK(reads_int4_layout(automatic, int4, 90, Int4Layout::rows));
  CHECK_FALSE(reads_int4_layout(automatic, int4, 90, Int4Layout::mma_fragments));
  CHECK_FALSE(reads_int4_layout(automatic, int4, 80, Int4Layout::stream_tiles));  // no kernel reads it there
  moe::kernels::ForwardOptions named = automatic;
  named.gemm = GemmFamily::stream;
  CHECK_FALSE(reads_int4_layout(named, int4, 90, Int4Layout::rows));
  named.gemm = GemmFamily::legacy;
  CHECK_FALSE(reads_int4_layout(named, int4, 90, Int4Layout::stream_tiles));
}

TEST_CASE("stream-bf16=on: gemm=auto generates bf16 in the stage tiles on sm_90a, streams it to M = 64 and runs the wgmma tiles above; it reads rows too") {
  using moe::kernels::Bf16Layout;
  using moe::kernels::ExpertGemmKernels;
  using moe::kernels::GemmFamily;
  using moe::kernels::Int4Layout;
  using moe::kernels::WeightFormat;
  using moe::kernels::WeightLayouts;
  moe::kernels::ForwardOptions o;
  CHECK_FALSE(o.stream_bf16);  // off until its A/B on a GPU
  const moe::kernels::MoeDims bf16 = dims(WeightFormat::bf16, 2048, 1408), int4 = int4_dims(2048, 1408);
  CHECK_FALSE(moe::kernels::streams_bf16(o, bf16, 90));
  o.stream_bf16 = true;
  CHECK(moe::kernels::streams_bf16(o, bf16, 90));
  CHECK(moe::kernels::bf16_layout(o, bf16, 90) == Bf16Layout::stream_tiles);
  CHECK_FALSE(moe::kernels::streams_bf16(o, int4, 90));  // int4 has its own switch
  const WeightLayouts tiled{Int4Layout::rows, Bf16Layout::stream_tiles};
  for (int m = 1; m <= 4096; ++m) {
    CAPTURE(m);
    const bool decode_path = moe::kernels::takes_decode_path(moe::kernels::ForwardPath::automatic, o, bf16, m, 90);
    const ExpertGemmKernels k = moe::kernels::expert_gemm_kernels(o, bf16, tiled, m, 90, decode_path);
    CHECK(k == (m <= moe::kernels::kStreamAutoMaxTokensBf16 ? ExpertGemmKernels::stream : ExpertGemmKernels::wgmma_tiles));
    // Weights in rows (an adapter's) take the rule for rows: never the stream family.
    CHECK(moe::kernels::expert_gemm_kernels(o, bf16, WeightLayouts{}, m, 90, decode_path) != ExpertGemmKernels::stream);
  }
  // Elsewhere, for a scaled input, under tiles=wmma or for rows not cut into 32-k blocks: rows.
  for (int sm : {80, 89, 100}) CHECK(moe::kernels::bf16_layout(o, bf16, sm) == Bf16Layout::rows);
  moe::kernels::MoeDims scaled = bf16;
  scaled.scale_input = true;
  CHECK(moe::kernels::bf16_layout(o, scaled, 90) == Bf16Layout::rows);
  CHECK(moe::kernels::bf16_layout(o, dims(WeightFormat::bf16, 96, 168), 90) == Bf16Layout::rows);
  moe::kernels::ForwardOptions wmma = o;
  wmma.tiles = moe::kernels::TensorCoreTiles::wmma;
  CHECK(moe::kernels::bf16_layout(wmma, bf16, 90) == Bf16Layout::rows);
  // What a forward accepts: automatic its own layout and rows; a named family only its own.
  CHECK(moe::kernels::reads_bf16_layout(o, bf16, 90, Bf16Layout::stream_tiles));
  CHECK(moe::kernels::reads_bf16_layout(o, bf16, 90, Bf16Layout::rows));
  CHECK_FALSE(moe::kernels::reads_bf16_layout(o, bf16, 80, Bf16Layout::stream_tiles));  // no kernel reads it there
  moe::kernels::ForwardOptions named = o;
  named.gemm = GemmFamily::legacy;
  CHECK_FALSE(moe::kernels::reads_bf16_layout(named, bf16, 90, Bf16Layout::stream_tiles));
  named.gemm = GemmFamily::stream;
  CHECK_FALSE(moe::kernels::reads_bf16_layout(named, bf16, 90, Bf16Layout::rows));
  // The switch sets the field.
  EngineOptions e;
  e.assign("stream-bf16=on", "--switch");
  CHECK(e.forward().stream_bf16);
  CHECK(moe::kernels::bf16_layout(e.forward(), bf16, 90) == Bf16Layout::stream_tiles);
}

TEST_CASE("gemm=auto runs the mma family for bf16 at 8..16 tokens and for int4 in rows from the decode path's end to 64, on sm_80+") {
  using moe::kernels::GemmFamily;
  using moe::kernels::Int4Decode;
  using moe::kernels::Int4Layout;
  using moe::kernels::WeightFormat;
  moe::kernels::ForwardOptions automatic;
  const auto mma = [](const moe::kernels::ForwardOptions& o, const moe::kernels::MoeDims& d, int m, int sm) {
    return moe::kernels::runs_mma_gemm(o, d, generated(o, d, sm), m, sm);
  };
  auto mma_ms = [&](const moe::kernels::ForwardOptions& o, WeightFormat f, int sm) {
    std::set<int> ms;
    for (int m = 1; m <= 512; ++m)
      if (mma(o, dims(f, 2048, 1408), m, sm)) ms.insert(m);
    return ms;
  };
  CHECK(mma_ms(automatic, WeightFormat::bf16, 90) == std::set<int>{8, 9, 10, 11, 12, 13, 14, 15, 16});
  CHECK(mma_ms(automatic, WeightFormat::bf16, 80) == std::set<int>{8, 9, 10, 11, 12, 13, 14, 15, 16});
  CHECK(mma_ms(automatic, WeightFormat::int4, 90).empty());  // it streams there
  const std::set<int> int4 = mma_ms(automatic, WeightFormat::int4, 80);
  CHECK(int4.size() == 64 - 8);
  CHECK(*int4.begin() == 9);  // the decode kernels to M = 8
  CHECK(*int4.rbegin() == moe::kernels::kMmaAutoMaxTokensInt4);
  for (int m = 1; m <= 512; ++m)  // int4 handed over in rows on sm_90a: the rule for rows
    CHECK(moe::kernels::runs_mma_gemm(automatic, int4_dims(2048, 1408), Int4Layout::rows, m, 90) == (int4.count(m) > 0));
  moe::kernels::ForwardOptions simt = automatic;
  simt.int4_decode = Int4Decode::simt;  // SIMT decode ends at M = 2: the family from 3
  CHECK(*mma_ms(simt, WeightFormat::int4, 80).begin() == 3);
  for (int m : {1, 8, 16, 64}) {
    CAPTURE(m);
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4}) {
      moe::kernels::MoeDims scaled = dims(f, 2048, 1408);
      scaled.scale_input = true;
      CHECK_FALSE(mma(automatic, scaled, m, 90));              // Llama-4's scaled input
      CHECK_FALSE(mma(automatic, dims(f, 2048, 1408), m, 75));  // no bf16 mma.sync
    }
  }
  moe::kernels::ForwardOptions named = automatic;
  named.gemm = GemmFamily::legacy;
  for (int m : {1, 8, 16, 64})
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4}) {
      const moe::kernels::MoeDims d = dims(f, 2048, 1408);
      CHECK_FALSE(mma(named, d, m, 90));
      CHECK_FALSE(moe::kernels::runs_stream_gemm(named, d, generated(named, d, 90), m));
    }
  named.gemm = GemmFamily::mma;
  for (int m : {1, 8, 16, 64}) {
    CHECK(mma(named, dims(WeightFormat::bf16, 2048, 1408), m, 90));
    CHECK(mma(named, int4_dims(2048, 1408), m, 90));
  }
  // Named, the stream family runs at every M and no other family does.
  named.gemm = GemmFamily::stream;
  for (int m : {1, 8, 16, 64, 4096})
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4}) {
      const moe::kernels::MoeDims d = dims(f, 2048, 1408);
      CHECK(moe::kernels::runs_stream_gemm(named, d, generated(named, d, 90), m));
      CHECK_FALSE(mma(named, d, m, 90));
    }
}

TEST_CASE("a layer preloads exactly the expert GEMM kernels its forward can run at some M") {
  using moe::kernels::ExpertGemmFamilies;
  using moe::kernels::GemmFamily;
  using moe::kernels::Int4Layout;
  using moe::kernels::WeightFormat;
  using moe::kernels::expert_gemm_families;
  moe::kernels::ForwardOptions o;
  // Each kind is preloaded iff some M in 1..4096 runs it: the stream and mma families by their
  // rules, the decode kernels and tiles where neither runs, by the path's rule; for weights
  // where the layer generates them and, under gemm=auto, in rows (an adapter's).
  for (GemmFamily g : {GemmFamily::automatic, GemmFamily::legacy, GemmFamily::mma, GemmFamily::stream})
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4})
      for (bool scaled : {false, true})
        for (int sm : {75, 90})
          for (bool stream_bf16 : {false, true})
            for (bool rows : {false, true}) {
              o.gemm = g;
              o.stream_bf16 = stream_bf16;
              moe::kernels::MoeDims d = dims(f, 2048, 1408);
              d.scale_input = scaled;
              const moe::kernels::WeightLayouts layouts =
                  rows ? moe::kernels::WeightLayouts{}
                       : moe::kernels::WeightLayouts{generated(o, d, sm), moe::kernels::bf16_layout(o, d, sm)};
              if (f == WeightFormat::int4 ? !moe::kernels::reads_int4_layout(o, d, sm, layouts.int4)
                                          : !moe::kernels::reads_bf16_layout(o, d, sm, layouts.bf16))
                continue;
              CAPTURE(static_cast<int>(g));
              CAPTURE(static_cast<int>(f));
              CAPTURE(scaled);
              CAPTURE(sm);
              CAPTURE(stream_bf16);
              CAPTURE(rows);
              ExpertGemmFamilies seen;
              for (int m = 1; m <= 4096; ++m) {
                using moe::kernels::ExpertGemmKernels;
                const bool decode_path = moe::kernels::takes_decode_path(moe::kernels::ForwardPath::automatic, o, d, m, sm);
                const ExpertGemmKernels k = moe::kernels::expert_gemm_kernels(o, d, layouts, m, sm, decode_path);
                seen.stream |= k == ExpertGemmKernels::stream;
                seen.mma |= k == ExpertGemmKernels::mma;
                seen.decode |= k == ExpertGemmKernels::decode;
                seen.tiles |= k == ExpertGemmKernels::wgmma_tiles || k == ExpertGemmKernels::wmma_tiles;
              }
              CHECK(expert_gemm_families(o, d, layouts, sm) == seen);
            }
  o.gemm = GemmFamily::automatic;
  o.stream_bf16 = false;
  CHECK(expert_gemm_families(o, dims(WeightFormat::bf16, 2048, 1408), Int4Layout::rows, 90) ==
        ExpertGemmFamilies{true, true, true, false});
  o.stream_bf16 = true;  // bf16 in the stage tiles: the stream family, then the wgmma tiles
  CHECK(expert_gemm_families(o, dims(WeightFormat::bf16, 2048, 1408),
                             {Int4Layout::rows, moe::kernels::Bf16Layout::stream_tiles}, 90) ==
        ExpertGemmFamilies{false, false, true, true});
  o.stream_bf16 = false;
  CHECK(expert_gemm_families(o, int4_dims(2048, 1408), Int4Layout::stream_tiles, 90) ==
        ExpertGemmFamilies{false, false, true, true});
  CHECK(expert_gemm_families(o, int4_dims(2048, 1408), Int4Layout::rows, 90) == ExpertGemmFamilies{true, true, true, false});
  o.gemm = GemmFamily::stream;  // the stream family alone, at every M
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::int4})
    CHECK(expert_gemm_families(o, dims(f, 2048, 1408), Int4Layout::stream_tiles, 90) ==
          ExpertGemmFamilies{false, false, false, true});
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

TEST_CASE("the decode path: below sm_80 always, never for a scaled input, else by the request and M") {
  using moe::kernels::ForwardPath;
  using moe::kernels::takes_decode_path;
  const moe::kernels::ForwardOptions o;
  for (moe::kernels::WeightFormat f : {moe::kernels::WeightFormat::bf16, moe::kernels::WeightFormat::int4}) {
    moe::kernels::MoeDims d = dims(f, 2048, 1408);
    const int last = moe::kernels::decode_max_tokens(f, o.int4_decode);
    CAPTURE(static_cast<int>(f));
    CHECK(takes_decode_path(ForwardPath::automatic, o, d, last, 90));
    CHECK_FALSE(takes_decode_path(ForwardPath::automatic, o, d, last + 1, 90));
    CHECK(takes_decode_path(ForwardPath::decode, o, d, 4096, 90));
    CHECK_FALSE(takes_decode_path(ForwardPath::tensor_core, o, d, 1, 90));
    CHECK(takes_decode_path(ForwardPath::tensor_core, o, d, 4096, 75));
    d.scale_input = true;
    CHECK_FALSE(takes_decode_path(ForwardPath::automatic, o, d, 1, 90));
    CHECK_FALSE(takes_decode_path(ForwardPath::decode, o, d, 1, 90));
  }
}

TEST_CASE("down-rows=bf16 (the default) stores down's rows in bf16 only where the wgmma tiles run down") {
  using moe::kernels::ExpertGemmKernels;
  EngineOptions o;
  CHECK(o.forward().down_rows == moe::kernels::DownRows::bf16);  // the layer's A/B won at prefill sizes
  CHECK(o.is_default("down-rows"));
  o.assign("down-rows=fp32", "--switch");
  CHECK(o.forward().down_rows == moe::kernels::DownRows::fp32);
  CHECK_FALSE(moe::kernels::down_rows_in_bf16(o.forward(), ExpertGemmKernels::wgmma_tiles));
  o.assign("down-rows=bf16", "--switch");
  const moe::kernels::ForwardOptions& f = o.forward();
  CHECK(f.down_rows == moe::kernels::DownRows::bf16);
  CHECK(moe::kernels::down_rows_in_bf16(f, ExpertGemmKernels::wgmma_tiles));
  for (ExpertGemmKernels k : {ExpertGemmKernels::stream, ExpertGemmKernels::mma, ExpertGemmKernels::decode,
                              ExpertGemmKernels::wmma_tiles})
    CHECK_FALSE(moe::kernels::down_rows_in_bf16(f, k));
  CHECK(moe::kernels::down_rows_in_bf16(moe::kernels::ForwardOptions{}, ExpertGemmKernels::wgmma_tiles));
  CHECK_THROWS_AS(o.assign("down-rows=fp16", "--switch"), moe::UsageError);
}
