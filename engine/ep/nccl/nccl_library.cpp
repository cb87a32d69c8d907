#include "engine/ep/nccl/nccl_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "common/errors.hpp"
#include "engine/ep/nccl_version_gate.hpp"
#include "engine/ep/nvls_setting.hpp"

namespace moe::ep {

namespace {

template <class F>
void bind(void* lib, const char* name, F& fn, bool required) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn && required)
    throw EnvironmentError(std::string("libnccl.so.2 lacks ") + name +
                           " (NCCL 2.14 or newer is needed)");
}

NcclApi load() {
  // Before libnccl runs any code: it reads its environment once.
  turn_off_nvls();
  // Never unloaded: communicators and their proxy threads live until the process ends.
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* path = std::getenv("LD_LIBRARY_PATH");
    throw EnvironmentError(
        std::string("NCCL not available: libnccl.so.2 could not be loaded (") + dlerror() +
        "); install NCCL (e.g. pip install nvidia-nccl-cu13) and put its lib folder in "
        "LD_LIBRARY_PATH (now " + (path && *path ? path : "unset") + ")");
  }
  NcclApi api;
  bind(lib, "ncclGetVersion", api.GetVersion, true);
  bind(lib, "ncclGetUniqueId", api.GetUniqueId, true);
  bind(lib, "ncclCommInitRankConfig", api.CommInitRankConfig, true);
  bind(lib, "ncclCommFinalize", api.CommFinalize, true);
  bind(lib, "ncclCommDestroy", api.CommDestroy, true);
  bind(lib, "ncclCommAbort", api.CommAbort, true);
  bind(lib, "ncclCommGetAsyncError", api.CommGetAsyncError, true);
  bind(lib, "ncclGetErrorString", api.GetErrorString, true);
  bind(lib, "ncclGetLastError", api.GetLastError, true);
  bind(lib, "ncclGroupStart", api.GroupStart, true);
  bind(lib, "ncclGroupEnd", api.GroupEnd, true);
  bind(lib, "ncclSend", api.Send, true);
  bind(lib, "ncclRecv", api.Recv, true);
  bind(lib, "ncclAlltoAll", api.AlltoAll, false);
  bind(lib, "ncclMemAlloc", api.MemAlloc, false);
  bind(lib, "ncclMemFree", api.MemFree, false);
  bind(lib, "ncclCommWindowRegister", api.CommWindowRegister, false);
  bind(lib, "ncclCommWindowDeregister", api.CommWindowDeregister, false);
  bind(lib, "ncclDevCommCreate", api.DevCommCreate, false);
  bind(lib, "ncclDevCommDestroy", api.DevCommDestroy, false);
  if (api.GetVersion(&api.version) != ncclSuccess)
    throw EnvironmentError("libnccl.so.2: ncclGetVersion failed");
  if (const std::string problem = nccl_collectives_mismatch(api.version, NCCL_VERSION_CODE);
      !problem.empty())
    throw EnvironmentError("NCCL not usable: " + problem);
  return api;
}

}  // namespace

const NcclApi& nccl() {
  // A failed load is retried by the next caller, so each one gets the same one-line reason.
  static std::mutex mutex;
  static NcclApi api;
  static bool loaded = false;
  std::lock_guard lock(mutex);
  if (!loaded) {
    api = load();
    loaded = true;
  }
  return api;
}

std::string nccl_version_text(int code) { return nccl_version_string(code); }

void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line,
                      ncclComm_t comm) {
  std::string what = std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                     ": " + nccl().GetErrorString(status);
  if (comm) {
    const char* last = nccl().GetLastError(comm);
    if (last && *last) what += " (" + std::string(last) + ")";
  }
  throw Error(ExitCode::probe_error, what);
}

}  // namespace moe::ep
