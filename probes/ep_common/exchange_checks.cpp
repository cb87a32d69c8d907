#if MOEBENCH_HAVE_NCCL
#include "probes/ep_common/exchange_checks.hpp"

#include <cstdint>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/rank_coded_payload.hpp"
#include "engine/ep/receive_counts.hpp"
#include "engine/ep/sharded_reference.hpp"
#include "engine/ep/wire_digest.hpp"

namespace moe::ep {

ExchangeChecks run_exchange_checks(ShardedLayer& layer, Rendezvous& rendezvous) {
  const WireLayout& wire = layer.wire();
  const int rank = rendezvous.rank();
  layer.set_input(rank_coded_rows(rank, layer.m(), wire.hidden));
  std::vector<std::uint64_t> received, output;
  ExchangeChecks c;
  std::string problems;
  auto note = [&](const std::string& p) {
    if (!p.empty()) problems += (problems.empty() ? "" : "; ") + p;
  };
  for (int run = 0; run < 2; ++run) {
    layer.enqueue_step(false);
    layer.finish(run == 0 ? "the rank-coded step" : "the rank-coded step, repeated");
    const std::vector<unsigned char> recv = layer.dispatch_received_host();
    received.push_back(dispatch_digest(wire, recv.data()));
    const std::vector<float> out = layer.output_host();
    output.push_back(bytes_digest(out.data(), out.size() * sizeof(float)));
    if (run > 0) continue;
    // Collective: every rank gathers once, whatever it found.
    const std::vector<unsigned char> send = layer.dispatch_sent_host();
    const std::string counts = check_receive_counts(rendezvous, wire, layer.map(), send.data(), recv.data());
    c.counts_exact = counts.empty();
    note(counts);
    try {
      const std::vector<ReceivedRow> rows = unpack_received_host(wire, recv.data());
      c.rows_received = static_cast<int>(rows.size());
      const std::string payload = rank_coded_mismatch(rows, layer.m());
      c.payload_intact = payload.empty();
      note(payload);
    } catch (const Error& e) {  // a count outside the capacity
      note(e.what());
    }
  }
  const std::string receive_repeat = repeat_difference(received, "the receive buffer");
  const std::string output_repeat = repeat_difference(output, "the output");
  c.repeatable = receive_repeat.empty() && output_repeat.empty();
  note(receive_repeat);
  note(output_repeat);
  c.detail = problems.empty() ? std::to_string(c.rows_received) +
                                    " rows received, counts exact per source and expert, every row rank-coded, "
                                    "receive buffer and output bitwise repeatable"
                              : problems;
  return c;
}

}  // namespace moe::ep
#endif
