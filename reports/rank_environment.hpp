#pragma once
// The environment of an expert-parallel run, one entry a rank, for rank 0's report
// (`environment.ranks`, reports/SCHEMA.md): which GPU each rank ran on (UUID, PCI bus id,
// host) and the topology between them: peer access between each pair of ranks' devices
// (cudaDeviceCanAccessPeer) and each GPU's NVLink links from NVML.
#include <vector>

#include <nlohmann/json.hpp>

namespace moe::report {

// This rank's entry: {rank, hostname, device, name, uuid, pci_bus_id, peer_access, nvlink}.
// peer_access maps the PCI bus id of every other GPU this process sees to whether `device`
// can access it directly; nvlink is {available, reason?, links: [{link, active,
// remote_pci_bus_id?}]}. Needs the device; never throws (a failed query is left out, said).
nlohmann::json capture_rank_environment(int rank, int device);

// Every rank's entry (rank order; null for a rank that did not answer) merged into the block:
//   world, hosts (distinct host names), gpus_distinct (no UUID twice),
//   per_rank: the entries (peer_access dropped: it is the matrix) plus nvlink_active_links,
//   peer_access[r][s]: r's device can access s's (true/false); null on the diagonal, across
//     hosts and where r did not see s's device,
//   nvlink_links[r][s]: active links of r whose far end is s's GPU (null as above; 0 through
//     an NVSwitch, whose links end at the switch).
nlohmann::json merge_rank_environments(const std::vector<nlohmann::json>& per_rank);

}  // namespace moe::report
