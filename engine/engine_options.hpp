#pragma once
// The engine's switches as one value: every choice that changes which kernels run, each with
// a documented default, a name (`moebench run --switch NAME=VALUE`) and the environment
// variable users' scripts already set. A report records the value in force and where each
// switch came from, so a run with a switch flipped never reads like a default run.
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/moe/forward_options.hpp"

namespace moe {

struct EngineSwitch {
  std::string_view name;           // --switch NAME=VALUE, and the key in reports
  std::string_view env;            // environment variable that sets it
  std::string_view default_value;
  std::vector<std::string_view> values;  // valid values, the default first
  std::string_view meaning;        // one line, for `moebench list switches`
};

// Every switch, in the order reports and `list switches` show them.
std::span<const EngineSwitch> engine_switches();

class EngineOptions {
 public:
  EngineOptions() = default;  // every switch at its default

  // The defaults, overridden by each switch's environment variable that is set. Raises
  // UsageError naming the variable, its value and the valid values.
  static EngineOptions from_environment();
  // Reads back the block to_json wrote (repro of a report); UsageError on an unknown switch
  // or value.
  static EngineOptions from_json(const nlohmann::json& block);

  // Sets one switch from "NAME=VALUE"; `source` says where the assignment came from
  // ("--switch", "MOE_PDL"). Raises UsageError naming the switch or value and the valid ones.
  void assign(std::string_view assignment, const std::string& source);
  void set(std::string_view name, std::string_view value, const std::string& source);

  const kernels::ForwardOptions& forward() const { return forward_; }
  std::string value(std::string_view name) const;
  bool is_default(std::string_view name) const;
  // {"pdl": {"value": "on", "default": true, "source": "default"}, ...}
  nlohmann::json to_json() const;

 private:
  kernels::ForwardOptions forward_;
  std::map<std::string, std::string, std::less<>> sources_;  // switches not at "default"
};

}  // namespace moe
