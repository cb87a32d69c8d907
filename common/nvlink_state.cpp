#include "common/nvlink_state.hpp"

#include <dlfcn.h>

#include <cstring>

namespace moe {

namespace {
// The NVML entry points and types used, declared here because the toolkit ships no nvml.h.
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInvalidArgument = 2;  // a link index the GPU does not have
constexpr nvmlReturn_t kNotSupported = 3;     // no NVLink on this GPU
constexpr unsigned kMaxLinks = 18;            // NVML_NVLINK_MAX_LINKS
struct nvmlPciInfo_t {                        // nvmlPciInfo_st, as of NVML 11+
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Nvml {
  void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*remote)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  bool initialised = false;

  template <class F>
  bool load(F& fn, const char* name) {
    fn = handle ? reinterpret_cast<F>(dlsym(handle, name)) : nullptr;
    return fn != nullptr;
  }
  Nvml() {
    if (!handle) return;
    if (!load(init, "nvmlInit_v2") || !load(shutdown, "nvmlShutdown") ||
        !load(by_pci, "nvmlDeviceGetHandleByPciBusId_v2") || !load(state, "nvmlDeviceGetNvLinkState"))
      return;
    load(remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");  // optional: the far end's name
    initialised = init() == kSuccess;
  }
  ~Nvml() {
    if (initialised) shutdown();
    if (handle) dlclose(handle);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
};
}  // namespace

NvlinkState read_nvlink_state(const std::string& pci_bus_id) {
  NvlinkState s;
  Nvml nvml;
  if (!nvml.handle) {
    s.reason = "libnvidia-ml.so.1 not found";
    return s;
  }
  if (!nvml.state) {
    s.reason = "libnvidia-ml.so.1 lacks nvmlDeviceGetNvLinkState";
    return s;
  }
  if (!nvml.initialised) {
    s.reason = "nvmlInit failed";
    return s;
  }
  nvmlDevice_t device = nullptr;
  if (const nvmlReturn_t rc = nvml.by_pci(pci_bus_id.c_str(), &device); rc != kSuccess) {
    s.reason = "NVML does not know GPU " + pci_bus_id + " (NVML error " + std::to_string(rc) + ")";
    return s;
  }
  s.available = true;
  for (unsigned link = 0; link < kMaxLinks; ++link) {
    int active = 0;
    const nvmlReturn_t rc = nvml.state(device, link, &active);
    if (rc == kNotSupported) break;
    if (rc == kInvalidArgument) continue;
    if (rc != kSuccess) continue;  // a link NVML cannot read now: left out, not guessed
    NvlinkLink l;
    l.link = link;
    l.active = active != 0;
    nvmlPciInfo_t pci{};
    if (l.active && nvml.remote && nvml.remote(device, link, &pci) == kSuccess && pci.busId[0])
      l.remote_pci_bus_id = std::string(pci.busId, strnlen(pci.busId, sizeof pci.busId));
    s.links.push_back(l);
  }
  if (s.links.empty()) s.reason = "no NVLink";
  return s;
}

}  // namespace moe
