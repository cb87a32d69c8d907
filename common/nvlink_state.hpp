#pragma once
// The NVLink links of one GPU as NVML reports them: per link whether it is active and the PCI
// bus id of what is at its other end (a peer GPU, or an NVSwitch). NVML ships with the driver,
// not the toolkit, so it is loaded at run time like GpuClocks: without it (or without NVLink)
// the answer says why instead of failing.
#include <optional>
#include <string>
#include <vector>

namespace moe {

struct NvlinkLink {
  unsigned link = 0;
  bool active = false;
  std::optional<std::string> remote_pci_bus_id;  // when NVML names the far end
};

struct NvlinkState {
  bool available = false;  // NVML answered for this GPU
  std::string reason;      // when not available, or "no NVLink" when the GPU has none
  std::vector<NvlinkLink> links;
};

// `pci_bus_id` as cudaDeviceGetPCIBusId gives it ("0000:3B:00.0").
NvlinkState read_nvlink_state(const std::string& pci_bus_id);

}  // namespace moe
