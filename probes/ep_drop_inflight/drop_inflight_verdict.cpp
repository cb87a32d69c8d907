#include "probes/ep_drop_inflight/drop_inflight_verdict.hpp"

#include <algorithm>
#include <cstdio>

namespace moe::ep {

namespace {

std::string address_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return buf;
}

nlohmann::json addresses(const std::vector<const void*>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const void* p : v) a.push_back(address_text(p));
  return a;
}

// "rank 1: ..." for every rank where `bad` holds.
template <class Bad, class Say>
std::string ranks_where(const std::vector<nlohmann::json>& ranks, Bad bad, Say say) {
  std::string out;
  for (const nlohmann::json& r : ranks)
    if (bad(r)) out += (out.empty() ? "" : "; ") + ("rank " + std::to_string(r.value("rank", -1)) + ": " + say(r));
  return out;
}

}  // namespace

std::vector<const void*> receive_blocks_handed_out_while_pending(const RankObservation& o) {
  std::vector<const void*> out;
  for (const void* p : o.receive_buffers)
    if (p && std::find(o.successor_blocks.begin(), o.successor_blocks.end(), p) != o.successor_blocks.end())
      out.push_back(p);
  return out;
}

nlohmann::json observation_json(const RankObservation& o) {
  return {{"rank", o.rank},
          {"receive_buffers", addresses(o.receive_buffers)},
          {"successor_blocks", addresses(o.successor_blocks)},
          {"receive_blocks_handed_out_while_pending", addresses(receive_blocks_handed_out_while_pending(o))},
          {"pending_at_drop", o.pending_at_drop},
          {"pending_after_successor", o.pending_after_successor},
          {"successor_bytes", o.successor_bytes},
          {"successor_bytes_changed", o.successor_bytes_changed},
          {"receive_blocks_reused_after_completion", o.receive_blocks_reused_after_completion},
          {"output_matches", o.output_matches},
          {"output_detail", o.output_detail}};
}

void judge_drop_inflight(report::CaseResult& c, const std::vector<nlohmann::json>& ranks, int world) {
  auto early = [](const nlohmann::json& r) {
    return r.contains("receive_blocks_handed_out_while_pending") ? r["receive_blocks_handed_out_while_pending"].size()
                                                                 : std::size_t{0};
  };
  const std::string handed = ranks_where(
      ranks, [&](const nlohmann::json& r) { return early(r) > 0; },
      [&](const nlohmann::json& r) {
        return "the successor received receive block(s) " + r["receive_blocks_handed_out_while_pending"].dump() +
               " while the exchange was in flight";
      });
  c.checks.push_back({"no_receive_block_handed_out_while_pending", handed.empty(),
                      handed.empty() ? "no rank's receive buffers went to another owner before the "
                                       "step's completion was known"
                                     : handed});
  const std::string changed = ranks_where(
      ranks, [](const nlohmann::json& r) { return r.value("successor_bytes_changed", std::size_t{0}) > 0 || r.value("successor_bytes", std::size_t{0}) == 0; },
      [](const nlohmann::json& r) {
        return std::to_string(r.value("successor_bytes_changed", std::size_t{0})) + " of " +
               std::to_string(r.value("successor_bytes", std::size_t{0})) +
               " bytes the successor wrote were overwritten (the dropped exchange's rows)";
      });
  c.checks.push_back({"successor_bytes_intact", changed.empty(),
                      changed.empty() ? "every byte the successor wrote read back unchanged on every rank" : changed});
  const std::string wrong = ranks_where(
      ranks, [](const nlohmann::json& r) { return !r.value("output_matches", false); },
      [](const nlohmann::json& r) { return r.value("output_detail", std::string("no output check")); });
  c.checks.push_back({"inflight_output_matches_reference", wrong.empty(),
                      wrong.empty() ? "the dropped step's output matched the reference on every rank" : wrong});

  c.evidence["per_rank"] = ranks;
  c.prove("every_rank_answered", static_cast<int>(ranks.size()) == world,
          std::to_string(ranks.size()) + " of " + std::to_string(world) + " ranks answered");
  const std::string not_pending = ranks_where(
      ranks, [](const nlohmann::json& r) { return !r.value("pending_at_drop", false); },
      [](const nlohmann::json&) { return std::string("the step had finished before the drop (the hold was missed)"); });
  c.prove("exchange_pending_at_drop", !ranks.empty() && not_pending.empty(), not_pending);
  const std::string finished_early = ranks_where(
      ranks, [](const nlohmann::json& r) { return !r.value("pending_after_successor", false); },
      [](const nlohmann::json&) { return std::string("the step finished before the successor had written its bytes"); });
  c.prove("exchange_pending_while_successor_wrote", !ranks.empty() && finished_early.empty(), finished_early);
  const std::string never = ranks_where(
      ranks,
      [&](const nlohmann::json& r) {
        return early(r) == 0 && r.value("receive_blocks_reused_after_completion", std::size_t{0}) == 0;
      },
      [](const nlohmann::json&) {
        return std::string("no allocation received the receive blocks again, while pending or after: the "
                           "allocator never reused them, so no reuse could have been caught");
      });
  c.prove("receive_blocks_handed_out_again", !ranks.empty() && never.empty(), never);
  c.conclude("every rank dropped its layer with the exchange in flight; the receive blocks went to "
             "the next owner only after the step finished, and its output was right");
}

}  // namespace moe::ep
