// The NCCL exchange and the sharded layer on two or more GPUs of this host, one thread a rank
// (rendezvous over 127.0.0.1, a communicator each, as separate processes would): both exchanges
// move every block to its rank, the sharded layer's output on every rank matches the
// single-device CPU reference (also as M changes from step to step, and replayed from a
// captured graph on new input; the first and the captured one with each ep-compute path), a layer dropped with its step in flight keeps its receive
// buffers from the next owner until the step ended (and under ep-free-recv-early does not),
// and a rank that never enqueues its half makes the others' watchdog abort within the timeout.
// The lsa exchange (NCCL's device API) delivers every block's header and counted rows to its
// rank in both directions, carries the sharded layer eagerly and replayed from a graph, and its
// barrier gives up by itself (no watchdog) when a rank never comes. Skips (77) with fewer than
// two GPUs or without NCCL; the lsa cases say why they did not run where the loaded NCCL or
// the GPUs cannot run it (no device API, ranks not load/store-reachable).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#if MOEBENCH_HAVE_NCCL
#include "common/cuda_check.hpp"
#include "engine/device.hpp"
#include "engine/device_allocator.hpp"
#include "engine/ep/nccl/communicator.hpp"
#include "engine/ep/lsa_window_layout.hpp"
#include "engine/ep/nccl/exchange.hpp"
#include "engine/ep/nccl/lsa_exchange.hpp"
#include "engine/ep/nccl/nccl_library.hpp"
#include "engine/ep/nccl/sharded_layer.hpp"
#include "engine/ep/rank_output_check.hpp"
#include "engine/ep/rendezvous.hpp"
#include "engine/captured_graph.hpp"
#include "engine/fault_injection.hpp"
#include "engine/stream.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "common/cuda_event.hpp"
#include "probes/ep_common/worker_launch.hpp"

using namespace moe;
using namespace std::chrono_literals;

namespace {

// Skips the whole executable, as gpu_main does without a GPU.
// The sharded layer's test shape: 10 experts, uneven over 3 and 4 ranks, and a shared expert.
kernels::MoeDims sharded_test_dims() {
  kernels::MoeDims d;
  d.hidden = 512;
  d.inter = 256;
  d.experts = 10;
  d.shared = 1;
  d.top_k = 4;
  return d;
}

int ranks_or_skip() {
  const int n = Device::count();
  if (n < 2) {
    std::printf("SKIPPED: the expert-parallel exchange needs two GPUs, this machine has %d\n", n);
    std::exit(77);
  }
  // As the workers are started (probes/ep_common/worker_launch.cpp): NVLink multicast stays
  // off unless the environment sets it, before the first communicator reads it.
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  try {
    ep::nccl();
  } catch (const std::exception& e) {
    std::printf("SKIPPED: %s\n", e.what());
    std::exit(77);
  }
  return std::min(n, 4);
}

// body(rank, rendezvous, communicator) on one thread per rank; returns each rank's error text.
std::vector<std::string> on_ranks(int world, std::chrono::milliseconds timeout,
                                  const std::function<void(int, ep::Rendezvous&, ep::Communicator&)>& body) {
  const int port = ep::free_local_port();
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        MOE_CUDA_CHECK(cudaSetDevice(r));
        ep::LaunchEnv env;
        env.rank = r;
        env.world = world;
        env.master_port = port;
        ep::Rendezvous rv = ep::Rendezvous::join(env, timeout);
        ncclUniqueId id{};
        if (r == 0) MOE_NCCL_CHECK(ep::nccl().GetUniqueId(&id));
        const std::string blob = rv.broadcast(std::string(reinterpret_cast<char*>(&id), sizeof id));
        std::copy(blob.begin(), blob.end(), reinterpret_cast<char*>(&id));
        ep::Communicator comm(r, world, id, timeout);
        body(r, rv, comm);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace

TEST_CASE("both exchanges deliver block d of every rank to rank d") {
  const int world = ranks_or_skip();
  std::vector<ep::ExchangeKind> kinds{ep::ExchangeKind::sendrecv};
  if (ep::nccl().AlltoAll) kinds.push_back(ep::ExchangeKind::alltoall);
  for (ep::ExchangeKind kind : kinds) {
    CAPTURE(std::string(ep::to_string(kind)));
    std::vector<int> bad(world, -1);
    const auto errors = on_ranks(world, 30s, [&](int r, ep::Rendezvous&, ep::Communicator& comm) {
      DeviceAllocator alloc;
      Stream stream;
      const std::size_t block = (1 << 20) + 16;
      DeviceBuffer send = alloc.allocate(block * world), recv = alloc.allocate(block * world);
      for (int d = 0; d < world; ++d)
        MOE_CUDA_CHECK(cudaMemset(send.as<unsigned char>() + block * d, r * 16 + d + 1, block));
      MOE_CUDA_CHECK(cudaMemset(recv.data(), 0xEE, block * world));  // poison
      MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy-stream fills land before the exchange
      ep::enqueue_exchange(comm, kind, send.data(), recv.data(), block, stream.handle());
      comm.wait(stream.handle(), "the exchange");
      std::vector<unsigned char> host(block * world);
      MOE_CUDA_CHECK(cudaMemcpy(host.data(), recv.data(), host.size(), cudaMemcpyDeviceToHost));
      int wrong = 0;
      for (int s = 0; s < world; ++s)
        for (std::size_t i = 0; i < block; ++i) wrong += host[block * s + i] != s * 16 + r + 1;
      bad[r] = wrong;
    });
    for (int r = 0; r < world; ++r) {
      CAPTURE(r);
      CHECK(errors[r] == "");
      CHECK(bad[r] == 0);
    }
  }
}

TEST_CASE("the sharded layer on every rank matches the single-device CPU reference") {
  const int world = ranks_or_skip();
  const kernels::MoeDims d = sharded_test_dims();
  for (kernels::EpCompute compute : {kernels::EpCompute::rows, kernels::EpCompute::grouped})
  for (int m : {1, 8, 33}) {
    CAPTURE(static_cast<int>(compute));
    CAPTURE(m);
    std::vector<ep::RankOutputCheck> checks(world);
    const auto errors = on_ranks(world, 30s, [&](int r, ep::Rendezvous& rv, ep::Communicator& comm) {
      DeviceAllocator alloc;
      Stream stream;
      ep::ShardedLayerConfig cfg;
      cfg.dims = d;
      cfg.seed = 77 + m;
      cfg.m = m;
      cfg.exchange = ep::default_exchange_kind();
      cfg.options.ep_compute = compute;
      ep::ShardedLayer layer(cfg, ep::ExpertMap::contiguous(d.experts, world), comm, rv, alloc, stream.handle());
      layer.generate_input(r * m);
      for (int step = 0; step < 3; ++step) {  // repeated steps reuse the same buffers
        layer.enqueue_step(step == 2);
        layer.finish("a step");
      }
      checks[r] = ep::check_rank_output(d, cfg.seed, layer.input_host(), layer.output_host(), m, m);
    });
    for (int r = 0; r < world; ++r) {
      CAPTURE(r);
      CHECK(errors[r] == "");
      CHECK_MESSAGE(checks[r].passed, checks[r].detail);
      CHECK(checks[r].tokens_checked > 0);
    }
  }
}

TEST_CASE("one sharded layer over steps whose tokens per rank change matches on every step") {
  const int world = ranks_or_skip();
  kernels::MoeDims d;
  d.hidden = 256;
  d.inter = 128;
  d.experts = 8;
  d.shared = 0;
  d.top_k = 2;
  const std::vector<int> sequence{4, 24, 2, 24, 1};
  std::vector<std::string> failures(world);
  const auto errors = on_ranks(world, 30s, [&](int r, ep::Rendezvous& rv, ep::Communicator& comm) {
    DeviceAllocator alloc;
    Stream stream;
    ep::ShardedLayerConfig cfg;
    cfg.dims = d;
    cfg.seed = 991;
    cfg.m = 24;
    cfg.exchange = ep::default_exchange_kind();
    ep::ShardedLayer layer(cfg, ep::ExpertMap::contiguous(d.experts, world), comm, rv, alloc, stream.handle());
    layer.generate_input(r * 24);
    const std::vector<float> x = layer.input_host();
    for (int m : sequence) {
      layer.enqueue_step(false, m);
      layer.finish("a step");
      const std::vector<float> out = layer.output_host();
      const std::size_t n = static_cast<std::size_t>(m) * d.hidden;
      const ep::RankOutputCheck c = ep::check_rank_output(d, cfg.seed, {x.begin(), x.begin() + n},
                                                          {out.begin(), out.begin() + n}, m, m);
      if (!c.passed) failures[r] += "m=" + std::to_string(m) + ": " + c.detail + "; ";
    }
  });
  for (int r = 0; r < world; ++r) {
    CAPTURE(r);
    CHECK(errors[r] == "");
    CHECK(failures[r] == "");
  }
}

TEST_CASE("a captured sharded step replays right, also on input the capture never saw") {
  const int world = ranks_or_skip();
  kernels::MoeDims d;
  d.hidden = 256;
  d.inter = 128;
  d.experts = 8;
  d.shared = 1;
  d.top_k = 2;
  const int m = 16;
  for (kernels::EpCompute compute : {kernels::EpCompute::rows, kernels::EpCompute::grouped}) {
    CAPTURE(static_cast<int>(compute));
    std::vector<std::string> failures(world);
    const auto errors = on_ranks(world, 30s, [&](int r, ep::Rendezvous& rv, ep::Communicator& comm) {
      DeviceAllocator alloc;
      Stream stream;
      ep::ShardedLayerConfig cfg;
      cfg.dims = d;
      cfg.seed = 4242;
      cfg.m = m;
      cfg.exchange = ep::default_exchange_kind();
      cfg.options.ep_compute = compute;
      ep::ShardedLayer layer(cfg, ep::ExpertMap::contiguous(d.experts, world), comm, rv, alloc, stream.handle());
      layer.generate_input(r * m);
      layer.enqueue_step();
      layer.finish("the eager step");
      // Thread scope: the other ranks are threads of this process, enqueueing and syncing their
      // own steps while this one captures.
      CapturedGraph graph(stream, [&] { layer.enqueue_step(); }, CaptureScope::thread);
      if (graph.nodes() == 0) failures[r] += "the graph captured no nodes; ";
      for (int first : {r * m, (world + r) * m, (2 * world + r) * m}) {
        layer.generate_input(first);
        for (int i = 0; i < 2; ++i) {
          graph.replay(stream);
          layer.finish("a replay");
        }
        const ep::RankOutputCheck c = ep::check_rank_output(d, cfg.seed, layer.input_host(), layer.output_host(), m, m);
        if (!c.passed) failures[r] += "input from token " + std::to_string(first) + ": " + c.detail + "; ";
      }
    });
    for (int r = 0; r < world; ++r) {
      CAPTURE(r);
      CHECK(errors[r] == "");
      CHECK(failures[r] == "");
    }
  }
}

TEST_CASE("a sharded layer dropped in flight keeps its receive buffers until the step ends; freed early, they are overwritten") {
  const int world = ranks_or_skip();
  kernels::MoeDims d;
  d.hidden = 256;
  d.inter = 128;
  d.experts = 8;
  d.shared = 0;
  d.top_k = 2;
  const int m = 16;
  for (bool mutated : {false, true}) {
    CAPTURE(mutated);
    std::optional<ScopedMutation> mutation;  // process-wide: every rank thread sees it
    if (mutated) mutation.emplace(Mutation::ep_free_recv_early);
    std::vector<int> early(world, -1), changed(world, -1), pending(world, 0);
    const auto errors = on_ranks(world, 30s, [&](int r, ep::Rendezvous& rv, ep::Communicator& comm) {
      DeviceAllocator alloc;
      Stream stream, next;
      ep::ShardedLayerConfig cfg;
      cfg.dims = d;
      cfg.seed = 515;
      cfg.m = m;
      cfg.exchange = ep::default_exchange_kind();
      auto layer = std::make_unique<ep::ShardedLayer>(cfg, ep::ExpertMap::contiguous(d.experts, world), comm, rv,
                                                      alloc, stream.handle());
      layer->generate_input(r * m);
      layer->enqueue_step();
      layer->finish("the first step");
      const std::size_t dispatch = layer->wire().dispatch_bytes(), combine = layer->wire().combine_bytes();
      const std::vector<const void*> receive = layer->receive_buffers();
      rv.all_gather("held");  // every rank's hold starts together
      kernels::gpu_sleep(200'000'000, stream.handle());
      layer->enqueue_step();
      CudaEvent done;
      done.record(stream.handle());
      layer.reset();
      DeviceBuffer a = alloc.allocate(dispatch), b = alloc.allocate(combine);
      for (DeviceBuffer* x : {&a, &b}) MOE_CUDA_CHECK(cudaMemsetAsync(x->data(), 0xA5, x->bytes(), next.handle()));
      next.drain();
      pending[r] = cudaEventQuery(done.handle()) == cudaErrorNotReady;
      (void)cudaGetLastError();
      early[r] = 0;
      for (const void* p : receive) early[r] += p == a.data() || p == b.data();
      comm.wait(stream.handle(), "the dropped step");
      changed[r] = 0;
      for (DeviceBuffer* x : {&a, &b}) {
        std::vector<unsigned char> host(x->bytes());
        MOE_CUDA_CHECK(cudaMemcpy(host.data(), x->data(), host.size(), cudaMemcpyDeviceToHost));
        for (unsigned char v : host) changed[r] += v != 0xA5;
      }
    });
    for (int r = 0; r < world; ++r) {
      CAPTURE(r);
      CHECK(errors[r] == "");
      CHECK(pending[r] == 1);  // the race was forced
      if (mutated) {
        CHECK(early[r] > 0);
        CHECK(changed[r] > 0);
      } else {
        CHECK(early[r] == 0);
        CHECK(changed[r] == 0);
      }
    }
  }
}

TEST_CASE("a rank that never sends: the others' watchdog aborts within the timeout") {
  const int world = ranks_or_skip();
  const auto t0 = std::chrono::steady_clock::now();
  const auto errors = on_ranks(world, 3s, [&](int r, ep::Rendezvous&, ep::Communicator& comm) {
    if (r == world - 1) return;  // joins, then never takes part in the exchange
    DeviceAllocator alloc;
    Stream stream;
    DeviceBuffer send = alloc.allocate(4096 * world), recv = alloc.allocate(4096 * world);
    ep::enqueue_exchange(comm, ep::ExchangeKind::sendrecv, send.data(), recv.data(), 4096, stream.handle());
    comm.wait(stream.handle(), "the exchange with a silent rank");
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s < 60);
  for (int r = 0; r + 1 < world; ++r) {
    CAPTURE(r);
    CHECK(errors[r].find("rank " + std::to_string(r) + ": the exchange with a silent rank") == 0);
    CHECK(errors[r].find("communicator aborted") != std::string::npos);
  }
}

#if MOEBENCH_HAVE_NCCL_DEVICE_API
namespace {

// Why the lsa cases cannot run here (empty when they can): the loaded library, or a rank's
// refusal as it built the exchange (GPUs not all load/store-reachable, no symmetric memory).
std::string lsa_skip_reason(const std::vector<std::string>& refusals) {
  if (const std::string p = ep::lsa_library_problem(ep::nccl()); !p.empty()) return p;
  for (const std::string& r : refusals)
    if (!r.empty()) return r;
  return {};
}

// Byte i of record `row` in the block rank `from` sends to rank `to` (never 0xEE, the filler
// past a block's rows, which must never cross).
unsigned char record_byte(int round, int from, int to, int row, std::size_t i) {
  return static_cast<unsigned char>(1 + (round * 31 + from * 7 + to * 3 + row * 5 + i) % 200);
}

// Rows rank `from` dispatches to rank `to` in `round` (0 included, at most the capacity); the
// combine returns as many.
int rows_for(int round, int from, int to, int capacity) { return (round + from * 2 + to) % (capacity + 1); }

// Rank r's send blocks on the device: block d holds rows(d) records of the pattern (and the
// count in its header when `counted`), the rest of the block 0xEE.
void fill_send(unsigned char* device, int world, int r, int round, std::size_t block_bytes,
               std::size_t row_bytes, bool counted, const std::function<int(int)>& rows) {
  std::vector<unsigned char> host(block_bytes * world, 0xEE);
  for (int d = 0; d < world; ++d) {
    unsigned char* block = host.data() + block_bytes * d;
    const int n = rows(d);
    std::memset(block, 0, ep::WireLayout::kHeaderBytes);
    if (counted) std::memcpy(block, &n, sizeof n);
    for (int row = 0; row < n; ++row)
      for (std::size_t i = 0; i < row_bytes; ++i)
        block[ep::WireLayout::kHeaderBytes + row_bytes * row + i] = record_byte(round, r, d, row, i);
  }
  MOE_CUDA_CHECK(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice));
}

// Rank r's receive blocks: block s must hold the rows(s) records rank s sent (and their count
// in the header when `counted`), and none of the filler past them. Returns the wrong bytes.
int check_received(const unsigned char* device, int world, int r, int round, std::size_t block_bytes,
                   std::size_t row_bytes, bool counted, const std::function<int(int)>& rows) {
  std::vector<unsigned char> host(block_bytes * world);
  MOE_CUDA_CHECK(cudaMemcpy(host.data(), device, host.size(), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int s = 0; s < world; ++s) {
    const unsigned char* block = host.data() + block_bytes * s;
    const int n = rows(s);
    int count = -1;
    std::memcpy(&count, block, sizeof count);
    if (counted && count != n) ++wrong;
    for (int row = 0; row < n; ++row)
      for (std::size_t i = 0; i < row_bytes; ++i)
        wrong += block[ep::WireLayout::kHeaderBytes + row_bytes * row + i] != record_byte(round, s, r, row, i);
    for (std::size_t i = ep::WireLayout::kHeaderBytes + row_bytes * n; i < block_bytes; ++i)
      wrong += block[i] == 0xEE;
  }
  return wrong;
}

}  // namespace

TEST_CASE("the lsa exchange delivers every block's header and counted rows, both ways, and nothing past them") {
  const int world = ranks_or_skip();
  const int capacity = 5;
  std::vector<int> bad(world, -1);
  std::vector<std::string> refused(world);
  const auto errors = on_ranks(world, 30s, [&](int r, ep::Rendezvous&, ep::Communicator& comm) {
    DeviceAllocator alloc;
    Stream stream;
    const ep::WireLayout wire = ep::make_wire_layout(64, 2, world, capacity);
    std::unique_ptr<ep::LsaExchange> lsa;
    try {
      lsa = std::make_unique<ep::LsaExchange>(comm, wire, stream.handle());
    } catch (const EnvironmentError& e) {
      refused[r] = e.what();
      return;
    }
    DeviceBuffer send = alloc.allocate(wire.dispatch_bytes()), combine_send = alloc.allocate(wire.combine_bytes());
    bad[r] = 0;
    // Two rounds: the second's counts differ, so its headers must be the ones that arrived.
    for (int round = 0; round < 2; ++round) {
      const auto sent = [&](int d) { return rows_for(round, r, d, capacity); };      // r -> d
      const auto came = [&](int s) { return rows_for(round, s, r, capacity); };      // s -> r
      fill_send(send.as<unsigned char>(), world, r, round, wire.dispatch_block_bytes(), wire.dispatch_row_bytes(),
                true, sent);
      lsa->enqueue_dispatch(send.data());
      comm.wait(stream.handle(), "the lsa dispatch");
      lsa->raise_if_failed();
      bad[r] += check_received(lsa->dispatch_recv(), world, r, round, wire.dispatch_block_bytes(),
                               wire.dispatch_row_bytes(), true, came);
      // The return: block s carries as many rows as rank r received from s (the count in its
      // receive block's header), and rank r gets back as many as it sent.
      fill_send(combine_send.as<unsigned char>(), world, r, round, wire.combine_block_bytes(),
                wire.combine_row_bytes(), false, came);
      lsa->enqueue_combine(combine_send.data());
      comm.wait(stream.handle(), "the lsa combine");
      lsa->raise_if_failed();
      bad[r] += check_received(lsa->combine_recv(), world, r, round, wire.combine_block_bytes(),
                               wire.combine_row_bytes(), false, sent);
    }
    bad[r] += lsa->status() != 0;
  });
  if (const std::string why = lsa_skip_reason(refused); !why.empty()) {
    MESSAGE("lsa exchange not run: " << why);
    return;
  }
  for (int r = 0; r < world; ++r) {
    CAPTURE(r);
    CHECK(errors[r] == "");
    CHECK(bad[r] == 0);
  }
}

TEST_CASE("the sharded layer over the lsa exchange matches the reference, eager and replayed from a graph") {
  const int world = ranks_or_skip();
  const kernels::MoeDims d = sharded_test_dims();
  for (int m : {1, 8, 33}) {
    CAPTURE(m);
    std::vector<std::string> failures(world), refused(world);
    const auto errors = on_ranks(world, 30s, [&](int r, ep::Rendezvous& rv, ep::Communicator& comm) {
      DeviceAllocator alloc;
      Stream stream;
      ep::ShardedLayerConfig cfg;
      cfg.dims = d;
      cfg.seed = 177 + m;
      cfg.m = m;
      cfg.exchange = ep::ExchangeKind::lsa;
      std::unique_ptr<ep::ShardedLayer> layer;
      try {
        layer = std::make_unique<ep::ShardedLayer>(cfg, ep::ExpertMap::contiguous(d.experts, world), comm, rv, alloc,
                                                   stream.handle());
      } catch (const EnvironmentError& e) {
        refused[r] = e.what();
        return;
      }
      layer->generate_input(r * m);
      for (int step = 0; step < 3; ++step) {
        layer->enqueue_step(step == 2);
        layer->finish("an lsa step");
      }
      ep::RankOutputCheck c = ep::check_rank_output(d, cfg.seed, layer->input_host(), layer->output_host(), m, m);
      if (!c.passed) failures[r] += "eager: " + c.detail + "; ";
      // Fewer tokens on one step: the headers' counts, not the previous step's, are read.
      if (m > 1) {
        layer->enqueue_step(false, 1);
        layer->finish("an lsa step of one token");
        const std::vector<float> x = layer->input_host(), out = layer->output_host();
        c = ep::check_rank_output(d, cfg.seed, {x.begin(), x.begin() + d.hidden}, {out.begin(), out.begin() + d.hidden},
                                  1, 1);
        if (!c.passed) failures[r] += "one token: " + c.detail + "; ";
      }
      CapturedGraph graph(stream, [&] { layer->enqueue_step(); });
      if (graph.nodes() == 0) failures[r] += "the graph captured no nodes; ";
      layer->generate_input((world + r) * m);  // input the capture never saw
      for (int i = 0; i < 3; ++i) {
        graph.replay(stream);
        layer->finish("an lsa replay");
      }
      c = ep::check_rank_output(d, cfg.seed, layer->input_host(), layer->output_host(), m, m);
      if (!c.passed) failures[r] += "replayed: " + c.detail + "; ";
    });
    if (const std::string why = lsa_skip_reason(refused); !why.empty()) {
      MESSAGE("lsa exchange not run: " << why);
      return;
    }
    for (int r = 0; r < world; ++r) {
      CAPTURE(r);
      CHECK(errors[r] == "");
      CHECK(failures[r] == "");
    }
  }
}

TEST_CASE("a rank that never reaches the lsa exchange: the others' barrier gives up by itself and the error names the rank") {
  const int world = ranks_or_skip();
  const auto timeout = 4s;
  std::vector<std::string> refused(world), raised(world);
  std::vector<unsigned> status(world, 0);
  std::vector<double> seconds(world, 0);
  const auto errors = on_ranks(world, timeout, [&](int r, ep::Rendezvous& rv, ep::Communicator& comm) {
    Stream stream;
    DeviceAllocator alloc;
    const ep::WireLayout wire = ep::make_wire_layout(64, 2, world, 4);
    std::unique_ptr<ep::LsaExchange> lsa;
    try {
      lsa = std::make_unique<ep::LsaExchange>(comm, wire, stream.handle());
    } catch (const EnvironmentError& e) {
      refused[r] = e.what();
      return;
    }
    DeviceBuffer send = alloc.allocate(wire.dispatch_bytes());
    MOE_CUDA_CHECK(cudaMemset(send.data(), 0, send.bytes()));
    if (r != world - 1) {  // the last rank built its window, then never takes part
      const auto t0 = std::chrono::steady_clock::now();
      lsa->enqueue_dispatch(send.data());
      // No watchdog: the device's own deadline must end the kernel (polled, with a bound of
      // three timeouts so that a barrier that never gives up fails the check, not the run).
      cudaError_t q = cudaStreamQuery(stream.handle());
      while (q == cudaErrorNotReady && std::chrono::steady_clock::now() - t0 < 3 * timeout) {
        std::this_thread::sleep_for(1ms);
        q = cudaStreamQuery(stream.handle());
      }
      MOE_CUDA_CHECK(q);
      seconds[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      status[r] = lsa->status();
      try {
        lsa->raise_if_failed();
      } catch (const std::exception& e) {
        raised[r] = e.what();
      }
    }
    rv.all_gather("done");  // the silent rank keeps its window until the others gave up
  });
  if (const std::string why = lsa_skip_reason(refused); !why.empty()) {
    MESSAGE("lsa exchange not run: " << why);
    return;
  }
  for (int r = 0; r + 1 < world; ++r) {
    CAPTURE(r);
    CHECK(errors[r] == "");
    CHECK((status[r] & ep::kLsaEntryTimeout) != 0);
    CHECK(seconds[r] < 3 * std::chrono::duration<double>(timeout).count());
    CHECK(raised[r].find("rank " + std::to_string(r) + ": exchange lsa: a peer rank did not reach") == 0);
  }
}
#endif

#else
TEST_CASE("built without NCCL") {
  std::printf("SKIPPED: built without NCCL (%s)\n", MOEBENCH_NCCL_MISSING_REASON);
  std::exit(77);
}
#endif
