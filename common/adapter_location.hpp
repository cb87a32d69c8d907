#pragma once
// Where `moebench repro` finds the engine adapter a case file names (field run.engine), unless
// --engine gives one (which always wins: the user's own build of it):
//   - a name with a '/' is a path, relative to the case file's folder;
//   - a bare file name ("libmoebench_stale_resident_cache_adapter.so") is looked for among the
//     adapters beside the binary, in this order:
//       1. BIN/../lib/moebench/adapters   an installed binary (cmake --install), BIN being the
//                                         folder of the running binary
//       2. BUILD/adapters                 a binary inside the build tree it was built in
// Not found is a UsageError naming the file, the folders looked at, and --engine.
#include <filesystem>
#include <string>

namespace moe {

// Relative to the installed binary's folder: where `cmake --install` puts the adapters.
inline constexpr const char* kInstalledAdapters = "../lib/moebench/adapters";

struct AdapterSearch {
  std::filesystem::path executable;  // the running binary
  std::filesystem::path build_dir;   // the build tree it was built in
  std::filesystem::path case_file;   // the case file naming the adapter
};

// The adapter's path, or UsageError prefixed with `origin` ("case file 'X': field \"run.engine\"").
std::filesystem::path locate_case_adapter(const std::string& name, const AdapterSearch& search,
                                          const std::string& origin);

}  // namespace moe
