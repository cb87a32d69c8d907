// The allocator's block identity bookkeeping, on the CPU: which block was freed, which
// request received it again (by address), and which freed blocks still hold poison. The
// device side (the memset, the quarantine) runs in the GPU tests through probe two-engine.
#include <doctest/doctest.h>

#include <vector>

#include "engine/block_ledger.hpp"

TEST_CASE("block ledger: the block freed is the block the next request received, by address") {
  using moe::BlockLedger;
  BlockLedger ledger;
  int a = 0, b = 0, c = 0;
  ledger.record(BlockLedger::Event::handed_out, &a, 64);
  ledger.record(BlockLedger::Event::handed_out, &b, 64);
  const auto before_free = ledger.mark();
  ledger.record(BlockLedger::Event::released, &a, 64);
  ledger.record(BlockLedger::Event::released, &b, 64);
  const auto before_next = ledger.mark();
  ledger.record(BlockLedger::Event::handed_out, &c, 64);  // elsewhere
  ledger.record(BlockLedger::Event::handed_out, &b, 64);  // b again
  auto freed = ledger.since(before_free, BlockLedger::Event::released);
  std::erase_if(freed, [&](const BlockLedger::Entry& e) { return e.serial >= before_next; });
  CHECK(freed.size() == 2);
  const auto reused = BlockLedger::reused(freed, ledger.since(before_next, BlockLedger::Event::handed_out));
  CHECK(reused == std::vector<const void*>{&b});
  // A hand-out before the free does not count as receiving the freed block.
  CHECK(BlockLedger::reused(freed, ledger.since(0, BlockLedger::Event::handed_out)).size() == 2);
  CHECK(BlockLedger::reused(freed, {}).empty());
}

TEST_CASE("block ledger: poison is held until the block is handed out again") {
  using moe::BlockLedger;
  BlockLedger ledger;
  int a = 0;
  ledger.record(BlockLedger::Event::handed_out, &a, 512);
  CHECK_FALSE(ledger.holds_poison(&a));
  ledger.record(BlockLedger::Event::released, &a, 512);
  ledger.record(BlockLedger::Event::poisoned, &a, 512);
  CHECK(ledger.holds_poison(&a));
  CHECK(ledger.poisoned_blocks() == 1);
  ledger.record(BlockLedger::Event::handed_out, &a, 512);  // its new owner writes it
  CHECK_FALSE(ledger.holds_poison(&a));
}

TEST_CASE("block ledger: bounded, and says when a mark is older than what it kept") {
  using moe::BlockLedger;
  BlockLedger ledger(4);
  int blocks[8] = {};
  const auto start = ledger.mark();
  for (int& b : blocks) ledger.record(BlockLedger::Event::handed_out, &b, 16);
  CHECK(ledger.since(start, BlockLedger::Event::handed_out).size() == 4);
  CHECK_FALSE(ledger.whole_since(start));
  CHECK(ledger.whole_since(ledger.mark() - 4));
  CHECK(ledger.whole_since(ledger.mark()));
}
