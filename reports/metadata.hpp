#pragma once
// The free-form sections of a report (tool, invocation, environment, options) as the renderers
// read them. moebench writes them; a hand-edited or damaged report can hold anything there, so
// the few fields whose type a renderer relies on are checked once at load, and every read goes
// through these accessors, which take a missing or mistyped field as absent instead of throwing
// json::type_error halfway through a render.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace moe::report {

// Throws UsageError naming the first typed metadata field (e.g. "tool.git_dirty") that holds
// the wrong type, or a section that is not an object. Missing fields are allowed.
void check_metadata_types(const nlohmann::json& report);

// Any scalar as text ("" when absent or null); strings without quotes.
std::string metadata_text(const nlohmann::json& section, const char* pointer);
// The string at pointer, or fallback when absent or not a string.
std::string metadata_string(const nlohmann::json& section, const char* pointer,
                            const std::string& fallback = "");
// The boolean at pointer, or fallback when absent or not a boolean.
bool metadata_flag(const nlohmann::json& section, const char* pointer, bool fallback);
// The integer at pointer, or fallback when absent or not an integer.
std::int64_t metadata_integer(const nlohmann::json& section, const char* pointer,
                              std::int64_t fallback);

}  // namespace moe::report
