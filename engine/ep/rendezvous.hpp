#pragma once
// The TCP rendezvous of one expert-parallel run: rank 0 listens on MASTER_ADDR:MASTER_PORT,
// every other rank connects to it, and the ranks then exchange small blobs through rank 0 (the
// NCCL unique id, the expert-map handshake). Every wait has the same deadline: a rank that
// never comes, a peer that closes its connection and an address that does not answer all raise
// EnvironmentError (exit 3) with one line naming the ranks and the address; nothing hangs.
//
// Wire: each message is a uint32 length (network order) and that many bytes. A peer opens with
// "moebench-ep 1 <rank> <world>"; rank 0 answers "ok" or a reason and closes.
#include <chrono>
#include <string>
#include <vector>

#include "engine/ep/launch_env.hpp"

namespace moe::ep {

class Rendezvous {
 public:
  // Rank 0: binds the port (all interfaces) and accepts world - 1 peers; the others connect,
  // retrying a refused connection until the deadline.
  static Rendezvous join(const LaunchEnv& env, std::chrono::milliseconds timeout);

  Rendezvous(Rendezvous&& o) noexcept;
  Rendezvous& operator=(Rendezvous&&) = delete;
  Rendezvous(const Rendezvous&) = delete;
  ~Rendezvous();

  int rank() const { return rank_; }
  int world() const { return world_; }

  // Every rank gives `blob`; every rank gets all blobs in rank order. `timeout` 0: the
  // rendezvous's own.
  std::vector<std::string> all_gather(const std::string& blob,
                                      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // all_gather among the ranks that are still there: rank 0 neither waits for nor answers the
  // ranks of `absent` (a rank that died), whose entries stay empty. Every rank present passes
  // the same `absent`; rank 0 must not be in it.
  std::vector<std::string> all_gather_present(const std::string& blob, const std::vector<int>& absent,
                                              std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Rank 0 only: whether rank `rank`'s connection is closed (its process ended), waiting up to
  // `within` for it; data it still sends first is read and dropped.
  bool peer_closed(int rank, std::chrono::milliseconds within);
  // Rank 0's `blob` to every rank (the others' argument is ignored).
  std::string broadcast(const std::string& blob);

 private:
  Rendezvous(int rank, int world, std::string where, std::chrono::milliseconds timeout);

  int rank_ = 0;
  int world_ = 1;
  std::string where_;  // "host:port", for messages
  std::chrono::milliseconds timeout_;
  std::vector<int> peers_;  // rank 0: socket of rank r at r (index 0 unused); others: [0] rank 0
};

}  // namespace moe::ep
