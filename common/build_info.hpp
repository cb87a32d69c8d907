#pragma once
#include <string>

namespace moe {

// What this binary is, baked in at build time (cmake/WriteBuildInfo.cmake).
struct BuildInfo {
  std::string version;
  std::string git_commit;
  bool git_dirty;
  std::string build_type;
  std::string cuda_architectures;
  std::string cxx_compiler;
  std::string cuda_compiler;
};

const BuildInfo& build_info();

}  // namespace moe
