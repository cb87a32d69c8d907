#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace moe {

// Reads the SM clock and the clock-limiting ("throttle") reasons through NVML. NVML ships with
// the driver, not the toolkit, so it is loaded at run time: the binary starts (and says why it
// cannot measure) on machines without it, and every reading is optional.
class GpuClocks {
 public:
  // `pci_bus_id` as cudaDeviceGetPCIBusId gives it ("0000:3B:00.0").
  explicit GpuClocks(const std::string& pci_bus_id);
  ~GpuClocks();
  GpuClocks(const GpuClocks&) = delete;
  GpuClocks& operator=(const GpuClocks&) = delete;

  bool available() const;
  std::optional<unsigned> sm_clock_mhz() const;
  std::optional<unsigned> max_sm_clock_mhz() const;
  std::optional<unsigned> memory_clock_mhz() const;
  // Reasons that lower the clock below what the load asks for (power or thermal limits,
  // hardware slowdown). Idle and application-clock settings are not counted as throttling.
  std::vector<std::string> throttle_reasons() const;

 private:
  struct Library;
  std::unique_ptr<Library> lib_;
};

}  // namespace moe
