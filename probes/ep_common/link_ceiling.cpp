#if MOEBENCH_HAVE_NCCL
#include "probes/ep_common/link_ceiling.hpp"

#include <algorithm>

#include "common/cuda_check.hpp"
#include "engine/ep/nccl/exchange.hpp"
#include "engine/ep/nccl/nccl_library.hpp"
#include "probes/ep_common/bus_bandwidth.hpp"

namespace moe::ep {

namespace {

unsigned char pattern(int source, int dest) { return static_cast<unsigned char>(source * 16 + dest + 1); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Events {
  cudaEvent_t start{}, stop{};
  Events() {
    MOE_CUDA_CHECK(cudaEventCreate(&start));
    MOE_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

// Times `op` reps times (after one warm-up that is also the data check's run).
template <class Op>
double time_median_us(Communicator& comm, cudaStream_t stream, int reps, Op op) {
  Events ev;
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    MOE_CUDA_CHECK(cudaEventRecord(ev.start, stream));
    op();
    MOE_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
    comm.wait(stream, "a timed exchange");
    float ms = 0;
    MOE_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    us.push_back(ms * 1000.0);
  }
  return median(us);
}

// First and last byte of each block equal the pattern of (source, this rank).
bool blocks_hold(const DeviceBuffer& recv, std::size_t block, int ranks, int self,
                 const std::vector<int>& sources) {
  for (int s : sources) {
    unsigned char first = 0, last = 0;
    const auto* base = recv.as<unsigned char>() + block * s;
    MOE_CUDA_CHECK(cudaMemcpy(&first, base, 1, cudaMemcpyDeviceToHost));
    MOE_CUDA_CHECK(cudaMemcpy(&last, base + block - 1, 1, cudaMemcpyDeviceToHost));
    if (first != pattern(s, self) || last != pattern(s, self)) return false;
  }
  (void)ranks;
  return true;
}

}  // namespace

LinkSample measure_alltoall(Communicator& comm, DeviceAllocator& alloc, std::size_t bytes, int reps,
                            cudaStream_t stream) {
  const int P = comm.world(), self = comm.rank();
  const std::size_t block = bytes / (16 * P) * 16;
  DeviceBuffer send = alloc.allocate(block * P), recv = alloc.allocate(block * P);
  for (int d = 0; d < P; ++d)
    MOE_CUDA_CHECK(cudaMemsetAsync(send.as<unsigned char>() + block * d, pattern(self, d), block, stream));
  MOE_CUDA_CHECK(cudaMemsetAsync(recv.data(), 0, block * P, stream));
  const ExchangeKind kind = default_exchange_kind();
  enqueue_exchange(comm, kind, send.data(), recv.data(), block, stream);
  comm.wait(stream, "the alltoall check");
  std::vector<int> all;
  for (int s = 0; s < P; ++s) all.push_back(s);
  LinkSample s;
  s.bytes = block * P;
  s.data_ok = blocks_hold(recv, block, P, self, all);
  if (!s.data_ok) return s;
  s.median_us = time_median_us(comm, stream, reps, [&] {
    enqueue_exchange(comm, kind, send.data(), recv.data(), block, stream);
  });
  s.algorithm_gbps = alltoall_algorithm_gbps(static_cast<double>(block * P), s.median_us);
  s.bus_gbps = alltoall_bus_gbps(static_cast<double>(block * P), s.median_us, P);
  return s;
}

LinkSample measure_pair(Communicator& comm, DeviceAllocator& alloc, int a, int b, std::size_t bytes,
                        int reps, cudaStream_t stream) {
  const int self = comm.rank();
  LinkSample s;
  s.bytes = bytes / 16 * 16;
  if (self != a && self != b) {
    s.data_ok = true;
    return s;
  }
  const int peer = self == a ? b : a;
  DeviceBuffer send = alloc.allocate(s.bytes), recv = alloc.allocate(s.bytes);
  MOE_CUDA_CHECK(cudaMemsetAsync(send.data(), pattern(self, peer), s.bytes, stream));
  MOE_CUDA_CHECK(cudaMemsetAsync(recv.data(), 0, s.bytes, stream));
  const NcclApi& api = nccl();
  auto op = [&] {
    MOE_NCCL_CHECK(api.GroupStart());
    MOE_NCCL_CHECK(api.Send(send.data(), s.bytes, ncclUint8, peer, comm.get(), stream));
    MOE_NCCL_CHECK(api.Recv(recv.data(), s.bytes, ncclUint8, peer, comm.get(), stream));
    MOE_NCCL_CHECK(api.GroupEnd());
    comm.settle("pair send/recv");
  };
  op();
  comm.wait(stream, "the pair check");
  unsigned char first = 0, last = 0;
  MOE_CUDA_CHECK(cudaMemcpy(&first, recv.data(), 1, cudaMemcpyDeviceToHost));
  MOE_CUDA_CHECK(cudaMemcpy(&last, recv.as<unsigned char>() + s.bytes - 1, 1, cudaMemcpyDeviceToHost));
  s.data_ok = first == pattern(peer, self) && last == pattern(peer, self);
  if (!s.data_ok) return s;
  s.median_us = time_median_us(comm, stream, reps, op);
  s.algorithm_gbps = static_cast<double>(s.bytes) / (s.median_us * 1e3);  // one direction
  s.bus_gbps = s.algorithm_gbps;
  return s;
}

}  // namespace moe::ep
#endif
