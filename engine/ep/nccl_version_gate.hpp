#pragma once
// Which libnccl.so.2 this build may load. libnccl is loaded at run time, so the library found
// can be any release, newer or older than the nccl.h compiled against:
//   - the collectives (ncclAlltoAll, grouped ncclSend/ncclRecv) pass a versioned ncclConfig_t
//     and need 2.14 (non-blocking communicators), within NCCL major 2;
//   - the lsa exchange compiles NCCL's device code inline: its kernels read ncclDevComm and
//     the window as the headers lay them out, and ncclDevCommCreate reads the
//     ncclDevCommRequirements the host passes. Those structures changed within 2.28
//     (barrierCount ahead of lsaBarrierCount from 2.28.7) and in nearly every release since
//     (a size / magic / version prefix from 2.29), so the loaded release must be one whose
//     device structures are laid out as the headers' are: an exact range, not major.minor.
// Pure functions of version codes and sizes, so the gate is tested without a library.
#include <cstddef>
#include <span>
#include <string>

namespace moe::ep {

// ncclGetVersion's code of X.Y.Z: X * 10000 + Y * 100 + Z (X * 1000 + Y * 100 + Z before 2.9).
constexpr int nccl_version_code(int major, int minor, int patch) {
  return (major <= 2 && minor <= 8) ? major * 1000 + minor * 100 + patch
                                    : major * 10000 + minor * 100 + patch;
}

// "2.28.9" from a version code of either form.
std::string nccl_version_string(int code);

// Releases whose device structures (ncclDevCommRequirements, ncclDevComm, the window) are laid
// out alike, with sizeof(ncclDevCommRequirements) on a 64-bit host: releases compared header
// by header; a release outside every range is not known to match any.
struct NcclDeviceLayout {
  int first = 0;  // version codes, inclusive
  int last = 0;
  std::size_t requirements_bytes = 0;
};
std::span<const NcclDeviceLayout> nccl_device_layouts();

// Why the loaded library cannot serve the collectives (empty when it can): older than 2.14
// or another major than the headers. Names both versions.
std::string nccl_collectives_mismatch(int loaded_version, int headers_version);

// Why the loaded library cannot run device code compiled against the headers (empty when it
// can): the headers are not a release of a known layout, their ncclDevCommRequirements is not
// that layout's size, or the loaded release is outside the headers' layout range. Names both
// versions and both structure sizes (the loaded one's where its release is known).
std::string nccl_device_api_mismatch(int loaded_version, int headers_version,
                                     std::size_t headers_requirements_bytes);

}  // namespace moe::ep
