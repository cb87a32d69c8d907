#include "common/adapter_location.hpp"

#include <vector>

#include "common/errors.hpp"

namespace moe {

std::filesystem::path locate_case_adapter(const std::string& name, const AdapterSearch& search,
                                          const std::string& origin) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (name.find('/') != std::string::npos) {
    const fs::path given(name);
    candidates.push_back(given.is_absolute() ? given : search.case_file.parent_path() / given);
  } else {
    if (!search.executable.empty())
      candidates.push_back(search.executable.parent_path() / kInstalledAdapters / name);
    if (!search.build_dir.empty()) candidates.push_back(search.build_dir / "adapters" / name);
  }
  std::string looked;
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec);
    looked += (looked.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  throw UsageError(origin + " = \"" + name + "\": no such adapter (looked at " +
                   (looked.empty() ? std::string("no folder") : looked) +
                   "); build it beside moebench or give --engine PATH");
}

}  // namespace moe
