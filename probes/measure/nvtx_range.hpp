#pragma once
#include <nvtx3/nvToolsExt.h>

#include <string>

namespace moe::measure {

// Names a stretch of host time for Nsight (probe, case, sample). Costs ~nothing when no tool
// is attached, so ranges stay on in every run.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace moe::measure
