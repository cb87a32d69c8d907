#pragma once
// Where moebench finds its fixtures folder (shapes/ and cases/), in this order, the explicit
// ones winning:
//   1. --fixtures DIR                    (must hold shapes/)
//   2. $MOEBENCH_FIXTURES                (must hold shapes/)
//   3. BIN/../share/moebench/fixtures    an installed binary (cmake --install), BIN being the
//                                        folder of the running binary (/proc/self/exe)
//   4. the source tree's fixtures/       a binary inside the build tree it was built in
//   5. none: the shapes compiled into the binary (engine/shape_library.hpp), which are the
//      source tree's fixtures/shapes as built
// An explicit folder without shapes/ is an error that names it; a discovered one is passed
// over, and the folders looked at are named where the choice is shown (`moebench list shapes`).
#include <filesystem>
#include <string>
#include <vector>

namespace moe {

enum class FixturesSource { flag, environment, installed, build_tree, built_in };

struct FixturesLocation {
  std::string dir;  // the folder that holds shapes/; empty with FixturesSource::built_in
  FixturesSource source = FixturesSource::built_in;
  std::vector<std::string> looked_at;  // the discovered folders tried, in order (3 and 4)
  // "DIR (beside the binary)", or "built in (no fixtures folder at A, B)": for messages.
  std::string describe() const;
};

// What the lookup reads, given rather than read so it can be tested.
struct FixturesSearch {
  std::string flag;                       // --fixtures; empty: not given
  std::string environment;                // $MOEBENCH_FIXTURES; empty: not set
  std::filesystem::path executable;       // the running binary
  std::filesystem::path build_dir;        // the build tree it was built in
  std::filesystem::path source_fixtures;  // that build's source tree's fixtures/
};

// Relative to the installed binary's folder: where `cmake --install` puts the fixtures.
inline constexpr const char* kInstalledFixtures = "../share/moebench/fixtures";

// The folder by the order above. Raises UsageError when --fixtures or $MOEBENCH_FIXTURES names a
// folder without shapes/, naming the folder and where it came from.
FixturesLocation locate_fixtures(const FixturesSearch& search);

}  // namespace moe
