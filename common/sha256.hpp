#pragma once
// SHA-256 (FIPS 180-4) of bytes and of files: the identity a report records for a file it ran
// (an engine adapter), the same digest `sha256sum` prints, so a reader can check it by hand.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace moe {

// 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

// The digest of a file's contents; raises UsageError naming the file when it cannot be read.
std::string sha256_of_file(const std::filesystem::path& file);

}  // namespace moe
