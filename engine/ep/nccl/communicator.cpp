#include "engine/ep/nccl/communicator.hpp"

#include "common/cuda_check.hpp"
#include "common/errors.hpp"
#include "engine/ep/nccl/nccl_library.hpp"
#include "engine/ep/watched_wait.hpp"

namespace moe::ep {

namespace {
std::string seconds_text(std::chrono::milliseconds t) {
  return std::to_string(static_cast<double>(t.count()) / 1000.0).substr(0, 5) + " s";
}
}  // namespace

Communicator::Communicator(int rank, int world, const ncclUniqueId& id,
                           std::chrono::milliseconds timeout, bool watchdog)
    : rank_(rank), world_(world), timeout_(timeout), watchdog_(watchdog) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // init and every call return at once; poll() waits with a deadline
  MOE_NCCL_CHECK(nccl().CommInitRankConfig(&comm_, world, id, rank, &config));
  poll("ncclCommInitRankConfig (" + std::to_string(world) + " ranks)", nullptr, true);
}

Communicator::~Communicator() {
  if (!comm_ || aborted_) return;  // ncclCommAbort has freed it already
  try {
    // Finalize flushes outstanding work; a peer that is gone makes it wait, so it is watched
    // (and poll() aborts at the deadline).
    nccl().CommFinalize(comm_);
    poll("ncclCommFinalize", nullptr, true);
    nccl().CommDestroy(comm_);
  } catch (...) {
    // poll() aborted the communicator; a destructor must not throw.
  }
}

void Communicator::abort() {
  if (aborted_ || !comm_) return;
  aborted_ = true;
  nccl().CommAbort(comm_);
}

void Communicator::settle(const std::string& what) {
  double paused_us = 0;
  poll(what, nullptr, watchdog_, &paused_us);
  if (paused_us > 0) {
    ++enqueue_waits_.count;
    enqueue_waits_.us += paused_us;
  }
}

void Communicator::wait(cudaStream_t stream, const std::string& what) {
  if (!watchdog_) {
    // The mutation: a plain synchronize, which waits forever on a peer that never sends.
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  poll(what, stream, true);
}

void Communicator::poll(const std::string& what, cudaStream_t stream, bool watchdog, double* paused_us) {
  if (aborted_)
    throw Error(ExitCode::probe_error,
                "rank " + std::to_string(rank_) + ": " + what + ": the communicator was aborted");
  std::string failure;  // what failed, in NCCL's or CUDA's words
  const WaitOutcome outcome = watched_wait(
      [&] {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t q = nccl().CommGetAsyncError(comm_, &state);
        if (q != ncclSuccess) state = q;
        if (state != ncclSuccess && state != ncclInProgress) {
          const char* last = nccl().GetLastError(comm_);
          failure = "NCCL error " + std::string(nccl().GetErrorString(state)) +
                    (last && *last ? " (" + std::string(last) + ")" : "");
          return WaitState::failed;
        }
        if (state == ncclInProgress) return WaitState::pending;
        if (!stream) return WaitState::done;
        const cudaError_t s = cudaStreamQuery(stream);
        if (s == cudaSuccess) return WaitState::done;
        if (s == cudaErrorNotReady) return WaitState::pending;
        // A fault on the stream (a peer's memory gone with its process, say): named like the
        // watchdog's own errors, so the message says which rank and which wait.
        (void)cudaGetLastError();
        failure = std::string("CUDA error ") + cudaGetErrorName(s) + " (" + cudaGetErrorString(s) + ")";
        return WaitState::failed;
      },
      timeout_, watchdog, paused_us);
  if (outcome == WaitOutcome::done) return;
  abort();
  if (outcome == WaitOutcome::failed)
    throw Error(ExitCode::probe_error,
                "rank " + std::to_string(rank_) + ": " + what + ": " + failure + "; communicator aborted");
  throw Error(ExitCode::probe_error,
              "rank " + std::to_string(rank_) + ": " + what + " did not finish within " +
                  seconds_text(timeout_) + " (a peer rank is missing or stuck); communicator aborted");
}

}  // namespace moe::ep
