#include "engine/ep/nccl/lsa_exchange.hpp"

#include "common/errors.hpp"
#include "engine/ep/exchange_names.hpp"
#include "engine/ep/nccl_version_gate.hpp"

#if MOEBENCH_HAVE_NCCL_DEVICE_API
#include <nccl_device.h>

#include <thread>

#include "common/cuda_check.hpp"
#include "engine/ep/nccl/lsa_copy.hpp"

namespace moe::ep {

namespace {

// A device-API call that the machine may not support (no symmetric memory, no VMM, memory
// full): its failure is the environment's, exit 3, in NCCL's words.
void require(ncclResult_t status, const char* call, ncclComm_t comm) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  const char* last = nccl().GetLastError(comm);
  throw EnvironmentError(std::string("exchange lsa: ") + call + " failed: " +
                         nccl().GetErrorString(status) +
                         (last && *last ? " (" + std::string(last) + ")" : std::string()));
}

}  // namespace

struct LsaExchange::Resources {
  Resources(Communicator& c, const WireLayout& w, cudaStream_t s)
      : comm(c), stream(s), wire(w), layout(make_lsa_window_layout(w)) {}
  ~Resources();
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;

  LsaCopyArgs args(const void* send, std::size_t block_bytes, std::size_t row_bytes,
                   std::size_t region_offset, const unsigned char* counts) const;
  unsigned* status_word() const {
    return reinterpret_cast<unsigned*>(static_cast<unsigned char*>(memory) + layout.status_offset);
  }

  Communicator& comm;
  cudaStream_t stream;
  WireLayout wire;
  LsaWindowLayout layout;
  ncclDevComm dev{};
  bool have_dev = false;
  void* memory = nullptr;
  ncclWindow_t window = nullptr;
};

LsaExchange::Resources::~Resources() {
  // The kernels store into the peers' windows and theirs into this one; nothing is released
  // while this rank's stream may still run one. Its barriers give up at half the timeout and
  // later launches skip theirs, so two timeouts bound the wait with room to spare.
  const auto deadline = std::chrono::steady_clock::now() + 2 * comm.timeout() + std::chrono::seconds(1);
  cudaError_t s = cudaStreamQuery(stream);
  while (s == cudaErrorNotReady && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s = cudaStreamQuery(stream);
  }
  (void)cudaGetLastError();
  if (s == cudaErrorNotReady) return;  // still running: leave the memory to the process
  const NcclApi& api = nccl();
  // ncclCommAbort has released the communicator's device state and windows with it.
  if (!comm.aborted()) {
    if (have_dev) (void)api.DevCommDestroy(comm.get(), &dev);
    if (window) (void)api.CommWindowDeregister(comm.get(), window);
  }
  // A peer that still maps these pages keeps them alive until it deregisters (CUDA VMM), so a
  // late store of a peer that timed out never lands in another owner's memory.
  if (memory) (void)api.MemFree(memory);
}

LsaCopyArgs LsaExchange::Resources::args(const void* send, std::size_t block_bytes,
                                         std::size_t row_bytes, std::size_t region_offset,
                                         const unsigned char* counts) const {
  LsaCopyArgs a;
  a.send = static_cast<const unsigned char*>(send);
  a.block_bytes = block_bytes;
  a.header_bytes = WireLayout::kHeaderBytes;
  a.row_bytes = row_bytes;
  a.capacity = wire.capacity;
  a.ranks = wire.ranks;
  a.counts = counts;
  a.counts_stride = layout.dispatch_block_bytes;
  a.region_offset = region_offset;
  a.status = status_word();
  // Half the watchdog's timeout: a barrier gives up, and the stream drains, before the host's
  // deadline, so the step raises the device's own error (raise_if_failed) naming the rank.
  a.timeout_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(comm.timeout()).count() / 2);
  return a;
}

LsaExchange::LsaExchange(Communicator& comm, const WireLayout& wire, cudaStream_t stream)
    : r_(std::make_unique<Resources>(comm, wire, stream)) {
  const NcclApi& api = nccl();
  if (const std::string problem = lsa_library_problem(api); !problem.empty())
    throw EnvironmentError("exchange lsa: " + problem);
  preload_lsa_copy_kernel();
  // One LSA barrier a copy CTA; no multimem (NVLink multicast stays off).
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;  // size, magic, version (2.29+)
#else
  ncclDevCommRequirements reqs{};
#endif
  reqs.lsaMultimem = false;
  reqs.lsaBarrierCount = kLsaCopyCtas;
  require(api.DevCommCreate(comm.get(), &reqs, &r_->dev), "ncclDevCommCreate", comm.get());
  comm.settle("ncclDevCommCreate");
  r_->have_dev = true;
  // Every rank sees the same teams, so every rank refuses together: nobody waits on a peer.
  if (r_->dev.lsaSize != r_->dev.nRanks)
    throw EnvironmentError(
        "exchange lsa: rank " + std::to_string(comm.rank()) + " reaches " +
        std::to_string(r_->dev.lsaSize) + " of the " + std::to_string(r_->dev.nRanks) +
        " ranks by load/store (its LSA team); every rank must be a GPU of one host joined by "
        "NVLink or PCIe peer access (across hosts use alltoall or sendrecv)");
  require(api.MemAlloc(&r_->memory, r_->layout.window_bytes), "ncclMemAlloc", comm.get());
  // Count 0 in every header and a clear status before any peer can store here: a peer's
  // first store waits for this rank's first entry barrier, which runs after this.
  MOE_CUDA_CHECK(cudaMemsetAsync(r_->memory, 0, r_->layout.window_bytes, stream));
  comm.wait(stream, "clearing the lsa window");
  require(api.CommWindowRegister(comm.get(), r_->memory, r_->layout.window_bytes, &r_->window,
                                 NCCL_WIN_COLL_SYMMETRIC),
          "ncclCommWindowRegister", comm.get());
  comm.settle("ncclCommWindowRegister (" + std::to_string(r_->layout.window_bytes) + " bytes)");
  if (!r_->window)
    throw EnvironmentError("exchange lsa: the communicator has no symmetric memory support "
                           "(ncclCommWindowRegister returned no window; NCCL_CUMEM_ENABLE=0 or "
                           "GPUs without CUDA VMM peer mappings)");
}

LsaExchange::~LsaExchange() = default;

unsigned char* LsaExchange::dispatch_recv() const {
  return static_cast<unsigned char*>(r_->memory) + r_->layout.dispatch_offset;
}

unsigned char* LsaExchange::combine_recv() const {
  return static_cast<unsigned char*>(r_->memory) + r_->layout.combine_offset;
}

const LsaWindowLayout& LsaExchange::layout() const { return r_->layout; }

void LsaExchange::enqueue_dispatch(const void* send) {
  // The counts are the send blocks' own headers.
  const LsaCopyArgs a = r_->args(send, r_->layout.dispatch_block_bytes, r_->wire.dispatch_row_bytes(),
                                 r_->layout.dispatch_offset, static_cast<const unsigned char*>(send));
  enqueue_lsa_copy(r_->dev, r_->window, a, r_->stream);
}

void LsaExchange::enqueue_combine(const void* combine_send) {
  // Rank s gets back as many partials as this rank received rows from it: the header of
  // receive block s.
  const LsaCopyArgs a = r_->args(combine_send, r_->layout.combine_block_bytes, r_->wire.combine_row_bytes(),
                                 r_->layout.combine_offset, dispatch_recv());
  enqueue_lsa_copy(r_->dev, r_->window, a, r_->stream);
}

unsigned LsaExchange::status() {
  unsigned s = 0;
  MOE_CUDA_CHECK(cudaMemcpy(&s, r_->status_word(), sizeof s, cudaMemcpyDeviceToHost));
  return s;
}

void LsaExchange::raise_if_failed() {
  const unsigned s = status();
  if (s == 0) return;
  const std::string rank = "rank " + std::to_string(r_->comm.rank());
  const std::string after = std::to_string(r_->comm.timeout().count() / 2) + " ms";
  if (s & kLsaEntryTimeout)
    throw Error(ExitCode::probe_error, rank + ": exchange lsa: a peer rank did not reach the "
                                              "exchange's entry barrier within " + after +
                                              " (a peer rank is missing or stuck)");
  throw Error(ExitCode::probe_error, rank + ": exchange lsa: a peer rank did not finish its "
                                            "stores within " + after + " (status " +
                                            std::to_string(s) + ")");
}

std::string lsa_library_problem(const NcclApi& api) {
  const std::pair<const void*, const char*> needed[] = {
      {reinterpret_cast<const void*>(api.MemAlloc), "ncclMemAlloc"},
      {reinterpret_cast<const void*>(api.MemFree), "ncclMemFree"},
      {reinterpret_cast<const void*>(api.CommWindowRegister), "ncclCommWindowRegister"},
      {reinterpret_cast<const void*>(api.CommWindowDeregister), "ncclCommWindowDeregister"},
      {reinterpret_cast<const void*>(api.DevCommCreate), "ncclDevCommCreate"},
      {reinterpret_cast<const void*>(api.DevCommDestroy), "ncclDevCommDestroy"}};
  for (const auto& [fn, name] : needed)
    if (!fn)
      return "the loaded libnccl.so.2 (NCCL " + nccl_version_text(api.version) + ") lacks " +
             name + " (the device API needs NCCL 2.28 or newer)";
  // The kernels read ncclDevComm and the window inline, as the headers lay them out, and
  // ncclDevCommCreate reads the requirements as the library lays them out: an exact range.
  return nccl_device_api_mismatch(api.version, NCCL_VERSION_CODE, sizeof(ncclDevCommRequirements));
}

}  // namespace moe::ep

#else  // built without NCCL's device API: refused with the reason

namespace moe::ep {

struct LsaExchange::Resources {};

LsaExchange::LsaExchange(Communicator&, const WireLayout&, cudaStream_t) {
  throw EnvironmentError("exchange lsa was not built: " + std::string(lsa_exchange_not_built_reason()));
}
LsaExchange::~LsaExchange() = default;
unsigned char* LsaExchange::dispatch_recv() const { return nullptr; }
unsigned char* LsaExchange::combine_recv() const { return nullptr; }
const LsaWindowLayout& LsaExchange::layout() const {
  static const LsaWindowLayout none;
  return none;
}
void LsaExchange::enqueue_dispatch(const void*) {}
void LsaExchange::enqueue_combine(const void*) {}
unsigned LsaExchange::status() { return 0; }
void LsaExchange::raise_if_failed() {}

std::string lsa_library_problem(const NcclApi&) {
  return "not built: " + std::string(lsa_exchange_not_built_reason());
}

}  // namespace moe::ep
#endif
