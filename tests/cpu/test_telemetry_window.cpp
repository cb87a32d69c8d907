// Route telemetry's host side, no device: the record layout round trip, the fail-closed
// validator (each refusal, an empty window, consistency) and the epoch state machine with its
// boundary refusals.
#include <doctest/doctest.h>

#include <cstring>

#include "engine/telemetry_window.hpp"
#include "kernels/moe/route_telemetry.hpp"

using namespace moe;

namespace {

const TelemetryIdentity kOwn{7, 2, 0};

// A consistent window of `experts` with the given counts (bits and total follow).
TelemetryWindow window_with(const std::vector<std::uint32_t>& counts, std::uint64_t epoch = 3) {
  return TelemetryWindow::consistent(kOwn, epoch, counts);
}

std::vector<std::uint32_t> some_counts(int experts) {
  std::vector<std::uint32_t> c(static_cast<std::size_t>(experts), 0u);
  for (int e = 0; e < experts; e += 3) c[static_cast<std::size_t>(e)] = static_cast<std::uint32_t>(e + 1);
  return c;
}

}  // namespace

TEST_CASE("a record's device image round-trips and its layout matches the kernel's view") {
  for (int experts : {1, 31, 32, 33, 64, 128, 257}) {
    CAPTURE(experts);
    TelemetryWindow w = window_with(some_counts(experts));
    w.flags = kernels::kTelemetryOverflowed;
    const auto image = w.to_record();
    CHECK(image.size() == kernels::route_telemetry_bytes(experts));
    CHECK(image.size() % 16 == 0);
    const TelemetryWindow back = TelemetryWindow::from_record(image.data(), image.size());
    CHECK(back.epoch == w.epoch);
    CHECK(back.identity == w.identity);
    CHECK(back.flags == w.flags);
    CHECK(back.total == w.total);
    CHECK(back.bitmap == w.bitmap);
    CHECK(back.counts == w.counts);
    // The kernel's pointers land on the same bytes from_record reads.
    std::vector<std::byte> copy = image;
    const kernels::RouteTelemetry view = kernels::route_telemetry_view(copy.data(), experts);
    CHECK(view.counts[experts - 1] == w.counts.back());
    CHECK(view.bitmap[0] == w.bitmap[0]);
    CHECK(view.header->total == w.total);
  }
}

TEST_CASE("a record image of the wrong size is refused with both sizes named") {
  const auto image = window_with(some_counts(64)).to_record();
  CHECK_THROWS_WITH_AS(TelemetryWindow::from_record(image.data(), image.size() - 16),
                       doctest::Contains("does not hold 64 experts"), Error);
  CHECK_THROWS_WITH_AS(TelemetryWindow::from_record(image.data(), 8), doctest::Contains("shorter than its header"),
                       Error);
}

TEST_CASE("the validator accepts a consistent window of its own identity and epoch") {
  const TelemetryWindow w = window_with(some_counts(64));
  const WindowCheck k = validate_window(w, kOwn, 3);
  CHECK(k.usable());
  CHECK(w.routed_experts().front() == 0);
  CHECK(w.routed(3));
  CHECK_FALSE(w.routed(1));
  CHECK_FALSE(w.routed(64));
  CHECK_FALSE(w.routed(-1));
}

TEST_CASE("an empty window is usable and routes nothing") {
  const TelemetryWindow w = window_with(std::vector<std::uint32_t>(64, 0u));
  CHECK(w.empty());
  CHECK(w.routed_experts().empty());
  CHECK(validate_window(w, kOwn, 3).usable());
}

TEST_CASE("the validator fails closed: each problem is refused with its reason") {
  SUBCASE("foreign identity: another engine, layer or device") {
    for (TelemetryIdentity other : {TelemetryIdentity{8, 2, 0}, TelemetryIdentity{7, 1, 0}, TelemetryIdentity{7, 2, 1}}) {
      const WindowCheck k = validate_window(window_with(some_counts(64)), other, 3);
      CHECK(k.problem == WindowProblem::foreign_identity);
      CHECK(k.reason.find("expected " + other.describe()) != std::string::npos);
    }
  }
  SUBCASE("stale epoch, older or newer") {
    for (std::uint64_t epoch : {2ull, 4ull}) {
      const WindowCheck k = validate_window(window_with(some_counts(64)), kOwn, epoch);
      CHECK(k.problem == WindowProblem::stale_epoch);
      CHECK(k.reason.find("epoch 3") != std::string::npos);
    }
  }
  SUBCASE("poisoned, even with counts that look right") {
    TelemetryWindow w = window_with(some_counts(64));
    w.flags |= kernels::kTelemetryPoisoned;
    CHECK(validate_window(w, kOwn, 3).problem == WindowProblem::poisoned);
  }
  SUBCASE("overflowed") {
    TelemetryWindow w = window_with(some_counts(64));
    w.counts[5] = 0xFFFFFFFFu;
    w.flags |= kernels::kTelemetryOverflowed;
    const WindowCheck k = validate_window(w, kOwn, 3);
    CHECK(k.problem == WindowProblem::overflowed);
    CHECK(k.reason.find("saturated") != std::string::npos);
  }
  SUBCASE("poison wins over overflow; identity wins over both") {
    TelemetryWindow w = window_with(some_counts(64));
    w.flags = kernels::kTelemetryPoisoned | kernels::kTelemetryOverflowed;
    CHECK(validate_window(w, kOwn, 3).problem == WindowProblem::poisoned);
    CHECK(validate_window(w, {1, 2, 0}, 3).problem == WindowProblem::foreign_identity);
  }
  SUBCASE("a wrapped count (no flag) is caught by the total") {
    TelemetryWindow w = window_with(some_counts(64));
    w.total += std::uint64_t{1} << 32;  // the 64-bit total saw 2^32 pairs the count lost
    const WindowCheck k = validate_window(w, kOwn, 3);
    CHECK(k.problem == WindowProblem::inconsistent);
    CHECK(k.reason.find("sum to") != std::string::npos);
  }
  SUBCASE("a bit without a count, or a count without its bit") {
    TelemetryWindow w = window_with(some_counts(64));
    w.bitmap[0] |= 2u;  // expert 1 has count 0
    CHECK(validate_window(w, kOwn, 3).problem == WindowProblem::inconsistent);
    TelemetryWindow v = window_with(some_counts(64));
    v.bitmap[0] &= ~1u;  // expert 0 has count 1
    CHECK(validate_window(v, kOwn, 3).problem == WindowProblem::inconsistent);
  }
  SUBCASE("bits past the last expert") {
    TelemetryWindow w = window_with(some_counts(40));
    w.bitmap[1] |= 1u << 20;  // expert 52 of 40
    const WindowCheck k = validate_window(w, kOwn, 3);
    CHECK(k.problem == WindowProblem::inconsistent);
    CHECK(k.reason.find("past expert 39") != std::string::npos);
  }
}

TEST_CASE("epochs: arm opens window 1, only a reset at a safe boundary advances") {
  TelemetryEpochs t;
  const BoundaryState safe{}, capturing{true, false}, replaying{false, true};
  CHECK_FALSE(t.armed());
  CHECK(t.boundary_refusal(safe, "reset")->find("not armed") != std::string::npos);
  CHECK(t.arm_refusal(capturing).has_value());
  CHECK(t.arm_refusal(replaying).has_value());
  REQUIRE_FALSE(t.arm_refusal(safe).has_value());
  t.arm();
  CHECK(t.epoch() == 1);
  CHECK(t.arm_refusal(safe)->find("already armed") != std::string::npos);

  const auto in_capture = t.boundary_refusal(capturing, "reset");
  REQUIRE(in_capture.has_value());
  CHECK(in_capture->find("capturing") != std::string::npos);
  CHECK(in_capture->find("epoch stays 1") != std::string::npos);
  CHECK(t.epoch() == 1);  // a refusal changes nothing
  const auto in_flight = t.boundary_refusal(replaying, "snapshot");
  REQUIRE(in_flight.has_value());
  CHECK(in_flight->rfind("snapshot refused", 0) == 0);
  CHECK(in_flight->find("in flight") != std::string::npos);
  // Capture is named first when both hold: the check that must come before any drain.
  CHECK(t.boundary_refusal({true, true}, "reset")->find("capturing") != std::string::npos);

  CHECK_FALSE(t.boundary_refusal(safe, "reset").has_value());
  t.advance();
  CHECK(t.epoch() == 2);
  t.disarm();
  CHECK_FALSE(t.armed());
}
