#include "engine/telemetry_window.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/moe/route_telemetry.hpp"

namespace moe {

namespace {
using kernels::RouteTelemetryHeader;
}  // namespace

std::string TelemetryIdentity::describe() const {
  return "engine " + std::to_string(engine) + " layer " + std::to_string(layer) + " device " +
         std::to_string(device);
}

bool TelemetryWindow::poisoned() const { return (flags & kernels::kTelemetryPoisoned) != 0; }
bool TelemetryWindow::overflowed() const { return (flags & kernels::kTelemetryOverflowed) != 0; }

bool TelemetryWindow::routed(int e) const {
  const auto w = static_cast<std::size_t>(e) / 32;
  return e >= 0 && w < bitmap.size() && ((bitmap[w] >> (e % 32)) & 1u) != 0;
}

std::vector<int> TelemetryWindow::routed_experts() const {
  std::vector<int> out;
  for (int e = 0; e < experts(); ++e)
    if (routed(e)) out.push_back(e);
  return out;
}

TelemetryWindow TelemetryWindow::consistent(const TelemetryIdentity& identity, std::uint64_t epoch,
                                            std::vector<std::uint32_t> counts) {
  TelemetryWindow w;
  w.epoch = epoch;
  w.identity = identity;
  w.counts = std::move(counts);
  w.bitmap.assign(kernels::route_telemetry_bitmap_words(w.experts()), 0u);
  for (std::size_t e = 0; e < w.counts.size(); ++e) {
    w.total += w.counts[e];
    if (w.counts[e]) w.bitmap[e / 32] |= 1u << (e % 32);
  }
  return w;
}

TelemetryWindow TelemetryWindow::from_record(const void* record, std::size_t bytes) {
  if (bytes < sizeof(RouteTelemetryHeader))
    throw Error(ExitCode::probe_error, "telemetry record of " + std::to_string(bytes) +
                                           " bytes is shorter than its header (" +
                                           std::to_string(sizeof(RouteTelemetryHeader)) + ")");
  RouteTelemetryHeader h;
  std::memcpy(&h, record, sizeof h);
  const int experts = static_cast<int>(h.experts);
  if (h.experts > 1u << 16 || kernels::route_telemetry_bytes(experts) != bytes)
    throw Error(ExitCode::probe_error, "telemetry record of " + std::to_string(bytes) +
                                           " bytes does not hold " + std::to_string(h.experts) +
                                           " experts (that needs " +
                                           std::to_string(kernels::route_telemetry_bytes(experts)) + ")");
  TelemetryWindow w;
  w.epoch = h.epoch;
  w.identity = {h.engine, h.layer, h.device};
  w.flags = h.flags;
  w.total = h.total;
  w.bitmap.resize(kernels::route_telemetry_bitmap_words(experts));
  w.counts.resize(static_cast<std::size_t>(experts));
  const auto* base = static_cast<const char*>(record);
  std::memcpy(w.bitmap.data(), base + kernels::route_telemetry_bitmap_offset(), 4 * w.bitmap.size());
  std::memcpy(w.counts.data(), base + kernels::route_telemetry_counts_offset(experts), 4 * w.counts.size());
  return w;
}

std::vector<std::byte> TelemetryWindow::to_record() const {
  const int e = experts();
  std::vector<std::byte> out(kernels::route_telemetry_bytes(e));
  RouteTelemetryHeader h{};
  h.epoch = epoch;
  h.engine = identity.engine;
  h.layer = identity.layer;
  h.device = identity.device;
  h.experts = static_cast<std::uint32_t>(e);
  h.flags = flags;
  h.total = total;
  std::memcpy(out.data(), &h, sizeof h);
  std::vector<std::uint32_t> words = bitmap;
  words.resize(kernels::route_telemetry_bitmap_words(e));
  std::memcpy(out.data() + kernels::route_telemetry_bitmap_offset(), words.data(), 4 * words.size());
  std::memcpy(out.data() + kernels::route_telemetry_counts_offset(e), counts.data(), 4 * counts.size());
  return out;
}

std::string_view to_string(WindowProblem p) {
  switch (p) {
    case WindowProblem::none: return "none";
    case WindowProblem::foreign_identity: return "foreign_identity";
    case WindowProblem::stale_epoch: return "stale_epoch";
    case WindowProblem::poisoned: return "poisoned";
    case WindowProblem::overflowed: return "overflowed";
    case WindowProblem::inconsistent: return "inconsistent";
  }
  return "unknown";
}

WindowCheck validate_window(const TelemetryWindow& w, const TelemetryIdentity& expected,
                            std::uint64_t epoch) {
  if (!(w.identity == expected))
    return {WindowProblem::foreign_identity,
            "record of " + w.identity.describe() + ", expected " + expected.describe()};
  if (w.epoch != epoch)
    return {WindowProblem::stale_epoch, "record holds epoch " + std::to_string(w.epoch) +
                                            ", the window open is epoch " + std::to_string(epoch)};
  if (w.poisoned())
    return {WindowProblem::poisoned,
            "an expert id outside [0, " + std::to_string(w.experts()) + ") was routed in epoch " +
                std::to_string(epoch)};
  if (w.overflowed())
    return {WindowProblem::overflowed, "an expert's count reached 4294967295 and saturated in epoch " +
                                           std::to_string(epoch) + ": the counts are lower bounds"};
  std::uint64_t sum = 0;
  for (int e = 0; e < w.experts(); ++e) {
    const std::uint32_t c = w.counts[static_cast<std::size_t>(e)];
    sum += c;
    if ((c > 0) != w.routed(e))
      return {WindowProblem::inconsistent, "expert " + std::to_string(e) + " has count " +
                                               std::to_string(c) + " but its bit is " +
                                               (w.routed(e) ? "set" : "clear")};
  }
  for (std::size_t i = 0; i < w.bitmap.size(); ++i) {
    const int valid_bits = std::min(32, w.experts() - static_cast<int>(32 * i));
    const std::uint32_t mask = valid_bits >= 32 ? 0xFFFFFFFFu : ((1u << valid_bits) - 1u);
    if (w.bitmap[i] & ~mask)
      return {WindowProblem::inconsistent, "bitmap word " + std::to_string(i) +
                                               " has bits past expert " + std::to_string(w.experts() - 1)};
  }
  if (sum != w.total)
    return {WindowProblem::inconsistent, "counts sum to " + std::to_string(sum) + ", the total is " +
                                             std::to_string(w.total)};
  return {};
}

std::optional<std::string> TelemetryEpochs::arm_refusal(const BoundaryState& s) const {
  if (armed()) return "telemetry is already armed (epoch " + std::to_string(epoch_) + "): reset it at a boundary instead";
  if (s.capturing) return "arm refused: the stream is capturing a graph (arming allocates)";
  if (s.replay_in_flight) return "arm refused: a graph replay is in flight";
  return std::nullopt;
}

std::optional<std::string> TelemetryEpochs::boundary_refusal(const BoundaryState& s,
                                                             std::string_view what) const {
  const std::string w(what);
  if (!armed()) return w + " refused: telemetry is not armed";
  if (s.capturing)
    return w + " refused: the stream is capturing a graph (epoch stays " + std::to_string(epoch_) +
           "; a reset captured into a graph would run on every replay)";
  if (s.replay_in_flight)
    return w + " refused: a replay of a graph that writes the record is in flight (epoch stays " +
           std::to_string(epoch_) + ")";
  return std::nullopt;
}

}  // namespace moe
