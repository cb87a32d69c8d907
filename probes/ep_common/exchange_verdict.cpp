#include "probes/ep_common/exchange_verdict.hpp"

#include <initializer_list>

namespace moe::ep {

nlohmann::json ExchangeChecks::to_json() const {
  return {{"receive_counts_exact", counts_exact},
          {"payload_rank_coded", payload_intact},
          {"bitwise_repeatable", repeatable},
          {"rows_received", rows_received},
          {"exchange_check", detail}};
}

std::vector<report::Check> exchange_checks_over_ranks(const std::vector<nlohmann::json>& ranks) {
  std::vector<report::Check> checks;
  for (const char* name : {"receive_counts_exact", "payload_rank_coded", "bitwise_repeatable"}) {
    bool all = !ranks.empty();
    std::string why;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const nlohmann::json& r = ranks[i];
      const std::string who = "rank " + std::to_string(r.contains("rank") ? r["rank"].get<int>() : static_cast<int>(i));
      std::string seen;
      if (!r.contains(name) || !r[name].is_boolean())
        seen = "did not report " + std::string(name);
      else if (!r[name].get<bool>())
        seen = r.contains("exchange_check") && r["exchange_check"].is_string() ? r["exchange_check"].get<std::string>()
                                                                              : "failed, no detail";
      if (seen.empty()) continue;
      all = false;
      why += (why.empty() ? "" : "; ") + (who + ": " + seen);
    }
    checks.push_back({name, all, all ? "every rank" : why.empty() ? "no rank reported" : why});
  }
  return checks;
}

}  // namespace moe::ep
