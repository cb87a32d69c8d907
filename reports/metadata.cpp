#include "reports/metadata.hpp"

#include <algorithm>
#include <optional>

#include "common/errors.hpp"

namespace moe::report {

using nlohmann::json;

namespace {

enum class Kind { object, string, boolean, integer, array };

struct TypedField {
  const char* pointer;  // from the report's root
  Kind kind;
};

// Every field a renderer reads as a given type (reports/SCHEMA.md). Fields printed as text
// (metadata_text) accept any scalar and need no entry.
constexpr TypedField kTypedFields[] = {
    {"/tool", Kind::object},
    {"/tool/version", Kind::string},
    {"/tool/git_commit", Kind::string},
    {"/tool/git_dirty", Kind::boolean},
    {"/tool/build_type", Kind::string},
    {"/invocation", Kind::object},
    {"/invocation/started_at", Kind::string},
    {"/invocation/complete", Kind::boolean},
    {"/environment", Kind::object},
    {"/environment/gpu", Kind::object},
    {"/environment/gpu/available", Kind::boolean},
    {"/environment/host", Kind::object},
    {"/environment/host/hostname", Kind::string},
    {"/environment/host/cpu_count", Kind::integer},
    {"/environment/ranks", Kind::object},
    {"/environment/ranks/world", Kind::integer},
    {"/environment/ranks/per_rank", Kind::array},
    {"/environment/ranks/peer_access", Kind::array},
    {"/environment/ranks/nvlink_links", Kind::array},
    {"/options", Kind::object},
};

bool has_kind(const json& v, Kind k) {
  switch (k) {
    case Kind::object: return v.is_object();
    case Kind::string: return v.is_string();
    case Kind::boolean: return v.is_boolean();
    case Kind::integer: return v.is_number_integer();
    case Kind::array: return v.is_array();
  }
  return false;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::object: return "an object";
    case Kind::string: return "a string";
    case Kind::boolean: return "true or false";
    case Kind::integer: return "an integer";
    case Kind::array: return "an array";
  }
  return "?";
}

// "/tool/git_dirty" -> "tool.git_dirty", as the CLI's messages name fields.
std::string dotted(const char* pointer) {
  std::string out(pointer + 1);
  for (char& c : out)
    if (c == '/') c = '.';
  return out;
}

// The value at pointer when every step down to it is an object holding the key; nothing where
// a step is missing, null or not an object (json::contains would throw on some of those).
std::optional<json> find(const json& root, const char* pointer) {
  const json* at = &root;
  const std::string path(pointer);
  std::size_t start = 1;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string key = path.substr(start, end - start);
    if (!at->is_object()) return std::nullopt;
    const auto it = at->find(key);
    if (it == at->end() || it->is_null()) return std::nullopt;
    at = &*it;
    start = end + 1;
  }
  return *at;
}

}  // namespace

void check_metadata_types(const json& report) {
  for (const TypedField& f : kTypedFields) {
    const std::optional<json> v = find(report, f.pointer);
    if (v && !has_kind(*v, f.kind)) {
      std::string shown = v->dump();
      if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
      throw UsageError("field \"" + dotted(f.pointer) + "\" = " + shown + " must be " +
                       kind_name(f.kind));
    }
  }
}

std::string metadata_text(const json& section, const char* pointer) {
  const std::optional<json> v = find(section, pointer);
  if (!v) return "";
  return v->is_string() ? v->get<std::string>() : v->dump();
}

std::string metadata_string(const json& section, const char* pointer,
                            const std::string& fallback) {
  const std::optional<json> v = find(section, pointer);
  return v && v->is_string() ? v->get<std::string>() : fallback;
}

bool metadata_flag(const json& section, const char* pointer, bool fallback) {
  const std::optional<json> v = find(section, pointer);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

std::int64_t metadata_integer(const json& section, const char* pointer, std::int64_t fallback) {
  const std::optional<json> v = find(section, pointer);
  return v && v->is_number_integer() ? v->get<std::int64_t>() : fallback;
}

}  // namespace moe::report
