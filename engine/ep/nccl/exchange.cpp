#include "engine/ep/nccl/exchange.hpp"

#include "common/errors.hpp"
#include "engine/ep/exchange_names.hpp"
#include "engine/ep/nccl/nccl_library.hpp"

namespace moe::ep {

std::string_view to_string(ExchangeKind k) {
  switch (k) {
    case ExchangeKind::alltoall: return "alltoall";
    case ExchangeKind::sendrecv: return "sendrecv";
    case ExchangeKind::lsa: return "lsa";
  }
  return "?";
}

ExchangeKind exchange_kind_from(std::string_view name) {
  validate_exchange_names({std::string(name)});
  if (name == "alltoall") return ExchangeKind::alltoall;
  if (name == "sendrecv") return ExchangeKind::sendrecv;
  return ExchangeKind::lsa;
}

ExchangeKind default_exchange_kind() {
  return nccl().AlltoAll ? ExchangeKind::alltoall : ExchangeKind::sendrecv;
}

void enqueue_exchange(Communicator& comm, ExchangeKind kind, const void* send, void* recv,
                      std::size_t block_bytes, cudaStream_t stream) {
  if (kind == ExchangeKind::lsa)
    throw UsageError("exchange lsa moves blocks into its own symmetric window (LsaExchange), "
                     "not between arbitrary buffers");
  const NcclApi& api = nccl();
  if (kind == ExchangeKind::alltoall) {
    if (!api.AlltoAll)
      throw EnvironmentError("exchange alltoall: the loaded NCCL " +
                             nccl_version_text(api.version) +
                             " has no ncclAlltoAll (2.28+); use the sendrecv exchange");
    MOE_NCCL_CHECK(api.AlltoAll(send, recv, block_bytes, ncclUint8, comm.get(), stream));
    comm.settle("ncclAlltoAll");
    return;
  }
  const auto* s = static_cast<const unsigned char*>(send);
  auto* r = static_cast<unsigned char*>(recv);
  MOE_NCCL_CHECK(api.GroupStart());
  for (int p = 0; p < comm.world(); ++p) {
    MOE_NCCL_CHECK(api.Send(s + block_bytes * p, block_bytes, ncclUint8, p, comm.get(), stream));
    MOE_NCCL_CHECK(api.Recv(r + block_bytes * p, block_bytes, ncclUint8, p, comm.get(), stream));
  }
  MOE_NCCL_CHECK(api.GroupEnd());
  comm.settle("grouped ncclSend/ncclRecv");
}

}  // namespace moe::ep
