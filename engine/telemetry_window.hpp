#pragma once
// The host side of route telemetry that needs no device: a window as copied from a record, the
// fail-closed validator, and the epoch state machine with its boundary refusals. Kept apart
// from the device record (route_telemetry_record.hpp) so all of it is tested on the CPU.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.hpp"

namespace moe {

// Who a record belongs to. The engine part is an instance number, never an address: a new
// engine at a freed one's address must not pass for it (docs/bugs.md, bug 1).
struct TelemetryIdentity {
  std::uint64_t engine = 0;
  int layer = 0;
  int device = 0;
  bool operator==(const TelemetryIdentity&) const = default;
  std::string describe() const;  // "engine 3 layer 0 device 0"
};

// One layer's record as copied to the host at a boundary.
struct TelemetryWindow {
  std::uint64_t epoch = 0;
  TelemetryIdentity identity;
  std::uint32_t flags = 0;
  std::uint64_t total = 0;               // pairs recorded (in range or not)
  std::vector<std::uint32_t> bitmap;     // ceil(E / 32) words: expert e routed
  std::vector<std::uint32_t> counts;     // [E] pairs an expert, saturating at 2^32 - 1

  int experts() const { return static_cast<int>(counts.size()); }
  bool poisoned() const;
  bool overflowed() const;
  bool routed(int expert) const;          // its bitmap bit
  std::vector<int> routed_experts() const;  // ascending
  bool empty() const { return total == 0; }

  // A window as the route kernel would leave it after routing `counts` (bits and total follow),
  // flags clear: an empty window to open, or a preload.
  static TelemetryWindow consistent(const TelemetryIdentity& identity, std::uint64_t epoch,
                                    std::vector<std::uint32_t> counts);
  // Parses the device layout of kernels/moe/route_telemetry.hpp. Raises moe::Error when
  // `bytes` is not the size a record of the header's expert count has.
  static TelemetryWindow from_record(const void* record, std::size_t bytes);
  // The device image of this window (the inverse of from_record).
  std::vector<std::byte> to_record() const;
};

// Why a window cannot be used, in the order the validator looks: a foreign record says
// nothing about ours, a stale one nothing about this window, and a poisoned or overflowed one
// has lost information; inconsistent means bitmap, counts and total disagree (a record
// written by something other than the route kernel).
enum class WindowProblem { none, foreign_identity, stale_epoch, poisoned, overflowed, inconsistent };
std::string_view to_string(WindowProblem p);

struct WindowCheck {
  WindowProblem problem = WindowProblem::none;
  std::string reason;  // names the values seen and the ones expected
  bool usable() const { return problem == WindowProblem::none; }
};

// Fail closed: anything but a record of `expected` at `epoch` whose flags are clear and whose
// bitmap, counts and total agree is refused. An empty window is usable (it routed nothing).
WindowCheck validate_window(const TelemetryWindow& window, const TelemetryIdentity& expected,
                            std::uint64_t epoch);

// A request refused at a boundary (capture running, replay in flight, not armed, a window that
// failed validation): nothing was changed, and the message says why.
class BoundaryRefused : public Error {
 public:
  explicit BoundaryRefused(const std::string& what) : Error(ExitCode::probe_error, what) {}
};

// What is going on at the moment a boundary call is made.
struct BoundaryState {
  bool capturing = false;         // the engine's stream is recording a graph
  bool replay_in_flight = false;  // a replay of a graph that writes the record has not ended
};

// The epoch of an engine's telemetry windows. Window 1 opens at arm(); only advance() (the
// boundary reset, after boundary_refusal() said nothing) moves it. Every check happens before
// any drain: a drain inside a capture would itself break the capture.
class TelemetryEpochs {
 public:
  bool armed() const { return epoch_ != 0; }
  std::uint64_t epoch() const { return epoch_; }  // 0: disarmed
  // Refused when already armed (the records exist: reset instead) or at a bad boundary.
  std::optional<std::string> arm_refusal(const BoundaryState& state) const;
  void arm() { epoch_ = 1; }
  // Why `what` ("reset", "snapshot") must be refused now, or nothing.
  std::optional<std::string> boundary_refusal(const BoundaryState& state, std::string_view what) const;
  void advance() { ++epoch_; }
  void disarm() { epoch_ = 0; }

 private:
  std::uint64_t epoch_ = 0;
};

}  // namespace moe
