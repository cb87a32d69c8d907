#pragma once
// The two directions of an expert-parallel step over NCCL: every rank sends block d of its
// send buffer to rank d and receives block s of its receive buffer from rank s, all blocks of
// one fixed size. Enqueue-only (capturable); the communicator's settle() raises async errors.
// The lsa exchange moves the same blocks through kernels of its own into receive buffers in a
// symmetric window (engine/ep/nccl/lsa_exchange.hpp); enqueue_exchange is the collectives'.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>

#include "engine/ep/nccl/communicator.hpp"

namespace moe::ep {

enum class ExchangeKind {
  alltoall,  // one ncclAlltoAll (NCCL 2.28+)
  sendrecv,  // grouped ncclSend / ncclRecv, one pair a peer (any NCCL)
  lsa,       // stores into the peers' symmetric windows, then an LSA barrier (NCCL device API)
};
std::string_view to_string(ExchangeKind k);
// "alltoall", "sendrecv" or "lsa"; UsageError otherwise, EnvironmentError for lsa in a build
// without it (engine/ep/exchange_names.hpp).
ExchangeKind exchange_kind_from(std::string_view name);
// alltoall when the loaded NCCL has it, else sendrecv.
ExchangeKind default_exchange_kind();

// alltoall or sendrecv (UsageError for lsa, whose receive buffers are its window's).
void enqueue_exchange(Communicator& comm, ExchangeKind kind, const void* send, void* recv,
                      std::size_t block_bytes, cudaStream_t stream);

}  // namespace moe::ep
