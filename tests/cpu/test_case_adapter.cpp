// Case files that name an engine adapter (field run.engine): where repro looks for it
// (common/adapter_location.hpp), the refusal when it is not there, --engine winning over it, and
// the shipped case of the example adapter with the historic resident cache.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/adapter_location.hpp"
#include "common/errors.hpp"
#include "reports/case_file.hpp"
#include "support/cli_runner.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kExample = "libmoebench_stale_resident_cache_adapter.so";

json stale_case() {
  return json::parse(moe::test::read_text(fs::path(MOEBENCH_FIXTURES_DIR) / "cases/stale-resident-pointers-adapter.json"));
}

std::string write(const fs::path& dir, const std::string& name, const json& j) {
  std::ofstream(dir / name) << j.dump(2);
  return (dir / name).string();
}

void touch(const fs::path& file) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << "not an adapter";
}

}  // namespace

TEST_CASE("a case file's adapter: installed beside the binary, then the build tree, then refused naming both") {
  const fs::path root = moe::test::scratch_dir("case-adapter-location");
  moe::AdapterSearch s;
  s.executable = root / "prefix/bin/moebench";
  s.build_dir = root / "build";
  s.case_file = root / "cases/x.json";
  const std::string origin = "case file 'x.json': field \"run.engine\"";
  fs::create_directories(s.executable.parent_path());  // the installed folder is found through BIN/..

  const std::string refusal = "case file 'x.json': field \"run.engine\" = \"libmine.so\": no such adapter (looked at " +
                              (root / "prefix/lib/moebench/adapters/libmine.so").string() + ", " +
                              (root / "build/adapters/libmine.so").string() +
                              "); build it beside moebench or give --engine PATH";
  CHECK_THROWS_WITH_AS(moe::locate_case_adapter("libmine.so", s, origin), doctest::Contains(refusal.c_str()),
                       moe::UsageError);
  touch(root / "build/adapters/libmine.so");
  CHECK(moe::locate_case_adapter("libmine.so", s, origin) == fs::weakly_canonical(root / "build/adapters/libmine.so"));
  touch(root / "prefix/lib/moebench/adapters/libmine.so");  // the installed one wins
  CHECK(moe::locate_case_adapter("libmine.so", s, origin) ==
        fs::weakly_canonical(root / "prefix/lib/moebench/adapters/libmine.so"));
  // A path is relative to the case file, and only there.
  CHECK_THROWS_AS(moe::locate_case_adapter("adapters/libmine.so", s, origin), moe::UsageError);
  touch(root / "cases/adapters/libmine.so");
  CHECK(moe::locate_case_adapter("adapters/libmine.so", s, origin) ==
        fs::weakly_canonical(root / "cases/adapters/libmine.so"));
}

TEST_CASE("case file: run.engine is read, written back, and refused empty or of the wrong type") {
  const moe::report::CaseFile c = moe::report::parse_case_file(stale_case(), "t");
  REQUIRE(c.engine.has_value());
  CHECK(*c.engine == kExample);
  CHECK_FALSE(c.mutation.has_value());
  CHECK(moe::report::to_json(c).at("run").at("engine") == kExample);
  json empty = stale_case();
  empty["run"]["engine"] = "";
  CHECK_THROWS_WITH_AS(moe::report::parse_case_file(empty, "t"),
                       doctest::Contains("t: field \"run.engine\" is empty; give an adapter library's file name"),
                       moe::UsageError);
  json number = stale_case();
  number["run"]["engine"] = 3;
  CHECK_THROWS_WITH_AS(moe::report::parse_case_file(number, "t"),
                       doctest::Contains("field \"run.engine\" must be a string"), moe::UsageError);
}

TEST_CASE("repro of a case naming an adapter: found in the build tree, --engine wins, a missing one is exit 2") {
  const std::string shipped = (fs::path(MOEBENCH_FIXTURES_DIR) / "cases/stale-resident-pointers-adapter.json").string();
  const auto found = moe::test::moebench("repro", shipped, "--dry-run");
  CAPTURE(found.err);
  CHECK(found.exit_code == 0);
  CHECK(found.err.find("moebench run two-engine") != std::string::npos);
  CHECK(found.err.find("--engine " + std::string(MOEBENCH_BUILD_DIR) + "/adapters/" + kExample) != std::string::npos);

  // --engine names another file: that one runs, the case's is not looked for.
  const auto dir = moe::test::scratch_dir("case-adapter-repro");
  json missing = stale_case();
  missing["run"]["engine"] = "libnot_built_anywhere.so";
  const std::string file = write(dir, "missing.json", missing);
  const auto own = moe::test::moebench("repro", file, "--engine", MOEBENCH_OWN_ADAPTER, "--dry-run");
  CAPTURE(own.err);
  CHECK(own.exit_code == 0);
  CHECK(own.err.find(std::string("--engine ") + MOEBENCH_OWN_ADAPTER) != std::string::npos);

  // A path is the case file's neighbour, loaded and checked like any --engine before anything runs.
  touch(dir / "adapters/libnot_an_adapter.so");
  json beside = stale_case();
  beside["run"]["engine"] = "adapters/libnot_an_adapter.so";
  const auto checked = moe::test::moebench("repro", write(dir, "beside.json", beside), "--dry-run");
  CAPTURE(checked.err);
  CHECK(checked.exit_code == 2);
  CHECK(checked.err.find("'" + (dir / "adapters/libnot_an_adapter.so").string() + "': not a shared library") !=
        std::string::npos);

  // Without --engine, a name found nowhere is one line naming the field, the file and where it looked.
  const auto refused = moe::test::moebench("repro", file, "--dry-run");
  CAPTURE(refused.err);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("case file '" + file + "': field \"run.engine\" = \"libnot_built_anywhere.so\": no such "
                         "adapter (looked at ") != std::string::npos);
  CHECK(refused.err.find(std::string(MOEBENCH_BUILD_DIR) + "/adapters/libnot_built_anywhere.so") != std::string::npos);
}
