#pragma once
// One rank's NCCL communicator with a watchdog. Nothing that waits on NCCL may hang: the
// communicator is non-blocking, and every wait (init, each enqueue, a stream's completion,
// finalize) polls ncclCommGetAsyncError against a deadline; on an error or at the deadline it
// calls ncclCommAbort, which also unblocks NCCL kernels stuck on a peer that is gone, and throws
// naming the rank and what it waited for.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <string>

namespace moe::ep {

class Communicator {
 public:
  // `watchdog` false is the mutation that removes it (probe ep-hang): settle() then polls
  // without a deadline and wait() blocks in cudaStreamSynchronize, like an engine without
  // one, and only the launcher's deadline ends them (init and finalize stay watched).
  Communicator(int rank, int world, const ncclUniqueId& id, std::chrono::milliseconds timeout,
               bool watchdog = true);
  ~Communicator();  // finalize within the timeout, else abort; abort after any failure
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int world() const { return world_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // After a group of enqueued calls: waits out ncclInProgress, raises any asynchronous error.
  void settle(const std::string& what);
  // The settles that found the communicator in progress, and the host time they polled for:
  // an eager figure timed around an enqueue holds those sleeps (NCCL sets up a peer's
  // connection on first use; a warmed communicator's enqueues return at once).
  struct EnqueueWaits {
    long long count = 0;
    double us = 0;
  };
  EnqueueWaits enqueue_waits() const { return enqueue_waits_; }
  // Waits until everything enqueued on `stream` has finished, watching the communicator.
  void wait(cudaStream_t stream, const std::string& what);
  // Aborts now (the communicator is unusable afterwards); idempotent.
  void abort();
  bool aborted() const { return aborted_; }

 private:
  // Polls until the communicator's state is not ncclInProgress (engine/ep/watched_wait.hpp);
  // on an error, or past the deadline when `watchdog`, aborts and throws. `stream` non-null:
  // also until the stream is idle.
  void poll(const std::string& what, cudaStream_t stream, bool watchdog, double* paused_us = nullptr);

  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int world_ = 0;
  std::chrono::milliseconds timeout_;
  bool watchdog_ = true;
  bool aborted_ = false;
  EnqueueWaits enqueue_waits_;
};

}  // namespace moe::ep
