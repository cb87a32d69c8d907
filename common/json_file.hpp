#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace moe {

// Reads a whole JSON file that a user named (a shape, a config.json, a case file, a report).
// Every way it can be wrong is a UsageError naming `what` and the path: a folder, a file that
// cannot be opened, malformed or truncated JSON, a number out of range (1e400).
nlohmann::json read_json_file(const std::string& path, const std::string& what);

}  // namespace moe
