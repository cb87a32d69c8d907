#pragma once
// libnccl.so.2 loaded at run time (as NVML is, common/nvidia_driver.cpp): the binary starts on
// a machine without NCCL and only the expert-parallel probes need it. nccl.h gives the types;
// every entry point is looked up here, so nothing links against libnccl.
#include <nccl.h>

#include <string>

// The device API's types, declared here so the table builds against any nccl.h (2.14+); the
// LSA exchange includes nccl_device.h for their definitions (engine/ep/nccl/lsa_exchange.cpp).
struct ncclWindow_vidmem;
struct ncclDevComm;
struct ncclDevCommRequirements;

namespace moe::ep {

struct NcclApi {
  ncclResult_t (*GetVersion)(int*) = nullptr;
  ncclResult_t (*GetUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*CommInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
  ncclResult_t (*CommFinalize)(ncclComm_t) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  const char* (*GetLastError)(ncclComm_t) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;
  ncclResult_t (*Send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  // Null before NCCL 2.28: the exchange then uses grouped Send/Recv.
  ncclResult_t (*AlltoAll)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                           cudaStream_t) = nullptr;
  // The device API (NCCL 2.28+), used only by the LSA exchange; null when the library lacks it.
  ncclResult_t (*MemAlloc)(void**, size_t) = nullptr;
  ncclResult_t (*MemFree)(void*) = nullptr;
  ncclResult_t (*CommWindowRegister)(ncclComm_t, void*, size_t, ncclWindow_vidmem**, int) = nullptr;
  ncclResult_t (*CommWindowDeregister)(ncclComm_t, ncclWindow_vidmem*) = nullptr;
  ncclResult_t (*DevCommCreate)(ncclComm_t, const ncclDevCommRequirements*, ncclDevComm*) = nullptr;
  ncclResult_t (*DevCommDestroy)(ncclComm_t, const ncclDevComm*) = nullptr;
  int version = 0;  // ncclGetVersion's code, e.g. 22803 for 2.28.3
};

// The process's NCCL, loaded once on first use. Throws EnvironmentError (exit 3) naming what is
// missing: libnccl.so.2 not found (with LD_LIBRARY_PATH's part in it) or an entry point absent.
const NcclApi& nccl();

// "2.28.3" from ncclGetVersion's code.
std::string nccl_version_text(int code);

// Throws moe::Error (probe error, 4) naming the call, file, line and NCCL's error string (and
// the communicator's last error when one is given).
[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* call, const char* file,
                                   int line, ncclComm_t comm = nullptr);

}  // namespace moe::ep

// Wraps an NCCL call made through moe::ep::nccl(). ncclInProgress is success for the
// non-blocking communicators the watchdog polls.
#define MOE_NCCL_CHECK(call)                                                         \
  do {                                                                               \
    const ncclResult_t moe_nccl_status_ = (call);                                    \
    if (moe_nccl_status_ != ncclSuccess && moe_nccl_status_ != ncclInProgress)       \
      ::moe::ep::throw_nccl_error(moe_nccl_status_, #call, __FILE__, __LINE__);      \
  } while (0)
