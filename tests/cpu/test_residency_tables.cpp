// Expert residency's pointer-table choice (engine/residency_transition.hpp, table_pointer): the
// tables name the copy where an expert's placement says it lives, never just "the host copy if
// there is one". A transition's commit holds both copies of every moved tensor until the new
// tables are uploaded; naming the host copy then sent an expert coming back to the device to
// its host copy, freed right after (an illegal address on the next forward).
#include <doctest/doctest.h>

#include "engine/residency_transition.hpp"

using namespace moe;

namespace {
// Stand-ins for a device buffer and the device mapping of a pinned host copy.
int device_copy = 0, host_copy = 0;
const void* const kDevice = &device_copy;
const void* const kHost = &host_copy;
}  // namespace

TEST_CASE("mid-commit, with both copies alive, the tables name the placement's copy") {
  // Coming back to the device: the host copy still exists until the tables are rebuilt.
  CHECK(table_pointer(Placement::device, kDevice, kHost) == kDevice);
  // Going cold: the device copy still exists until the tables are rebuilt.
  CHECK(table_pointer(Placement::host, kDevice, kHost) == kHost);
}

TEST_CASE("at rest, one copy: the tables name it") {
  CHECK(table_pointer(Placement::device, kDevice, nullptr) == kDevice);
  CHECK(table_pointer(Placement::host, nullptr, kHost) == kHost);
}

TEST_CASE("a tensor absent in the format (bf16 scales) is null wherever its expert lives") {
  CHECK(table_pointer(Placement::device, nullptr, nullptr) == nullptr);
  CHECK(table_pointer(Placement::host, nullptr, nullptr) == nullptr);
}

TEST_CASE("a group split by the no-rollback mutation: each tensor's only copy is named") {
  // Under Mutation::residency_no_rollback the placement moves with the first tensor of a group
  // while the others are still where they were, each in one place alone.
  CHECK(table_pointer(Placement::host, kDevice, nullptr) == kDevice);
  CHECK(table_pointer(Placement::device, nullptr, kHost) == kHost);
}

TEST_CASE("a commit in either direction names only copies that survive it") {
  // The commit's order: both copies alive, placement set to the target, tables rebuilt, then
  // the source freed. Whatever the tables named must not be the freed source.
  for (Placement to : {Placement::device, Placement::host}) {
    CAPTURE(static_cast<int>(to));
    const void* target = to == Placement::device ? kDevice : kHost;
    const void* source = to == Placement::device ? kHost : kDevice;
    const void* named = table_pointer(to, kDevice, kHost);
    CHECK(named == target);
    CHECK(named != source);
  }
}
