#include "engine/shape_library.hpp"

#include <algorithm>
#include <filesystem>

#include "common/errors.hpp"
#include "engine/builtin_shape_files.hpp"

namespace moe {

std::vector<Shape> builtin_shapes() {
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < kBuiltinShapeFileCount; ++i) {
    const BuiltinShapeFile& f = kBuiltinShapeFiles[i];
    const std::string origin = std::string("built-in ") + f.name;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(f.text);
    } catch (const nlohmann::json::exception& e) {  // checked when it was built: cannot happen
      throw Error(ExitCode::probe_error, origin + " is not JSON: " + e.what());
    }
    shapes.push_back(parse_shape_json(j, origin));
  }
  std::sort(shapes.begin(), shapes.end(),
            [](const Shape& a, const Shape& b) { return a.name < b.name; });
  return shapes;
}

std::vector<Shape> shape_library(const std::string& fixtures_dir) {
  if (fixtures_dir.empty()) return builtin_shapes();
  return load_shape_library(std::filesystem::path(fixtures_dir) / "shapes");
}

}  // namespace moe
