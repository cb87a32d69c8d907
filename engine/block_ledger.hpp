#pragma once
// The allocator's record of which device block went where, kept apart from the allocator so
// its bookkeeping is tested on the CPU. A probe takes a mark before a destroy, free or regrow
// and then proves by address equality that the block freed there is the block the next request
// (or an interference kernel) received, rather than assuming the allocator's policy did it.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace moe {

class BlockLedger {
 public:
  enum class Event { handed_out, released, poisoned };
  struct Entry {
    std::uint64_t serial = 0;
    Event event = Event::handed_out;
    const void* ptr = nullptr;
    std::size_t bytes = 0;
  };

  // Bounded: a long run keeps the newest `capacity` entries (whole_since says whether
  // everything after a mark is still kept).
  explicit BlockLedger(std::size_t capacity = std::size_t{1} << 16) : capacity_(capacity) {}

  // The serial the next entry will get: everything recorded after this call is "since".
  std::uint64_t mark() const { return next_; }
  void record(Event event, const void* ptr, std::size_t bytes);

  std::vector<Entry> since(std::uint64_t mark, Event event) const;
  // False when entries after `mark` were dropped for capacity (the answer would be partial).
  bool whole_since(std::uint64_t mark) const;

  // The blocks of `freed` that one of `received` got again: same address. Each freed block is
  // listed once, in the order freed.
  static std::vector<const void*> reused(const std::vector<Entry>& freed,
                                         const std::vector<Entry>& received);

  // Blocks poisoned and not handed out since: their content is the poison pattern.
  bool holds_poison(const void* ptr) const;
  std::size_t poisoned_blocks() const { return poisoned_.size(); }

 private:
  std::size_t capacity_;
  std::uint64_t next_ = 0;
  std::uint64_t first_kept_ = 0;  // serial of the oldest entry still kept
  std::deque<Entry> entries_;
  std::unordered_map<const void*, std::size_t> poisoned_;  // ptr -> bytes
};

}  // namespace moe
