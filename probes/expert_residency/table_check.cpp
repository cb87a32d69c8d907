#include "probes/expert_residency/table_check.hpp"

#include <cstdio>

#include "common/errors.hpp"

namespace moe {

namespace {
constexpr int kColumns = 4;

void require_same_size(const PointerTables& a, const PointerTables& b) {
  if (a.experts != b.experts || a.pointers.size() != b.pointers.size() ||
      a.pointers.size() != static_cast<std::size_t>(kColumns) * a.experts)
    throw Error(ExitCode::probe_error, "pointer tables of " + std::to_string(a.experts) + " and " +
                                           std::to_string(b.experts) + " experts (or of a wrong size) compared");
}

std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}
}  // namespace

const char* column_name(int column) {
  static const char* const names[kColumns] = {"gate_up", "gate_up_scales", "down", "down_scales"};
  return column >= 0 && column < kColumns ? names[column] : "?";
}

std::vector<TableMismatch> table_mismatches(const PointerTables& read_back, const PointerTables& expected) {
  require_same_size(read_back, expected);
  std::vector<TableMismatch> out;
  for (int c = 0; c < kColumns; ++c)
    for (std::size_t e = 0; e < expected.experts; ++e)
      if (read_back.at(c, e) != expected.at(c, e)) out.push_back({e, c, read_back.at(c, e), expected.at(c, e)});
  return out;
}

std::size_t experts_changed(const PointerTables& before, const PointerTables& after) {
  require_same_size(before, after);
  std::size_t changed = 0;
  for (std::size_t e = 0; e < before.experts; ++e) {
    bool moved = false;
    for (int c = 0; c < kColumns; ++c) moved = moved || before.at(c, e) != after.at(c, e);
    changed += moved ? 1 : 0;
  }
  return changed;
}

std::string describe_mismatches(const std::vector<TableMismatch>& mismatches, const std::string& when) {
  if (mismatches.empty()) return when + ": every pointer names the copy the placement says";
  std::string s = when + ": " + std::to_string(mismatches.size()) + " stale table entries";
  const std::size_t shown = mismatches.size() < 3 ? mismatches.size() : 3;
  for (std::size_t i = 0; i < shown; ++i) {
    const TableMismatch& m = mismatches[i];
    s += std::string(i == 0 ? " (" : ", ") + "expert " + std::to_string(m.expert) + " " + column_name(m.column) +
         " holds " + pointer_text(m.found) + ", its copy is at " + pointer_text(m.expected);
  }
  return s + (mismatches.size() > shown ? ", ...)" : ")");
}

}  // namespace moe
