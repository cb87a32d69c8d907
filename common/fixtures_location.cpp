#include "common/fixtures_location.hpp"

#include "common/errors.hpp"

namespace moe {

namespace fs = std::filesystem;

namespace {

bool holds_shapes(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "shapes", ec);
}

// `inner` is `outer` or inside it, both as the file system resolves them.
bool is_inside(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(inner, ec);
  if (ec) return false;
  const fs::path b = fs::weakly_canonical(outer, ec);
  if (ec || b.empty()) return false;
  auto ai = a.begin();
  for (auto bi = b.begin(); bi != b.end(); ++bi, ++ai) {
    if (bi->empty()) continue;  // a trailing separator
    if (ai == a.end() || *ai != *bi) return false;
  }
  return true;
}

FixturesLocation explicit_folder(const std::string& dir, FixturesSource source,
                                 const std::string& named_by) {
  if (!holds_shapes(dir))
    throw UsageError(named_by + " '" + dir +
                     "' has no shapes/ folder: give the folder that holds shapes/ and cases/ "
                     "(an installed moebench's is PREFIX/share/moebench/fixtures)");
  return {dir, source, {}};
}

}  // namespace

std::string FixturesLocation::describe() const {
  switch (source) {
    case FixturesSource::flag: return dir + " (--fixtures)";
    case FixturesSource::environment: return dir + " (MOEBENCH_FIXTURES)";
    case FixturesSource::installed: return dir + " (beside the binary)";
    case FixturesSource::build_tree: return dir + " (the source tree of this build)";
    case FixturesSource::built_in: break;
  }
  std::string tried;
  for (const std::string& d : looked_at) tried += (tried.empty() ? "" : ", ") + d;
  return "built in (no fixtures folder at " + tried + "; --fixtures or MOEBENCH_FIXTURES name one)";
}

FixturesLocation locate_fixtures(const FixturesSearch& s) {
  if (!s.flag.empty()) return explicit_folder(s.flag, FixturesSource::flag, "--fixtures");
  if (!s.environment.empty())
    return explicit_folder(s.environment, FixturesSource::environment, "MOEBENCH_FIXTURES");
  FixturesLocation found;
  const fs::path installed = (s.executable.parent_path() / kInstalledFixtures).lexically_normal();
  found.looked_at.push_back(installed.string());
  if (holds_shapes(installed)) {
    found.dir = installed.string();
    found.source = FixturesSource::installed;
    return found;
  }
  if (is_inside(s.executable, s.build_dir)) {
    found.looked_at.push_back(s.source_fixtures.string());
    if (holds_shapes(s.source_fixtures)) {
      found.dir = s.source_fixtures.string();
      found.source = FixturesSource::build_tree;
      return found;
    }
  }
  return found;
}

}  // namespace moe
