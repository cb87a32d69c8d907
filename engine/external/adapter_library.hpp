#pragma once
// An engine adapter (include/moebench/engine_abi.h) loaded and checked before anything runs:
// its entry point found and called, its ABI version, table size, name and functions checked.
// What it offers (capabilities, weight formats) and its file's identity (path, SHA-256) are
// what a report records of it.
#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/external/shared_library.hpp"
#include "kernels/moe/moe_types.hpp"
#include "moebench/engine_abi.h"

namespace moe::external {

class AdapterLibrary {
 public:
  // Loads `file` and checks it; `origin` names it in messages ("--engine"). Each refusal is one
  // line naming the file and what is wrong: UsageError (exit 2) for a file that is not a
  // usable adapter (not a library, no entry point, the entry point refused this ABI version,
  // another ABI major, a table of the wrong size, no name, a required function or one its
  // capabilities promise null, no weight format); EnvironmentError (exit 3) for a library this
  // machine cannot load (shared_library.hpp).
  explicit AdapterLibrary(const std::filesystem::path& file, const std::string& origin = "--engine");
  AdapterLibrary(const AdapterLibrary&) = delete;
  AdapterLibrary& operator=(const AdapterLibrary&) = delete;

  const moebench_adapter& table() const { return *table_; }
  const std::filesystem::path& path() const { return path_; }  // absolute
  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  std::string abi_version() const;  // "1.0", the adapter's
  const std::string& sha256() const { return sha256_; }
  bool has(std::uint64_t capability) const { return (table_->capabilities & capability) != 0; }
  bool takes(kernels::WeightFormat format) const;
  // "adapter 'my-engine' 0.3.1", how messages name it.
  std::string label() const;
  // The report's options.engine_adapter (reports/SCHEMA.md).
  nlohmann::json to_json() const;

 private:
  std::filesystem::path path_;
  SharedLibrary library_;
  const moebench_adapter* table_ = nullptr;
  std::string name_, version_, sha256_;
};

}  // namespace moe::external
