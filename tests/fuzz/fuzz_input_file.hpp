#pragma once
// The loaders under test take a path, so each fuzz input is also written to a file. One file per
// process (named by pid) keeps parallel fuzzers (-jobs, -fork) from overwriting each other.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace moe::fuzz {

inline const std::filesystem::path& input_file_path() {
  static const std::filesystem::path path = std::filesystem::temp_directory_path() /
      ("moebench-fuzz-" + std::to_string(::getpid()) + ".json");
  return path;
}

// Writes the input and returns the path to hand to the loader.
inline std::string write_input_file(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path& path = input_file_path();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path.string();
}

}  // namespace moe::fuzz
