#pragma once
// What expert-residency reads back after a transition, judged on the host: the layer's device
// pointer tables against the placement, and how many experts the tables say moved. Pure
// functions of the pointers, so the judgement is tested without a GPU.
#include <cstddef>
#include <string>
#include <vector>

namespace moe {

// The four pointer columns (gate_up, gate_up_scales, down, down_scales) of E + S experts, one
// column after the other, as the resident tables hold them.
struct PointerTables {
  std::size_t experts = 0;
  std::vector<const void*> pointers;  // 4 * experts
  const void* at(int column, std::size_t expert) const {
    return pointers[static_cast<std::size_t>(column) * experts + expert];
  }
};

struct TableMismatch {
  std::size_t expert = 0;
  int column = 0;
  const void* found = nullptr;
  const void* expected = nullptr;
};

// Every entry of `read_back` that is not the one `expected` names. Raises moe::Error when the
// two tables differ in size.
std::vector<TableMismatch> table_mismatches(const PointerTables& read_back, const PointerTables& expected);

// The experts any of whose pointers differ between two read-backs of the tables.
std::size_t experts_changed(const PointerTables& before, const PointerTables& after);

// One line for a check's detail: how many entries are stale and the first few, by expert and
// column name.
std::string describe_mismatches(const std::vector<TableMismatch>& mismatches, const std::string& when);

const char* column_name(int column);

}  // namespace moe
