#include "engine/ep/nccl_version_gate.hpp"

#include <array>

namespace moe::ep {

namespace {

constexpr int kCollectivesMinimum = nccl_version_code(2, 14, 0);  // non-blocking communicators

// Compared header by header (nccl_device/core.h and impl/*__types.h of each release tag):
//   2.28.3        ncclDevCommRequirements {lists, lsaMultimem, lsaBarrierCount}
//   2.28.7..2.28.9 barrierCount ahead of lsaBarrierCount, rail / LL-A2A / GIN counts (2.28.9
//                 changed only GIN function bodies)
//   2.29.2..2.29.3 a size / magic / version prefix (NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER)
//   2.29.7        GIN connection type, exclusive contexts, queue depth
//   2.30.3, 2.30.4, 2.30.7: the same requirements, other device types each time
constexpr std::array kLayouts{
    NcclDeviceLayout{nccl_version_code(2, 28, 3), nccl_version_code(2, 28, 3), 24},
    NcclDeviceLayout{nccl_version_code(2, 28, 7), nccl_version_code(2, 28, 9), 56},
    NcclDeviceLayout{nccl_version_code(2, 29, 2), nccl_version_code(2, 29, 3), 72},
    NcclDeviceLayout{nccl_version_code(2, 29, 7), nccl_version_code(2, 29, 7), 88},
    NcclDeviceLayout{nccl_version_code(2, 30, 3), nccl_version_code(2, 30, 3), 96},
    NcclDeviceLayout{nccl_version_code(2, 30, 4), nccl_version_code(2, 30, 4), 96},
    NcclDeviceLayout{nccl_version_code(2, 30, 7), nccl_version_code(2, 30, 7), 96},
};

const NcclDeviceLayout* layout_of(int version) {
  for (const NcclDeviceLayout& l : kLayouts)
    if (version >= l.first && version <= l.last) return &l;
  return nullptr;
}

std::string range_text(const NcclDeviceLayout& l) {
  return l.first == l.last ? "NCCL " + nccl_version_string(l.first)
                           : "NCCL " + nccl_version_string(l.first) + " to " + nccl_version_string(l.last);
}

std::string known_releases() {
  std::string s;
  for (const NcclDeviceLayout& l : kLayouts) s += (s.empty() ? "" : ", ") + range_text(l).substr(5);
  return s;
}

int major_of(int code) { return code < 10000 ? code / 1000 : code / 10000; }

}  // namespace

std::string nccl_version_string(int code) {
  if (code < 10000)  // before 2.9: X * 1000 + Y * 100 + Z
    return std::to_string(code / 1000) + "." + std::to_string((code / 100) % 10) + "." +
           std::to_string(code % 100);
  return std::to_string(code / 10000) + "." + std::to_string((code / 100) % 100) + "." +
         std::to_string(code % 100);
}

std::span<const NcclDeviceLayout> nccl_device_layouts() { return kLayouts; }

std::string nccl_collectives_mismatch(int loaded_version, int headers_version) {
  const std::string loaded = "the loaded libnccl.so.2 is NCCL " + nccl_version_string(loaded_version);
  const std::string headers = "this build's headers are NCCL " + nccl_version_string(headers_version);
  const std::string wanted = "load an NCCL " + std::to_string(major_of(headers_version)) +
                             ".x library, 2.14 or newer";
  if (loaded_version < kCollectivesMinimum)
    return loaded + ", older than the 2.14 that non-blocking communicators need (" + headers +
           "): " + wanted;
  if (major_of(loaded_version) != major_of(headers_version))
    return loaded + ", another major version than the headers (" + headers + "): " + wanted;
  return {};
}

std::string nccl_device_api_mismatch(int loaded_version, int headers_version,
                                     std::size_t headers_requirements_bytes) {
  const std::string headers = "NCCL " + nccl_version_string(headers_version);
  const NcclDeviceLayout* built = layout_of(headers_version);
  if (!built)
    return "the lsa kernels were compiled against the " + headers + " headers, a release whose " +
           "device structures this build does not know (known: " + known_releases() +
           "): rebuild against the headers of one of those";
  if (headers_requirements_bytes != built->requirements_bytes)
    return "the " + headers + " headers this build compiled against have a " +
           "ncclDevCommRequirements of " + std::to_string(headers_requirements_bytes) +
           " bytes, but " + headers + "'s is " + std::to_string(built->requirements_bytes) +
           " bytes: the headers are not that release's; rebuild against a release's own headers";
  if (loaded_version >= built->first && loaded_version <= built->last) return {};
  const NcclDeviceLayout* loaded = layout_of(loaded_version);
  const std::string loaded_size =
      loaded ? "ncclDevCommRequirements of " + std::to_string(loaded->requirements_bytes) + " bytes"
             : "a release whose device structures this build does not know";
  return "the loaded libnccl.so.2 is NCCL " + nccl_version_string(loaded_version) + " (" +
         loaded_size + "), but the lsa kernels were compiled against the " + headers +
         " headers (ncclDevCommRequirements of " + std::to_string(headers_requirements_bytes) +
         " bytes; device structures laid out alike in " + range_text(*built) +
         " only): load a library of that range (e.g. pip install nvidia-nccl-cu13==" +
         nccl_version_string(built->last) + ") or rebuild against the loaded library's headers";
}

}  // namespace moe::ep
