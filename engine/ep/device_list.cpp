#include "engine/ep/device_list.hpp"

#include <algorithm>
#include <charconv>

#include "common/errors.hpp"

namespace moe::ep {

std::vector<int> parse_device_list(const std::string& text) {
  if (text.empty() || text == "all") return {};
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    int v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 0 || v > 1023)
      throw UsageError("--devices '" + text + "': '" + item +
                       "' is not a GPU index (give indices like 0,1 or 'all')");
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw UsageError("--devices '" + text + "': GPU " + item + " is named twice");
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

std::vector<int> resolve_devices(const std::vector<int>& asked, int visible) {
  std::vector<int> out = asked;
  if (out.empty())
    for (int i = 0; i < visible; ++i) out.push_back(i);
  for (int d : out)
    if (d >= visible)
      throw EnvironmentError("--devices names GPU " + std::to_string(d) + " but this machine has " +
                             (visible > 0 ? std::to_string(visible) + " (0.." + std::to_string(visible - 1) + ")"
                                          : std::string("none")));
  if (out.size() < 2)
    throw EnvironmentError("expert parallelism needs at least two GPUs; " +
                           std::to_string(out.size()) + " " +
                           (asked.empty() ? "visible" : "named by --devices"));
  return out;
}

}  // namespace moe::ep
