#include "common/gpu_clocks.hpp"

#include <dlfcn.h>

namespace moe {

namespace {
// The few NVML entry points used, declared here because the toolkit ships no nvml.h.
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;

struct ReasonBit {
  unsigned long long bit;
  const char* name;
};
// nvmlClocksEventReason* bits that mean the clock is being held down.
constexpr ReasonBit kThrottleBits[] = {
    {0x4ull, "sw_power_cap"},          {0x8ull, "hw_slowdown"},
    {0x20ull, "sw_thermal_slowdown"},  {0x40ull, "hw_thermal_slowdown"},
    {0x80ull, "hw_power_brake_slowdown"},
};
}  // namespace

struct GpuClocks::Library {
  void* handle = nullptr;
  nvmlDevice_t device = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  bool initialised = false;

  template <class F>
  bool load(F& fn, const char* name) {
    fn = reinterpret_cast<F>(dlsym(handle, name));
    return fn != nullptr;
  }

  explicit Library(const std::string& pci_bus_id) {
    handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) return;
    if (!load(init, "nvmlInit_v2") || !load(shutdown, "nvmlShutdown") ||
        !load(by_pci, "nvmlDeviceGetHandleByPciBusId_v2") ||
        !load(clock, "nvmlDeviceGetClockInfo") || !load(max_clock, "nvmlDeviceGetMaxClockInfo"))
      return;
    // Newer drivers name it "clocks event reasons"; older ones "throttle reasons".
    if (!load(reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
      load(reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (init() != kNvmlSuccess) return;
    initialised = true;
    if (by_pci(pci_bus_id.c_str(), &device) != kNvmlSuccess) device = nullptr;
  }

  ~Library() {
    if (initialised) shutdown();
    if (handle) dlclose(handle);
  }
};

GpuClocks::GpuClocks(const std::string& pci_bus_id)
    : lib_(std::make_unique<Library>(pci_bus_id)) {}

GpuClocks::~GpuClocks() = default;

bool GpuClocks::available() const { return lib_->device != nullptr; }

std::optional<unsigned> GpuClocks::sm_clock_mhz() const {
  unsigned mhz = 0;
  if (!available() || lib_->clock(lib_->device, kClockSm, &mhz) != kNvmlSuccess) return {};
  return mhz;
}

std::optional<unsigned> GpuClocks::max_sm_clock_mhz() const {
  unsigned mhz = 0;
  if (!available() || lib_->max_clock(lib_->device, kClockSm, &mhz) != kNvmlSuccess) return {};
  return mhz;
}

std::optional<unsigned> GpuClocks::memory_clock_mhz() const {
  unsigned mhz = 0;
  if (!available() || lib_->clock(lib_->device, kClockMem, &mhz) != kNvmlSuccess) return {};
  return mhz;
}

std::vector<std::string> GpuClocks::throttle_reasons() const {
  std::vector<std::string> out;
  unsigned long long bits = 0;
  if (!available() || !lib_->reasons || lib_->reasons(lib_->device, &bits) != kNvmlSuccess)
    return out;
  for (const ReasonBit& r : kThrottleBits)
    if (bits & r.bit) out.emplace_back(r.name);
  return out;
}

}  // namespace moe
