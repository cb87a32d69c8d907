#pragma once
#include <string_view>

namespace moe::ep {

// What an expert-parallel probe of a build without NCCL does: EnvironmentError (exit 3), one
// line with the build's reason (cmake/Nccl.cmake).
[[noreturn]] void ep_not_built(std::string_view probe);

}  // namespace moe::ep
