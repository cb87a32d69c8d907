#include "probes/drop_after_inflight/drop_verdict.hpp"

namespace moe {

void conclude_drop_case(report::CaseResult& c, const LayerCheck& inflight, report::Check usable, bool pending,
                        const BlockReuse& reuse, const char* owner) {
  c.checks.push_back(inflight.as_check("inflight_output_matches_reference"));
  c.checks.push_back(std::move(usable));
  c.evidence["freed_blocks"] = reuse.freed;
  c.evidence["freed_blocks_received_by_next_request"] = reuse.reused.size();
  if (!reuse.reused.empty()) c.evidence["first_block_received"] = hex(reuse.reused.front());
  c.evidence["tokens_checked"] = inflight.tokens_checked;
  c.prove("forward_pending_at_destroy", pending,
          std::string("the forward had already finished when the ") + owner +
              " was destroyed (the 50 ms queue-ahead was missed)");
  c.prove("next_request_received_freed_blocks", !reuse.reused.empty(),
          "the next request received none of the " + std::to_string(reuse.freed) +
              " blocks the destroy freed: " + reuse.detail());
  c.conclude(std::string("the ") + owner + " waited for its in-flight forward: pending at the "
             "destroy, " + reuse.detail() + " to the next request, every token right");
}

}  // namespace moe
