#include "reports/rank_environment.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <set>
#include <string>

#include "common/nvlink_state.hpp"
#include "reports/environment.hpp"

namespace moe::report {

using nlohmann::json;

namespace {

std::string pci_of(int device) {
  char pci[32] = {};
  if (cudaDeviceGetPCIBusId(pci, sizeof pci, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return pci;
}

// PCI bus ids compare without case and without a domain's leading zeros: CUDA says
// "0000:3B:00.0", NVML "00000000:3B:00.0".
std::string pci_key(std::string id) {
  for (char& c : id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::size_t colon = id.find(':');
  if (colon == std::string::npos) return id;
  std::string domain = id.substr(0, colon);
  while (domain.size() > 1 && domain[0] == '0') domain.erase(0, 1);
  return domain + id.substr(colon);
}

}  // namespace

json capture_rank_environment(int rank, int device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  json e{{"rank", rank}, {"hostname", host}, {"device", device}};
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    (void)cudaGetLastError();
    e["gpu_reason"] = "cudaGetDeviceProperties failed for device " + std::to_string(device);
    return e;
  }
  e["name"] = p.name;
  e["uuid"] = uuid_string(p.uuid);
  const std::string pci = pci_of(device);
  e["pci_bus_id"] = pci;
  json peers = json::object();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) (void)cudaGetLastError();
  for (int other = 0; other < count; ++other) {
    if (other == device) continue;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, device, other) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    const std::string other_pci = pci_of(other);
    if (!other_pci.empty()) peers[other_pci] = can != 0;
  }
  e["peer_access"] = peers;
  const NvlinkState nv = read_nvlink_state(pci);
  json links = json::array();
  for (const NvlinkLink& l : nv.links) {
    json j{{"link", l.link}, {"active", l.active}};
    if (l.remote_pci_bus_id) j["remote_pci_bus_id"] = *l.remote_pci_bus_id;
    links.push_back(j);
  }
  e["nvlink"] = {{"available", nv.available}, {"links", links}};
  if (!nv.reason.empty()) e["nvlink"]["reason"] = nv.reason;
  return e;
}

json merge_rank_environments(const std::vector<json>& per_rank) {
  const std::size_t n = per_rank.size();
  json out{{"world", n}};
  std::set<std::string> hosts, uuids;
  bool distinct = true;
  json ranks = json::array();
  json peer = json::array(), nvlink = json::array();
  for (std::size_t r = 0; r < n; ++r) {
    const json& e = per_rank[r];
    if (!e.is_object()) {
      ranks.push_back({{"rank", r}, {"missing", true}});
      continue;
    }
    json entry = e;
    entry.erase("peer_access");
    int active = 0;
    if (e.contains("nvlink") && e["nvlink"].contains("links"))
      for (const json& l : e["nvlink"]["links"]) active += l.value("active", false) ? 1 : 0;
    entry["nvlink_active_links"] = active;
    ranks.push_back(entry);
    hosts.insert(e.value("hostname", std::string()));
    if (const std::string u = e.value("uuid", std::string()); !u.empty())
      distinct = uuids.insert(e.value("hostname", std::string()) + "/" + u).second && distinct;
  }
  for (std::size_t r = 0; r < n; ++r) {
    json peer_row = json::array(), link_row = json::array();
    for (std::size_t s = 0; s < n; ++s) {
      const json& a = per_rank[r];
      const json& b = per_rank[s];
      const bool known = r != s && a.is_object() && b.is_object() &&
                         a.value("hostname", std::string()) == b.value("hostname", std::string());
      if (!known) {
        peer_row.push_back(nullptr);
        link_row.push_back(nullptr);
        continue;
      }
      const std::string target = pci_key(b.value("pci_bus_id", std::string()));
      json access = nullptr;
      if (a.contains("peer_access") && a["peer_access"].is_object())
        for (const auto& [pci, can] : a["peer_access"].items())
          if (pci_key(pci) == target) access = can;
      // Two ranks on one GPU: the same device, no peer access needed or possible.
      if (a.value("pci_bus_id", std::string()) == b.value("pci_bus_id", std::string())) access = nullptr;
      peer_row.push_back(access);
      json links = nullptr;
      if (a.contains("nvlink") && a["nvlink"].value("available", false)) {
        int k = 0;
        for (const json& l : a["nvlink"]["links"])
          if (!target.empty() && l.value("active", false) &&
              pci_key(l.value("remote_pci_bus_id", std::string())) == target)
            ++k;
        links = k;
      }
      link_row.push_back(links);
    }
    peer.push_back(peer_row);
    nvlink.push_back(link_row);
  }
  out["hosts"] = hosts.size();
  out["gpus_distinct"] = distinct;
  out["per_rank"] = ranks;
  out["peer_access"] = peer;
  out["nvlink_links"] = nvlink;
  return out;
}

}  // namespace moe::report
