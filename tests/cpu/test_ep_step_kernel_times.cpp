// A rank's CUPTI kernel times of one step split into the exchange's kernels and the rest
// (probes/ep_common/step_kernel_times.hpp), on kernel records as CUPTI names them: NCCL's and
// the lsa copy count as the exchange, moebench's own kernels do not, and overlapping kernels
// count once.
#include <doctest/doctest.h>

#include <vector>

#include "probes/ep_common/step_kernel_times.hpp"

using namespace moe;
using namespace moe::ep;

namespace {
constexpr const char* kNcclSendRecv = "_Z23ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE";
constexpr const char* kNcclAllToAll = "_Z26ncclDevKernel_AllToAll_RING24ncclDevKernelArgsStorageILm4096EE";
constexpr const char* kLsaCopy = "_ZN3moe2ep12_GLOBAL__N_115lsa_copy_kernelE11ncclDevCommP13ncclWindow_vsNS0_8LsaCopyE";
constexpr const char* kPack = "_ZN3moe7kernels2ep20pack_dispatch_kernelENS1_12PackDispatchE";
constexpr const char* kRows = "_ZN3moe7kernels2ep18expert_rows_kernelENS1_10ExpertRowsE";
}  // namespace

TEST_CASE("step kernel times: NCCL's kernels and the lsa copy are the exchange, moebench's are not") {
  CHECK(is_exchange_kernel(kNcclSendRecv));
  CHECK(is_exchange_kernel(kNcclAllToAll));
  CHECK(is_exchange_kernel(kLsaCopy));
  CHECK_FALSE(is_exchange_kernel(kPack));
  CHECK_FALSE(is_exchange_kernel(kRows));
  CHECK_FALSE(is_exchange_kernel(""));
}

TEST_CASE("step kernel times: unions per group, overlaps counted once") {
  // pack 0-10 us, dispatch exchange 10-40, expert rows 38-60 (starts early: PDL), combine
  // exchange 70-90; times in ns.
  const std::vector<measure::KernelRecord> step{{kPack, 0, 10000},
                                                {kNcclSendRecv, 10000, 40000},
                                                {kRows, 38000, 60000},
                                                {kNcclSendRecv, 70000, 90000}};
  const StepKernelTimes t = step_kernel_times(step);
  CHECK(t.kernels == 4);
  CHECK(t.exchange_kernels == 2);
  CHECK(t.exchange_busy_us == doctest::Approx(50.0));
  CHECK(t.other_busy_us == doctest::Approx(32.0));
  CHECK(t.busy_us == doctest::Approx(80.0));  // 0-60 and 70-90
  // The same step with the expert kernel misnamed as NCCL's: the split moves, the union not.
  std::vector<measure::KernelRecord> renamed = step;
  renamed[2].name = kNcclAllToAll;
  const StepKernelTimes r = step_kernel_times(renamed);
  CHECK(r.exchange_kernels == 3);
  CHECK(r.exchange_busy_us == doctest::Approx(70.0));
  CHECK(r.other_busy_us == doctest::Approx(10.0));
  CHECK(r.busy_us == doctest::Approx(80.0));
  const StepKernelTimes none = step_kernel_times({});
  CHECK(none.kernels == 0);
  CHECK(none.busy_us == 0);
}
