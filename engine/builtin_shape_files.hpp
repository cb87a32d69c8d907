#pragma once
// The text of every fixtures/shapes/*.json as the build found it, compiled into the binary by
// cmake/EmbedShapes.cmake (engine/CMakeLists.txt). Read through shape_library.hpp.
#include <cstddef>

namespace moe {

struct BuiltinShapeFile {
  const char* name;  // the file's name, "deepseek-v2-lite.json"
  const char* text;  // its JSON
};

extern const BuiltinShapeFile kBuiltinShapeFiles[];
extern const std::size_t kBuiltinShapeFileCount;

}  // namespace moe
