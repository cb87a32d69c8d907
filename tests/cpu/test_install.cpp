// `cmake --install BUILD --prefix P` gives a binary that runs away from its source tree: P/bin/
// moebench finds P/share/moebench/fixtures wherever P is moved, and without any fixtures folder
// it still knows the built-in shapes; the engine adapters go to P/lib/moebench/adapters, where a
// case file's run.engine is looked for first.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using moe::test::quote;

// `moebench ARGS` run as `binary`, from `cwd`, with MOEBENCH_FIXTURES unset.
moe::test::CliResult run_installed(const fs::path& binary, const fs::path& cwd,
                                   const std::string& args) {
  return moe::test::run_shell("cd " + quote(cwd.string()) + " && env -u MOEBENCH_FIXTURES " +
                              quote(binary.string()) + " " + args);
}

}  // namespace

TEST_CASE("an installed moebench runs from anywhere, with its own fixtures or the built-in shapes") {
  const fs::path root = moe::test::scratch_dir("install");
  const auto installed = moe::test::run_shell(quote(MOEBENCH_CMAKE) + " --install " +
                                              quote(MOEBENCH_BUILD_DIR) + " --prefix " +
                                              quote((root / "first").string()));
  CAPTURE(installed.out);
  CAPTURE(installed.err);
  REQUIRE(installed.exit_code == 0);
  CHECK(fs::exists(root / "first" / "share" / "moebench" / "fixtures" / "shapes" / "deepseek-v2-lite.json"));
  CHECK(fs::exists(root / "first" / "share" / "moebench" / "fixtures" / "cases" / "stale-resident-pointers.json"));

  // Moved whole: the binary finds its fixtures beside itself, not where it was installed, and
  // not in the source tree (it is not in the build tree).
  fs::rename(root / "first", root / "moved");
  const fs::path binary = root / "moved" / "bin" / "moebench";
  const fs::path cwd = root / "elsewhere";
  fs::create_directories(cwd);
  const fs::path fixtures = root / "moved" / "bin" / ".." / "share" / "moebench" / "fixtures";

  const auto help = run_installed(binary, cwd, "run --help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("../share/moebench/fixtures beside the binary") != std::string::npos);

  auto list = run_installed(binary, cwd, "list shapes");
  CAPTURE(list.err);
  CHECK(list.exit_code == 0);
  CHECK(list.out.find("deepseek-v2-lite") != std::string::npos);
  CHECK(list.out.find("shapes from: " + fixtures.lexically_normal().string() + " (beside the binary)") !=
        std::string::npos);
  auto dry = run_installed(binary, cwd, "run bandwidth --dry-run --shape deepseek-v2-lite --m 1");
  CAPTURE(dry.err);
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("deepseek-v2-lite") != std::string::npos);
  // A case file by its installed path, checked without a GPU.
  const auto repro = run_installed(
      binary, cwd, "repro --dry-run " + quote((fixtures / "cases" / "stale-resident-pointers.json").string()));
  CAPTURE(repro.err);
  CHECK(repro.exit_code == 0);
  // The engine adapters are installed beside it, load there, and a case file naming one finds the
  // installed file (lib/moebench/adapters), not the build tree's.
  const fs::path adapters = fs::weakly_canonical(root / "moved" / "lib" / "moebench" / "adapters");
  std::vector<std::string> installed_adapters{"libmoebench_engine_adapter.so",
                                              "libmoebench_stale_resident_cache_adapter.so"};
  if (!std::string(MOEBENCH_CUBLAS_ADAPTER).empty())
    installed_adapters.push_back("libmoebench_cublas_per_expert_adapter.so");
  for (const std::string& a : installed_adapters) {
    CAPTURE(a);
    REQUIRE(fs::exists(adapters / a));
    const auto loaded = run_installed(
        binary, cwd, "run two-engine --dry-run --shape tiny --weight-format bf16 --engine " + quote((adapters / a).string()));
    CAPTURE(loaded.err);
    CHECK(loaded.exit_code == 0);
  }
  const auto through = run_installed(
      binary, cwd,
      "repro --dry-run " + quote((fixtures / "cases" / "stale-resident-pointers-adapter.json").string()));
  CAPTURE(through.err);
  CHECK(through.exit_code == 0);
  CHECK(through.err.find("--engine " + (adapters / "libmoebench_stale_resident_cache_adapter.so").string()) !=
        std::string::npos);

  // No fixtures folder at all: the built-in shapes, and the folder it looked for is named.
  fs::remove_all(root / "moved" / "share");
  list = run_installed(binary, cwd, "list shapes");
  CHECK(list.exit_code == 0);
  CHECK(list.out.find("deepseek-v2-lite") != std::string::npos);
  CHECK(list.out.find("shapes from: built in (no fixtures folder at " +
                      fixtures.lexically_normal().string()) != std::string::npos);
  dry = run_installed(binary, cwd, "run bandwidth --dry-run --shape deepseek-v2-lite --m 1");
  CHECK(dry.exit_code == 0);

  // An explicit folder wins and must be one: named in the message when it is not.
  const auto bad = run_installed(binary, cwd, "list shapes --fixtures " + quote((root / "none").string()));
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--fixtures '" + (root / "none").string() + "' has no shapes/ folder") !=
        std::string::npos);
  const auto flag_wins = moe::test::run_shell(
      "cd " + quote(cwd.string()) + " && MOEBENCH_FIXTURES=" + quote((root / "none").string()) + " " +
      quote(binary.string()) + " list shapes --fixtures " + quote(MOEBENCH_FIXTURES_DIR));
  CHECK(flag_wins.exit_code == 0);
  CHECK(flag_wins.out.find("shapes from: " + std::string(MOEBENCH_FIXTURES_DIR) + " (--fixtures)") !=
        std::string::npos);
}
