#pragma once
// The rows of `moebench selftest`: every probe that has mutations (and the measurement probes)
// clean and under each of its historic-bug mutations, two-engine under both allocator modes.
// A row this machine or build cannot run stays in the plan with the reason, so the matrix
// never looks whole when it is not: a probe not built here (the expert-parallel ones without
// NCCL), one needing more GPUs than there are, one an engine adapter cannot serve.
#include <functional>
#include <string>
#include <vector>

#include "engine/fault_injection.hpp"
#include "probes/probe.hpp"
#include "reports/verdict.hpp"

namespace moe {

struct SelftestRow {
  std::string probe;
  const MutationInfo* mutation = nullptr;  // null: the clean row
  report::CatchTarget target;              // mutation rows: what catching it means
  std::string allocator = "caching";
  std::string not_run;  // non-empty: why this row does not run here
};

// `gpus`: the GPUs this machine has. `adapter_refusal`: with an engine adapter (--engine), why
// it cannot run a probe (empty when it can); an adapter's matrix is its clean rows only, the
// mutations being moebench's own engine's bugs. Null: moebench's own engine.
std::vector<SelftestRow> selftest_plan(int gpus,
                                       const std::function<std::string(const ProbeInfo&)>& adapter_refusal = nullptr);

// How many rows of a plan do not run.
int rows_not_run(const std::vector<SelftestRow>& plan);

}  // namespace moe
