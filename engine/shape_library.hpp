#pragma once
// The named shapes `--shape NAME` and the probes' defaults resolve against.
#include <string>
#include <vector>

#include "engine/shape.hpp"

namespace moe {

// The shapes of FIXTURES/shapes, or, with no fixtures folder (`fixtures_dir` empty: none was
// found, common/fixtures_location.hpp), the built-in ones: the source tree's fixtures/shapes as
// the binary was built, so a binary copied anywhere knows every shape it shipped with. Sorted by
// name; errors as load_shape_library's.
std::vector<Shape> shape_library(const std::string& fixtures_dir);

// The built-in shapes alone, each with the source "built-in NAME.json".
std::vector<Shape> builtin_shapes();

}  // namespace moe
