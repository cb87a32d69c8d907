#include "engine/external/lent_device_memory.hpp"

#include <cstdio>
#include <exception>

#include "common/errors.hpp"

namespace moe::external {

LentDeviceMemory::LentDeviceMemory(DeviceAllocator& allocator) : allocator_(allocator) {
  table_.struct_size = sizeof table_;
  table_.context = this;
  table_.allocate = &LentDeviceMemory::allocate;
  table_.release = &LentDeviceMemory::release;
}

std::size_t LentDeviceMemory::blocks_lent() const {
  std::lock_guard lock(mutex_);
  return lent_.size();
}

moebench_status LentDeviceMemory::allocate(void* context, size_t bytes, void** block, moebench_error* error) {
  auto* self = static_cast<LentDeviceMemory*>(context);
  auto say = [&](moebench_status status, const char* why) {
    if (error && error->struct_size >= sizeof(moebench_error))
      std::snprintf(error->message, sizeof error->message, "%s", why);
    return status;
  };
  if (!self || !block || bytes == 0) return say(MOEBENCH_ERROR_INVALID_ARGUMENT, "no context, no result or 0 bytes");
  try {
    DeviceBuffer buffer = self->allocator_.allocate(bytes);
    *block = buffer.data();
    std::lock_guard lock(self->mutex_);
    self->lent_.emplace(buffer.data(), std::move(buffer));
    return MOEBENCH_OK;
  } catch (const EnvironmentError& e) {  // the device is full
    return say(MOEBENCH_ERROR_OUT_OF_MEMORY, e.what());
  } catch (const std::exception& e) {
    return say(MOEBENCH_ERROR_INTERNAL, e.what());
  }
}

void LentDeviceMemory::release(void* context, void* block) {
  auto* self = static_cast<LentDeviceMemory*>(context);
  if (!self || !block) return;
  DeviceBuffer buffer;
  {
    std::lock_guard lock(self->mutex_);
    const auto it = self->lent_.find(block);
    if (it == self->lent_.end()) {
      std::fprintf(stderr, "moebench: an adapter released %p, a block moebench did not lend it\n", block);
      return;
    }
    buffer = std::move(it->second);
    self->lent_.erase(it);
  }
  // `buffer` goes back to the allocator here, outside the lock.
}

}  // namespace moe::external
