// Where the binary finds its fixtures (common/fixtures_location.hpp): --fixtures, then
// $MOEBENCH_FIXTURES, then beside an installed binary, then the source tree of its build, then
// the shapes built into it; and the built-in shapes are the source tree's.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "common/errors.hpp"
#include "common/fixtures_location.hpp"
#include "engine/shape_library.hpp"
#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;

fs::path fixtures_at(const fs::path& dir) {
  fs::create_directories(dir / "shapes");
  return dir;
}

// An installed layout under `prefix`, a build tree and its source tree's fixtures; every folder
// holds shapes/.
struct Layout {
  fs::path root = moe::test::scratch_dir("fixtures-location");
  fs::path prefix = root / "prefix";
  fs::path installed = fixtures_at(prefix / "share" / "moebench" / "fixtures");
  fs::path build = root / "build";
  fs::path source = fixtures_at(root / "source" / "fixtures");
  fs::path flag = fixtures_at(root / "flag");
  fs::path environment = fixtures_at(root / "environment");

  moe::FixturesSearch search(const fs::path& executable) const {
    return {flag.string(), environment.string(), executable, build, source};
  }
};

std::string refusal(const moe::FixturesSearch& s) {
  try {
    (void)moe::locate_fixtures(s);
  } catch (const moe::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the explicit folders win: --fixtures over MOEBENCH_FIXTURES over the ones found") {
  const Layout l;
  moe::FixturesSearch s = l.search(l.prefix / "bin" / "moebench");
  moe::FixturesLocation at = moe::locate_fixtures(s);
  CHECK(at.source == moe::FixturesSource::flag);
  CHECK(at.dir == l.flag.string());
  CHECK(at.describe() == l.flag.string() + " (--fixtures)");

  s.flag.clear();
  at = moe::locate_fixtures(s);
  CHECK(at.source == moe::FixturesSource::environment);
  CHECK(at.dir == l.environment.string());

  s.environment.clear();
  at = moe::locate_fixtures(s);
  CHECK(at.source == moe::FixturesSource::installed);
  CHECK(fs::equivalent(at.dir, l.installed));
}

TEST_CASE("an explicit folder without shapes/ is refused by name, never passed over") {
  const Layout l;
  moe::FixturesSearch s = l.search(l.prefix / "bin" / "moebench");
  s.flag = (l.root / "empty").string();
  CHECK(refusal(s).find("--fixtures '" + s.flag + "' has no shapes/ folder") != std::string::npos);
  s.flag.clear();
  s.environment = (l.root / "missing").string();
  CHECK(refusal(s).find("MOEBENCH_FIXTURES '" + s.environment + "' has no shapes/ folder") !=
        std::string::npos);
}

TEST_CASE("the source tree's fixtures serve only a binary inside its build tree") {
  const Layout l;
  moe::FixturesSearch s = l.search(l.build / "apps" / "moebench");
  s.flag.clear();
  s.environment.clear();
  moe::FixturesLocation at = moe::locate_fixtures(s);
  CHECK(at.source == moe::FixturesSource::build_tree);
  CHECK(at.dir == l.source.string());
  REQUIRE(at.looked_at.size() == 2);  // beside the binary first, then the source tree
  CHECK(at.looked_at[1] == l.source.string());

  // The same binary copied out of the build tree: nothing found, the built-in shapes, and the
  // message names where it looked.
  s.executable = l.root / "elsewhere" / "moebench";
  at = moe::locate_fixtures(s);
  CHECK(at.source == moe::FixturesSource::built_in);
  CHECK(at.dir.empty());
  REQUIRE(at.looked_at.size() == 1);
  CHECK(at.looked_at[0] == (l.root / "share" / "moebench" / "fixtures").string());
  CHECK(at.describe().find("built in (no fixtures folder at " + at.looked_at[0]) == 0);
}

TEST_CASE("an installed binary's own fixtures come before its build's source tree") {
  const Layout l;
  fixtures_at(l.build / "share" / "moebench" / "fixtures");  // a prefix inside the build tree
  moe::FixturesSearch s = l.search(l.build / "bin" / "moebench");
  s.flag.clear();
  s.environment.clear();
  const moe::FixturesLocation at = moe::locate_fixtures(s);
  CHECK(at.source == moe::FixturesSource::installed);
  CHECK(fs::equivalent(at.dir, l.build / "share" / "moebench" / "fixtures"));
}

TEST_CASE("the built-in shapes are fixtures/shapes, every one, with the same dimensions") {
  const auto built_in = moe::shape_library("");
  const auto folder = moe::shape_library(MOEBENCH_FIXTURES_DIR);
  REQUIRE(built_in.size() == folder.size());
  CHECK(built_in.size() >= 3);
  for (std::size_t i = 0; i < folder.size(); ++i) {
    CAPTURE(folder[i].name);
    CHECK(built_in[i].name == folder[i].name);
    CHECK(built_in[i].fingerprint() == folder[i].fingerprint());
    CHECK(built_in[i].description == folder[i].description);
    CHECK(built_in[i].source.find("built-in ") == 0);
  }
}
