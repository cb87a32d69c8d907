#include "common/json_file.hpp"

#include <filesystem>
#include <fstream>

#include "common/errors.hpp"

namespace moe {

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  const std::string named = what + " '" + path + "'";
  // A folder opens as a stream on Linux and then fails mid-read with std::ios_base::failure.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(named + " is a folder, not a file");
  std::ifstream in(path);
  if (!in) throw UsageError(named + " cannot be opened");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range (1e400)
    throw UsageError(named + " is not valid JSON: " + e.what());
  }
}

}  // namespace moe
