// Which loaded libnccl.so.2 a build accepts, from fake version codes and structure sizes: the
// collectives from 2.14 within major 2, the lsa exchange only inside the exact release range
// whose device structures are laid out as its headers' are, refused naming both sides.
#include <doctest/doctest.h>

#include <string>

#include "engine/ep/nccl_version_gate.hpp"

using namespace moe::ep;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr int v(int major, int minor, int patch) { return nccl_version_code(major, minor, patch); }

}  // namespace

TEST_CASE("version codes and their text, both of NCCL's forms") {
  CHECK(v(2, 28, 9) == 22809);
  CHECK(v(2, 8, 4) == 2804);  // before 2.9
  CHECK(nccl_version_string(22809) == "2.28.9");
  CHECK(nccl_version_string(21403) == "2.14.3");
  CHECK(nccl_version_string(2804) == "2.8.4");
  CHECK(nccl_version_string(30001) == "3.0.1");
}

TEST_CASE("collectives: 2.14 or newer of the headers' major, else refused naming both versions") {
  CHECK(nccl_collectives_mismatch(v(2, 28, 9), v(2, 28, 9)).empty());
  CHECK(nccl_collectives_mismatch(v(2, 14, 0), v(2, 28, 9)).empty());
  CHECK(nccl_collectives_mismatch(v(2, 32, 3), v(2, 28, 9)).empty());  // ncclConfig_t is versioned
  const std::string old = nccl_collectives_mismatch(v(2, 13, 4), v(2, 28, 9));
  CHECK(has(old, "NCCL 2.13.4"));
  CHECK(has(old, "NCCL 2.28.9"));
  CHECK(has(old, "2.14"));
  CHECK(has(nccl_collectives_mismatch(v(2, 8, 4), v(2, 28, 9)), "NCCL 2.8.4"));
  const std::string next = nccl_collectives_mismatch(v(3, 0, 1), v(2, 28, 9));
  CHECK(has(next, "NCCL 3.0.1"));
  CHECK(has(next, "another major version"));
  CHECK(has(next, "NCCL 2.28.9"));
}

TEST_CASE("lsa: accepted inside the headers' layout range only") {
  // Headers 2.28.9 (ncclDevCommRequirements of 56 bytes): 2.28.7 and 2.28.9 are laid out alike.
  CHECK(nccl_device_api_mismatch(v(2, 28, 9), v(2, 28, 9), 56).empty());
  CHECK(nccl_device_api_mismatch(v(2, 28, 7), v(2, 28, 9), 56).empty());
  CHECK(nccl_device_api_mismatch(v(2, 29, 2), v(2, 29, 3), 72).empty());
  // The same major.minor is not enough: 2.28.3 has no barrierCount ahead of lsaBarrierCount.
  const std::string older = nccl_device_api_mismatch(v(2, 28, 3), v(2, 28, 9), 56);
  CHECK(has(older, "NCCL 2.28.3 (ncclDevCommRequirements of 24 bytes)"));
  CHECK(has(older, "NCCL 2.28.9 headers (ncclDevCommRequirements of 56 bytes"));
  CHECK(has(older, "NCCL 2.28.7 to 2.28.9"));
  CHECK(has(older, "nvidia-nccl-cu13==2.28.9"));
  // A newer wheel, as an unpinned install brings: a size / magic / version prefix.
  const std::string newer = nccl_device_api_mismatch(v(2, 29, 2), v(2, 28, 9), 56);
  CHECK(has(newer, "NCCL 2.29.2 (ncclDevCommRequirements of 72 bytes)"));
  CHECK(has(newer, "NCCL 2.28.9 headers"));
  // A release this build knows nothing of is refused too, not guessed at.
  const std::string unknown = nccl_device_api_mismatch(v(2, 32, 3), v(2, 28, 9), 56);
  CHECK(has(unknown, "NCCL 2.32.3 (a release whose device structures this build does not know)"));
  CHECK(has(unknown, "56 bytes"));
  CHECK_FALSE(nccl_device_api_mismatch(v(2, 30, 4), v(2, 30, 3), 96).empty());  // same size, other types
}

TEST_CASE("lsa: headers of an unknown release, or of a size their release never had, are refused") {
  const std::string unknown = nccl_device_api_mismatch(v(2, 28, 10), v(2, 28, 10), 56);
  CHECK(has(unknown, "NCCL 2.28.10 headers"));
  CHECK(has(unknown, "2.28.7 to 2.28.9"));
  const std::string patched = nccl_device_api_mismatch(v(2, 28, 9), v(2, 28, 9), 64);
  CHECK(has(patched, "64 bytes"));
  CHECK(has(patched, "56 bytes"));
}

TEST_CASE("the layout table: ordered, disjoint ranges with their sizes") {
  int previous_last = 0;
  for (const NcclDeviceLayout& l : nccl_device_layouts()) {
    CHECK(l.first <= l.last);
    CHECK(l.first > previous_last);
    CHECK(l.requirements_bytes > 0);
    previous_last = l.last;
  }
}
