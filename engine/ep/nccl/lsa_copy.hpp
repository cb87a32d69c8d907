#pragma once
// The device side of the LSA exchange (engine/ep/nccl/lsa_exchange.hpp): one kernel moves the
// meaningful bytes of every block of a local send buffer into the same rank's slot of each
// peer's symmetric window through LSA pointers (stores over NVLink), between two LSA barriers:
//   entry  every peer reached this exchange on its stream, so its earlier kernels (the readers
//          of the rows this one overwrites, from the step before) have finished
//   exit   every peer's stores into this rank's window are done and visible (release/acquire)
// Each barrier gives up at a deadline and sets a status bit instead of spinning forever; once
// a bit is set, later launches skip their barriers and copies, so a stream queued behind a
// failed exchange drains within one timeout. Fixed sizes and arguments: capturable.
// Only built with NCCL's device API (MOEBENCH_HAVE_NCCL_DEVICE_API).
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <nccl_device.h>

#include <cstddef>
#include <cstdint>

#include "engine/ep/lsa_window_layout.hpp"

namespace moe::ep {

// CTAs of one copy launch; each has its own LSA barrier (index blockIdx.x), so the device
// communicator is created with this many.
constexpr int kLsaCopyCtas = 16;

struct LsaCopyArgs {
  const unsigned char* send = nullptr;  // local: `ranks` blocks of block_bytes, block d to rank d
  std::size_t block_bytes = 0;
  std::size_t header_bytes = 0;
  std::size_t row_bytes = 0;
  int capacity = 0;
  int ranks = 0;
  // The rows of block d: the int at counts + counts_stride * d (a header of this rank's).
  const unsigned char* counts = nullptr;
  std::size_t counts_stride = 0;
  std::size_t region_offset = 0;  // the receive blocks' first byte in every window
  unsigned* status = nullptr;     // this rank's status word (in its own window): LsaStatusBits
  std::uint64_t timeout_ns = 0;   // each barrier's deadline after it starts waiting
};

void enqueue_lsa_copy(const ncclDevComm& comm, ncclWindow_t window, const LsaCopyArgs& args,
                      cudaStream_t stream);

// Loads the copy kernel now: a lazy load at the first step could wait for the work in flight.
void preload_lsa_copy_kernel();

}  // namespace moe::ep
