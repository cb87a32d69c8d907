// Probe expert-residency's judgement of a transition from what the device holds: the pointer
// tables read back against the placement, the experts whose entries changed (not the plan's
// count), and which freed blocks the probe may poison.
#include <doctest/doctest.h>

#include "probes/expert_residency/table_check.hpp"
#include "probes/expert_residency/transition_audit.hpp"

using namespace moe;

namespace {
// Stand-in addresses: a device block and a pinned copy's mapping per expert and column.
char device_blocks[3][4], host_blocks[3][4];

PointerTables table_of(const char (&where)[4]) {  // 'D' or 'h' per expert
  PointerTables t{3, std::vector<const void*>(12, nullptr)};
  for (std::size_t e = 0; e < 3; ++e)
    for (int c = 0; c < 4; ++c)
      t.pointers[static_cast<std::size_t>(c) * 3 + e] = where[e] == 'D' ? &device_blocks[e][c] : &host_blocks[e][c];
  return t;
}
}  // namespace

TEST_CASE("tables that name every expert's copy where the placement says have no mismatch") {
  CHECK(table_mismatches(table_of("DhD"), table_of("DhD")).empty());
  CHECK(describe_mismatches({}, "plan").find("every pointer") != std::string::npos);
}

TEST_CASE("one column left stale is found, by expert and column") {
  PointerTables read_back = table_of("hhD");
  read_back.pointers[2 * 3 + 0] = &device_blocks[0][2];  // expert 0's down still names its device block
  const auto stale = table_mismatches(read_back, table_of("hhD"));
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].expert == 0);
  CHECK(stale[0].column == 2);
  CHECK(stale[0].found == &device_blocks[0][2]);
  CHECK(stale[0].expected == &host_blocks[0][2]);
  const std::string text = describe_mismatches(stale, "plan");
  CHECK(text.find("1 stale table entries") != std::string::npos);
  CHECK(text.find("expert 0 down") != std::string::npos);
}

TEST_CASE("experts moved are counted from the tables before and after, any column") {
  CHECK(experts_changed(table_of("DDD"), table_of("DDD")) == 0);
  CHECK(experts_changed(table_of("DDD"), table_of("hDh")) == 2);
  // A transition that changed one column of one expert moved that expert (as far as the
  // tables say); a plan that names three cold experts does not make three moved.
  PointerTables after = table_of("DDD");
  after.pointers[1 * 3 + 1] = &host_blocks[1][1];
  CHECK(experts_changed(table_of("DDD"), after) == 1);
}

TEST_CASE("tables of other sizes are refused, not compared") {
  PointerTables small{1, std::vector<const void*>(4, nullptr)};
  CHECK_THROWS(table_mismatches(small, table_of("DDD")));
  CHECK_THROWS(experts_changed(table_of("DDD"), small));
}

TEST_CASE("the blocks to poison: freed, not handed out again, not the old table array, each once") {
  int a = 0, b = 0, table = 0, c = 0;
  using E = BlockLedger::Entry;
  const std::vector<E> released{{10, BlockLedger::Event::released, &a, 64},
                                {11, BlockLedger::Event::released, &table, 32},
                                {12, BlockLedger::Event::released, &b, 64},
                                {13, BlockLedger::Event::released, &c, 64},
                                {15, BlockLedger::Event::released, &a, 64}};
  // b handed out again after it was freed: someone else's now. c handed out before its
  // release (the transition's own prepared copy): still freed at the end. a freed, handed
  // out again and freed again: freed at the end, by its last release.
  const std::vector<E> handed{{9, BlockLedger::Event::handed_out, &c, 64},
                              {14, BlockLedger::Event::handed_out, &a, 64},
                              {16, BlockLedger::Event::handed_out, &b, 64}};
  const auto poison = freed_blocks_to_poison(released, handed, &table);
  REQUIRE(poison.size() == 2);
  CHECK(poison[0].ptr == &c);
  CHECK(poison[1].ptr == &a);
  CHECK(poison[1].serial == 15);
}
