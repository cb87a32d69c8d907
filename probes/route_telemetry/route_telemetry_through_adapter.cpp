// Probe route-telemetry through an engine adapter (--engine; needs route-counts and
// capture-safe-forward): case "window" on the adapter's route counts (docs/bugs.md, bug 5).
// One window over eager calls and replays of one graph, each on a new input, must equal the CPU
// oracle (the reference's routing of each input) at a fixed window number: a reset on every
// call or replay leaves only the last one. A reset inside a capture must be refused and change
// nothing; a reset at a boundary opens an empty window with another number; two engines keep
// their own counts. Overflow and poison cannot be forced from outside an engine, and arming is
// the adapter's (no disarmed run to time against), so case "overhead" stays with moebench's
// engine (route_telemetry_probe.cpp).
#include <cstdlib>

#include "engine/captured_graph.hpp"
#include "engine/external/external_engine.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/reference.hpp"
#include "probes/external_layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {

constexpr int kLayers = 2;
constexpr int kEagerCalls = 3;
constexpr int kReplays = 3;
constexpr double kNearTie = 1e-3;  // as the output check: closer than fp32 error may choose either

// The pairs the reference routes to each expert, per layer, over the inputs added so far. A
// token within a near tie may legitimately go either way on the GPU: each one allows one pair
// to sit with another expert (two counts off by one).
struct RouteOracle {
  std::vector<std::vector<std::uint64_t>> counts;  // [layer][expert]
  int near_ties = 0;

  void add(const external::ExternalEngine& e, int m, std::uint64_t input_seed) {
    counts.resize(static_cast<std::size_t>(e.layers()));
    for (int l = 0; l < e.layers(); ++l) {
      const LayerReference ref = LayerReference::of(e.weights(l));
      const kernels::MoeDims& d = ref.dims;
      auto& mine = counts[static_cast<std::size_t>(l)];
      mine.resize(static_cast<std::size_t>(d.experts), 0);
      std::vector<float> x(static_cast<std::size_t>(m) * static_cast<std::size_t>(d.hidden));
      for (int t = 0; t < m; ++t)
        kernels::input_row_host(d, input_seed, t, x.data() + static_cast<std::size_t>(t) * static_cast<std::size_t>(d.hidden));
      const std::vector<double> logits =
          kernels::ref::router_logits(d, ref.weight_seed, x, m, ref.router_bias.empty() ? nullptr : ref.router_bias.data());
      const std::vector<float> selection = kernels::selection_bias_host(d, ref.weight_seed);
      const float* sel = selection.empty() ? nullptr : selection.data();
      std::vector<int> ids(static_cast<std::size_t>(d.top_k));
      std::vector<double> w(static_cast<std::size_t>(d.top_k));
      for (int t = 0; t < m; ++t) {
        const double* lg = logits.data() + static_cast<std::size_t>(t) * static_cast<std::size_t>(d.experts);
        kernels::ref::route_token(d, lg, ids.data(), w.data(), sel);
        near_ties += kernels::ref::topk_margin(d, lg, sel) < kNearTie;
        for (int id : ids) ++mine[static_cast<std::size_t>(id)];
      }
    }
  }

  // Where the engine's current window differs from the oracle beyond the near ties ("" if not).
  std::string differences(external::ExternalEngine& e) const {
    std::string out;
    for (int l = 0; l < e.layers(); ++l) {
      const external::ExternalEngine::RouteCounts got = e.read_route_counts(l);
      const auto& want = counts[static_cast<std::size_t>(l)];
      std::uint64_t off = 0, total_got = 0, total_want = 0;
      int first = -1;
      for (std::size_t x = 0; x < want.size(); ++x) {
        const std::uint64_t g = got.counts[x];
        total_got += g;
        total_want += want[x];
        off += g > want[x] ? g - want[x] : want[x] - g;
        if (g != want[x] && first < 0) first = static_cast<int>(x);
      }
      const bool within_ties = off <= 2 * static_cast<std::uint64_t>(near_ties);
      if (total_got != total_want || !within_ties || got.flags)
        out += "layer " + std::to_string(l) + ": " + std::to_string(total_got) + " pairs recorded, oracle " +
               std::to_string(total_want) + ", counts off by " + std::to_string(off) + " (near ties allow " +
               std::to_string(2 * near_ties) + ")" +
               (first >= 0 ? ", first expert " + std::to_string(first) + ": " +
                                 std::to_string(got.counts[static_cast<std::size_t>(first)]) + " vs " +
                                 std::to_string(want[static_cast<std::size_t>(first)])
                           : "") +
               ", flags " + std::to_string(got.flags) + "; ";
    }
    return out;
  }
};

std::vector<std::vector<std::uint64_t>> all_counts(external::ExternalEngine& e) {
  std::vector<std::vector<std::uint64_t>> out;
  for (int l = 0; l < e.layers(); ++l) out.push_back(e.read_route_counts(l).counts);
  return out;
}

std::uint64_t pairs(const std::vector<std::vector<std::uint64_t>>& counts) {
  std::uint64_t n = 0;
  for (const auto& layer : counts)
    for (std::uint64_t c : layer) n += c;
  return n;
}

}  // namespace

void run_route_telemetry_through_adapter(ProbeState& state) {
  const auto& adapter = state.options().adapter;
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    report::CaseResult c = state.start_case(point);
    auto seed = [&](int purpose) { return derive_seed(state.options().seed, 70 + purpose, m); };
    c.evidence["engine_adapter"] = {{"name", adapter->name()}, {"version", adapter->version()}};
    external::ExternalEngine e(adapter, engine_config(state, shape, format, 71, kLayers), m, state.allocator());
    RouteOracle oracle;

    // 1. A fresh window, then eager calls and replays of one graph, each on a new input.
    e.reset_route_counts();
    const std::uint64_t window0 = e.read_route_counts(0).window;
    for (int i = 0; i < kEagerCalls; ++i) {
      e.set_input(m, seed(i));
      e.forward();
      oracle.add(e, m, seed(i));
    }
    c.checks.push_back(check_external_layer(e, 0, seed(kEagerCalls - 1)).as_check("output_matches_reference"));
    e.capture();
    int replays = 0;
    for (int r = 0; r < kReplays; ++r) {
      e.set_input(m, seed(10 + r));
      e.replay();
      ++replays;
      oracle.add(e, m, seed(10 + r));
    }
    c.prove("replays_in_window", replays >= 2 && e.captured(), "fewer than two replays of one graph ran in the window");
    const std::string window_diff = oracle.differences(e);
    c.checks.push_back({"window_matches_oracle", window_diff.empty(),
                        window_diff.empty() ? "counts of " + std::to_string(kEagerCalls) + " eager calls and " +
                                                  std::to_string(kReplays) + " replays equal the oracle in every layer (" +
                                                  std::to_string(oracle.near_ties) + " near-tie tokens)"
                                            : window_diff});
    const std::uint64_t window_now = e.read_route_counts(0).window;
    c.checks.push_back({"window_number_fixed", window_now == window0,
                        "window " + std::to_string(window0) + " -> " + std::to_string(window_now) +
                            " over the calls and replays"});
    const auto before_capture = all_counts(e);
    c.evidence["window"] = {{"window", window0}, {"eager_calls", kEagerCalls}, {"replays", kReplays},
                            {"pairs", pairs(before_capture)}, {"near_tie_tokens", oracle.near_ties}};

    // 2. A reset inside a capture is refused, and changes nothing.
    std::string refusal;
    bool was_capturing = false;
    std::string capture_failure;
    try {
      CapturedGraph g(e.stream(), [&] {
        e.forward();  // a step in the graph, as a caller would capture
        was_capturing = e.stream().capturing();
        refusal = e.try_reset_route_counts();
      });
    } catch (const std::exception& err) {
      capture_failure = err.what();
    }
    c.prove("reset_called_while_capturing", was_capturing, "the stream was not capturing when the reset was called");
    const auto after_refusal = all_counts(e);
    const bool unchanged = after_refusal == before_capture && e.read_route_counts(0).window == window0;
    c.checks.push_back({"reset_refused_during_capture", !refusal.empty() && unchanged,
                        (refusal.empty() ? std::string("the reset was accepted inside a capture") : "refused: " + refusal) +
                            (unchanged ? "; counts and window unchanged" : "; the counts or the window changed") +
                            (capture_failure.empty() ? "" : "; the capture failed: " + capture_failure)});

    // 3. A reset at a boundary opens an empty window with another number.
    e.reset_route_counts();
    const auto reset_counts = all_counts(e);
    const std::uint64_t window1 = e.read_route_counts(0).window;
    c.checks.push_back({"boundary_reset_opens_empty_window", pairs(reset_counts) == 0 && window1 != window0,
                        std::to_string(pairs(reset_counts)) + " pairs after the reset, window " +
                            std::to_string(window0) + " -> " + std::to_string(window1)});

    // 4. Two engines at once keep their own counts: each equals its own oracle.
    {
      external::ExternalEngine other(adapter, engine_config(state, shape, format, 72, kLayers), m, state.allocator());
      other.reset_route_counts();
      RouteOracle mine, theirs;
      e.set_input(m, seed(20));
      other.set_input(m, seed(21));
      e.forward();
      other.forward();
      other.forward();  // twice: the two windows differ in size too
      mine.add(e, m, seed(20));
      theirs.add(other, m, seed(21));
      theirs.add(other, m, seed(21));
      const std::string a = mine.differences(e), b = theirs.differences(other);
      c.checks.push_back({"engines_keep_separate_counts", a.empty() && b.empty(),
                          a.empty() && b.empty() ? "each engine's window equals its own oracle (one call and two)"
                                                 : "first engine: " + a + "second engine: " + b});
    }
    c.evidence["not_checked_through_adapter"] =
        "overflow and poison (they cannot be forced from outside an engine) and the overhead of arming";
    c.conclude("one window over " + std::to_string(kEagerCalls) + " eager calls and " + std::to_string(kReplays) +
               " replays equals the oracle at a fixed window, reset refused in capture, boundary reset, two "
               "engines apart");
    state.add_case(std::move(c));
  }
}

}  // namespace moe
