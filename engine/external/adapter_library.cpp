#include "engine/external/adapter_library.hpp"

#include <cstddef>
#include <vector>

#include "common/errors.hpp"
#include "common/sha256.hpp"
#include "engine/external/adapter_call.hpp"
#include "engine/external/capabilities.hpp"

namespace moe::external {

namespace {

std::string version_text(std::uint32_t major, std::uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// A name or version a report and a terminal can show: 1..64 printable characters, no space.
bool printable_word(const char* s) {
  if (!s || !*s) return false;
  std::size_t n = 0;
  for (; s[n]; ++n)
    if (n >= 64 || s[n] <= ' ' || s[n] > '~') return false;
  return true;
}

// The table's size in the adapter's minor version: this header's for the same or a newer minor
// (a newer one may append, so at least this), and each older minor's own once there are any.
std::size_t expected_table_bytes() { return sizeof(moebench_adapter); }

}  // namespace

AdapterLibrary::AdapterLibrary(const std::filesystem::path& file, const std::string& origin)
    : path_(std::filesystem::absolute(file).lexically_normal()),
      library_(path_, origin + " '" + file.string() + "'") {
  const std::string what = origin + " '" + file.string() + "'";
  const auto entry = reinterpret_cast<moebench_engine_abi_entry>(library_.symbol(MOEBENCH_ENGINE_ABI_ENTRY));
  if (!entry)
    throw UsageError(what + ": does not export " MOEBENCH_ENGINE_ABI_ENTRY
                     ": not a moebench engine adapter (see docs/engine-abi.md)");
  moebench_error error = empty_error();
  const moebench_status status =
      entry(MOEBENCH_ENGINE_ABI_MAJOR, MOEBENCH_ENGINE_ABI_MINOR, &table_, &error);
  if (status != MOEBENCH_OK)
    throw UsageError(what + ": " MOEBENCH_ENGINE_ABI_ENTRY " refused engine ABI " +
                     version_text(MOEBENCH_ENGINE_ABI_MAJOR, MOEBENCH_ENGINE_ABI_MINOR) + " (" +
                     std::string(status_name(status)) + "): " + message_of(error));
  if (!table_)
    throw UsageError(what + ": " MOEBENCH_ENGINE_ABI_ENTRY " returned MOEBENCH_OK and no table");
  const moebench_adapter& t = *table_;
  constexpr std::size_t kVersionEnd = offsetof(moebench_adapter, abi_minor) + sizeof(t.abi_minor);
  if (t.struct_size < kVersionEnd)
    throw UsageError(what + ": its table is " + std::to_string(t.struct_size) +
                     " bytes, too small to hold its ABI version (struct_size must be "
                     "sizeof(moebench_adapter))");
  if (t.abi_major != MOEBENCH_ENGINE_ABI_MAJOR)
    throw UsageError(what + ": built for engine ABI " + version_text(t.abi_major, t.abi_minor) +
                     "; this moebench speaks " +
                     version_text(MOEBENCH_ENGINE_ABI_MAJOR, MOEBENCH_ENGINE_ABI_MINOR) +
                     " (the major versions must match: rebuild it against this moebench's "
                     "include/moebench/engine_abi.h)");
  const std::size_t want = expected_table_bytes();
  const bool same_minor = t.abi_minor == MOEBENCH_ENGINE_ABI_MINOR;
  if (same_minor ? t.struct_size != want : t.struct_size < want)
    throw UsageError(what + ": its table is " + std::to_string(t.struct_size) + " bytes; engine ABI " +
                     version_text(t.abi_major, t.abi_minor) + "'s is " + (same_minor ? "" : "at least ") +
                     std::to_string(want) +
                     " (struct_size must be sizeof(moebench_adapter), built with the same header)");
  if (!printable_word(t.name) || !printable_word(t.version))
    throw UsageError(what + ": its table's " + (printable_word(t.name) ? "version" : "name") +
                     " must be 1 to 64 printable characters without spaces");
  name_ = t.name;
  version_ = t.version;
  std::vector<std::string> null_required;
  if (!t.create) null_required.push_back("create");
  if (!t.forward) null_required.push_back("forward");
  if (!t.destroy) null_required.push_back("destroy");
  if (!null_required.empty()) {
    std::string list;
    for (const std::string& f : null_required) list += (list.empty() ? "" : ", ") + f;
    throw UsageError(what + ": " + label() + " leaves " + list +
                     " null; every adapter must give create, forward and destroy");
  }
  for (const CapabilityInfo& c : all_capabilities())
    if (has(c.bit))
      for (const std::string_view function : c.functions)
        if (!function_present(t, function))
          throw UsageError(what + ": " + label() + " declares " + std::string(c.name) + " (" +
                           std::string(c.macro) + ") but leaves " + std::string(function) + " null");
  if (!takes(kernels::WeightFormat::bf16) && !takes(kernels::WeightFormat::int4))
    throw UsageError(what + ": " + label() +
                     " takes no weight format: weight_formats must hold (1u << MOEBENCH_WEIGHTS_BF16) "
                     "or (1u << MOEBENCH_WEIGHTS_INT4)");
  sha256_ = sha256_of_file(path_);
}

std::string AdapterLibrary::abi_version() const { return version_text(table_->abi_major, table_->abi_minor); }

bool AdapterLibrary::takes(kernels::WeightFormat format) const {
  return (table_->weight_formats & format_bit(format)) != 0;
}

std::string AdapterLibrary::label() const { return "adapter '" + name_ + "' " + version_; }

nlohmann::json AdapterLibrary::to_json() const {
  std::vector<std::string> formats;
  for (auto f : {kernels::WeightFormat::bf16, kernels::WeightFormat::int4})
    if (takes(f)) formats.emplace_back(kernels::to_string(f));
  return {{"path", path_.string()},
          {"name", name_},
          {"version", version_},
          {"abi", abi_version()},
          {"sha256", sha256_},
          {"capabilities", capability_names(table_->capabilities)},
          {"weight_formats", formats}};
}

}  // namespace moe::external
