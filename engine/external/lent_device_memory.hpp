#pragma once
// Device memory moebench lends an engine built by an adapter (engine_abi.h,
// moebench_device_allocator; MOEBENCH_CAP_DEVICE_ALLOCATOR): each block the adapter asks for is a
// buffer of one of moebench's allocators, so which blocks an engine gave back and who received
// them next is that allocator's record (probe drop-after-inflight). Blocks the adapter never gave
// back are returned when this object dies, after its owner drained.
#include <mutex>
#include <unordered_map>

#include "engine/device_allocator.hpp"
#include "moebench/engine_abi.h"

namespace moe::external {

class LentDeviceMemory {
 public:
  explicit LentDeviceMemory(DeviceAllocator& allocator);
  LentDeviceMemory(const LentDeviceMemory&) = delete;
  LentDeviceMemory& operator=(const LentDeviceMemory&) = delete;

  // What moebench_engine_desc.allocator points to: valid while this object lives.
  const moebench_device_allocator* table() const { return &table_; }
  std::size_t blocks_lent() const;

 private:
  static moebench_status allocate(void* context, size_t bytes, void** block, moebench_error* error);
  static void release(void* context, void* block);

  DeviceAllocator& allocator_;
  moebench_device_allocator table_{};
  mutable std::mutex mutex_;
  std::unordered_map<void*, DeviceBuffer> lent_;
};

}  // namespace moe::external
