#pragma once
// The low-latency exchange through NCCL's device API (2.28+): the receive buffers of both
// directions live in one symmetric window (engine/ep/lsa_window_layout.hpp) that every rank
// registers with its communicator; a copy kernel (engine/ep/nccl/lsa_copy.hpp) stores each
// send block's header and rows straight into the peer's receive block for this rank through
// its LSA pointer (NVLink), between two LSA barriers with a device-side deadline. Only the
// meaningful bytes move: the header and `count` records, not the fixed block. Sizes and
// arguments never change, so a steady step is capturable. NVLink multicast stays off (no
// multimem requirement, no multicast object).
//
// Every rank must reach every peer by load/store (one host's GPUs over NVLink): otherwise, or
// when the loaded libnccl lacks the device API or is not a release whose device structures are
// laid out as those of the headers the device code was compiled against
// (engine/ep/nccl_version_gate.hpp), the build is refused with one line (exit 3).
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "engine/ep/lsa_window_layout.hpp"
#include "engine/ep/nccl/communicator.hpp"
#include "engine/ep/nccl/nccl_library.hpp"
#include "engine/ep/wire_layout.hpp"

namespace moe::ep {

class LsaExchange {
 public:
  // Collective: every rank of `comm` builds one with the same wire layout, in the same order
  // as its other collective calls. The kernels run on `stream`.
  LsaExchange(Communicator& comm, const WireLayout& wire, cudaStream_t stream);
  // Waits for `stream`, bounded: every barrier gives up at half the communicator's timeout,
  // and a kernel behind a failed one skips its own, so the wait ends within twice the timeout. Only
  // then are the device communicator, the window and its memory released (never under a
  // kernel that may still store into them; past the bound they are left to the process).
  ~LsaExchange();
  LsaExchange(const LsaExchange&) = delete;
  LsaExchange& operator=(const LsaExchange&) = delete;

  // This rank's receive buffers in its window: block s came from rank s.
  unsigned char* dispatch_recv() const;
  unsigned char* combine_recv() const;
  const LsaWindowLayout& layout() const;

  // Block d of `send` (the wire's dispatch blocks, counts in their headers) to rank d.
  void enqueue_dispatch(const void* send);
  // Block s of `combine_send` back to rank s: as many rows as this rank received from s.
  void enqueue_combine(const void* combine_send);

  // The status word (LsaStatusBits); read after the stream's work has finished.
  unsigned status();
  // Throws moe::Error (probe error, 4) naming the rank when a barrier gave up (at half the
  // communicator's timeout, so before the host watchdog's deadline for the same step).
  void raise_if_failed();

 private:
  struct Resources;
  std::unique_ptr<Resources> r_;
};

// Why the loaded library cannot run the lsa exchange, in a few words (empty when it can): a
// device-API function it lacks, or a release whose device structures differ from those of the
// headers this build compiled its kernels against (engine/ep/nccl_version_gate.hpp). In a
// build without the lsa exchange: the reason it was not built.
std::string lsa_library_problem(const NcclApi& api);

}  // namespace moe::ep
