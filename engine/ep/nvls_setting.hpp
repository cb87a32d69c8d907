#pragma once
// NVLink multicast (NVLS) stays off in every process that loads NCCL: nothing here is measured
// or checked with it, and on some systems its set-up fails or takes the communicator's memory.
// NCCL reads NCCL_NVLS_ENABLE from the process environment, so each process sets it itself
// before libnccl is loaded: the workers of moebench's own launcher and those that mpirun, srun
// or torchrun start alike, whatever they inherited.
#include <string>

namespace moe::ep {

// Why `value` of NCCL_NVLS_ENABLE cannot stay (empty when it can: unset, or "0").
std::string nvls_setting_problem(const char* value);

// Sets NCCL_NVLS_ENABLE=0 when unset; throws UsageError (exit 2) naming another value.
void turn_off_nvls();

}  // namespace moe::ep
