#include "engine/ep/rendezvous.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include "common/errors.hpp"

namespace moe::ep {

namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(std::chrono::milliseconds t) {
  std::ostringstream s;
  s.precision(3);
  s << static_cast<double>(t.count()) / 1000.0 << " s";
  return s.str();
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

[[noreturn]] void fail(const std::string& what) { throw EnvironmentError("rendezvous: " + what); }

// Waits until `fd` is ready for `events`; false at the deadline.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) fail(std::string("poll: ") + std::strerror(errno));
  }
}

// Sends all of `data`; false at the deadline. Throws when the peer is gone.
bool send_all(int fd, const void* data, std::size_t n, Clock::time_point deadline,
              const std::string& peer) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    if (!wait_fd(fd, POLLOUT, deadline)) return false;
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (k <= 0) fail(peer + " closed its connection (" + std::strerror(errno) + ")");
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool recv_all(int fd, void* data, std::size_t n, Clock::time_point deadline,
              const std::string& peer) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, deadline)) return false;
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (k == 0) fail(peer + " closed its connection (the process ended or gave up)");
    if (k < 0) fail(peer + ": " + std::strerror(errno));
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

constexpr std::uint32_t kMaxMessage = 1u << 24;

bool send_message(int fd, const std::string& m, Clock::time_point deadline, const std::string& peer) {
  const std::uint32_t len = htonl(static_cast<std::uint32_t>(m.size()));
  return send_all(fd, &len, 4, deadline, peer) && send_all(fd, m.data(), m.size(), deadline, peer);
}

// Nullopt-free: false at the deadline.
bool recv_message(int fd, std::string& m, Clock::time_point deadline, const std::string& peer) {
  std::uint32_t len = 0;
  if (!recv_all(fd, &len, 4, deadline, peer)) return false;
  len = ntohl(len);
  if (len > kMaxMessage) fail(peer + " sent a message of " + std::to_string(len) + " bytes");
  m.resize(len);
  return recv_all(fd, m.data(), len, deadline, peer);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string hello(int rank, int world) {
  return "moebench-ep 1 " + std::to_string(rank) + " " + std::to_string(world);
}

int listen_on(int port, const std::string& where) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) fail(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);  // all interfaces, as torch.distributed's store
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 128) != 0) {
    const std::string why = std::strerror(errno);
    ::close(s);
    fail("rank 0 cannot listen on port " + std::to_string(port) + " for " + where + " (" + why +
         "; is another run using MASTER_PORT " + std::to_string(port) + "?)");
  }
  set_nonblocking(s);
  return s;
}

// One connection attempt to addr:port; -1 when refused or unreachable (to retry).
int try_connect(const std::string& addr, int port, Clock::time_point deadline, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    fail("cannot resolve MASTER_ADDR '" + addr + "': " + gai_strerror(rc));
  int result = -1;
  for (addrinfo* ai = res; ai && result < 0; ai = ai->ai_next) {
    const int s = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (s < 0) continue;
    set_nonblocking(s);
    if (::connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
      result = s;
      break;
    }
    if (errno == EINPROGRESS && wait_fd(s, POLLOUT, deadline)) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) {
        result = s;
        break;
      }
      why = std::strerror(err);
    } else {
      why = errno == EINPROGRESS ? "no answer" : std::strerror(errno);
    }
    ::close(s);
  }
  ::freeaddrinfo(res);
  return result;
}

}  // namespace

Rendezvous::Rendezvous(int rank, int world, std::string where, std::chrono::milliseconds timeout)
    : rank_(rank), world_(world), where_(std::move(where)), timeout_(timeout) {}

Rendezvous::Rendezvous(Rendezvous&& o) noexcept
    : rank_(o.rank_), world_(o.world_), where_(std::move(o.where_)), timeout_(o.timeout_),
      peers_(std::move(o.peers_)) {
  o.peers_.clear();
}

Rendezvous::~Rendezvous() {
  for (int fd : peers_)
    if (fd >= 0) ::close(fd);
}

Rendezvous Rendezvous::join(const LaunchEnv& env, std::chrono::milliseconds timeout) {
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  Rendezvous rv(env.rank, env.world, where, timeout);
  const auto deadline = Clock::now() + timeout;
  if (env.world == 1) return rv;
  if (env.rank == 0) {
    const int listener = listen_on(env.master_port, where);
    rv.peers_.assign(env.world, -1);
    int joined = 1;
    while (joined < env.world) {
      if (!wait_fd(listener, POLLIN, deadline)) {
        std::string missing;
        for (int r = 1; r < env.world; ++r)
          if (rv.peers_[r] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        ::close(listener);
        fail("rank 0 at " + where + " waited " + seconds_text(timeout) + "; rank(s) " + missing +
             " of " + std::to_string(env.world) + " never joined");
      }
      const int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0) continue;
      set_nonblocking(fd);
      set_nodelay(fd);
      std::string h;
      int rank = -1, world = -1;
      char tag[32] = {};
      int version = 0;
      const bool got = recv_message(fd, h, deadline, "a connecting peer");
      const bool parsed = got && std::sscanf(h.c_str(), "%31s %d %d %d", tag, &version, &rank,
                                             &world) == 4 && std::string(tag) == "moebench-ep";
      std::string refusal;
      if (!parsed)
        refusal = "not a moebench rendezvous greeting";
      else if (version != 1)
        refusal = "protocol version " + std::to_string(version) + ", rank 0 speaks 1";
      else if (world != env.world)
        refusal = "WORLD_SIZE " + std::to_string(world) + ", rank 0 has " + std::to_string(env.world);
      else if (rank < 1 || rank >= env.world)
        refusal = "rank " + std::to_string(rank) + " outside 1.." + std::to_string(env.world - 1);
      else if (rv.peers_[rank] >= 0)
        refusal = "rank " + std::to_string(rank) + " joined twice";
      send_message(fd, refusal.empty() ? "ok" : refusal, deadline, "rank " + std::to_string(rank));
      if (!refusal.empty()) {
        ::close(fd);
        ::close(listener);
        fail("rank 0 refused a peer: " + refusal);
      }
      rv.peers_[rank] = fd;
      ++joined;
    }
    ::close(listener);
    return rv;
  }
  // Other ranks: connect, retrying while rank 0 is not listening yet.
  std::string why = "no answer";
  int fd = -1;
  while (fd < 0) {
    fd = try_connect(env.master_addr, env.master_port, deadline, why);
    if (fd >= 0) break;
    if (remaining_ms(deadline) == 0)
      fail("rank " + std::to_string(env.rank) + ": no answer from rank 0 at " + where +
           " within " + seconds_text(timeout) + " (" + why +
           "); is rank 0 running and are MASTER_ADDR/MASTER_PORT right?");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, remaining_ms(deadline))));
  }
  set_nodelay(fd);
  rv.peers_.push_back(fd);
  std::string answer;
  if (!send_message(fd, hello(env.rank, env.world), deadline, "rank 0") ||
      !recv_message(fd, answer, deadline, "rank 0"))
    fail("rank " + std::to_string(env.rank) + ": rank 0 at " + where + " did not answer within " +
         seconds_text(timeout));
  if (answer != "ok") fail("rank 0 at " + where + " refused rank " + std::to_string(env.rank) + ": " + answer);
  return rv;
}

std::vector<std::string> Rendezvous::all_gather(const std::string& blob,
                                                std::chrono::milliseconds timeout) {
  return all_gather_present(blob, {}, timeout);
}

bool Rendezvous::peer_closed(int rank, std::chrono::milliseconds within) {
  if (rank_ != 0 || rank <= 0 || rank >= world_)
    fail("peer_closed: only rank 0 watches its peers (asked about rank " + std::to_string(rank) + ")");
  const auto deadline = Clock::now() + within;
  for (;;) {
    if (!wait_fd(peers_[rank], POLLIN, deadline)) return false;
    char buf[256];
    const ssize_t k = ::recv(peers_[rank], buf, sizeof buf, 0);
    if (k == 0) return true;
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (k < 0) return errno == ECONNRESET;
  }
}

std::vector<std::string> Rendezvous::all_gather_present(const std::string& blob,
                                                        const std::vector<int>& absent,
                                                        std::chrono::milliseconds timeout) {
  auto is_absent = [&](int r) { return std::find(absent.begin(), absent.end(), r) != absent.end(); };
  if (is_absent(0)) fail("all_gather_present: rank 0 gathers, it cannot be absent");
  const std::chrono::milliseconds wait = timeout.count() > 0 ? timeout : timeout_;
  const auto deadline = Clock::now() + wait;
  std::vector<std::string> all(world_);
  all[rank_] = blob;
  if (world_ == 1) return all;
  if (rank_ == 0) {
    // Gather in any order (poll all), then send the whole table to each peer.
    std::vector<bool> have(world_, false);
    have[0] = true;
    int left = world_ - 1;
    for (int r = 1; r < world_; ++r)
      if (is_absent(r)) {
        have[r] = true;
        --left;
      }
    while (left > 0) {
      std::vector<pollfd> fds;
      std::vector<int> ranks;
      for (int r = 1; r < world_; ++r)
        if (!have[r]) {
          fds.push_back({peers_[r], POLLIN, 0});
          ranks.push_back(r);
        }
      const int rc = ::poll(fds.data(), fds.size(), remaining_ms(deadline));
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) {
        std::string missing;
        for (int r : ranks) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        fail("rank 0 waited " + seconds_text(wait) + " for rank(s) " + missing + " of " +
             std::to_string(world_) + " (a rank stopped answering)");
      }
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents) {
          const int r = ranks[i];
          if (!recv_message(peers_[r], all[r], deadline, "rank " + std::to_string(r)))
            fail("rank " + std::to_string(r) + " did not finish its message within " + seconds_text(wait));
          have[r] = true;
          --left;
        }
    }
    std::string table;
    for (const std::string& b : all) {
      const std::uint32_t len = htonl(static_cast<std::uint32_t>(b.size()));
      table.append(reinterpret_cast<const char*>(&len), 4);
      table += b;
    }
    for (int r = 1; r < world_; ++r)
      if (!is_absent(r) && !send_message(peers_[r], table, deadline, "rank " + std::to_string(r)))
        fail("rank " + std::to_string(r) + " did not take the gathered table within " + seconds_text(wait));
    return all;
  }
  std::string table;
  if (!send_message(peers_[0], blob, deadline, "rank 0") ||
      !recv_message(peers_[0], table, deadline, "rank 0"))
    fail("rank " + std::to_string(rank_) + " waited " + seconds_text(wait) +
         " for the other ranks through rank 0 at " + where_ + " (a rank is missing or stuck)");
  std::size_t at = 0;
  for (int r = 0; r < world_; ++r) {
    std::uint32_t len = 0;
    if (at + 4 > table.size()) fail("rank 0 sent a truncated table");
    std::memcpy(&len, table.data() + at, 4);
    len = ntohl(len);
    at += 4;
    if (at + len > table.size()) fail("rank 0 sent a truncated table");
    all[r] = table.substr(at, len);
    at += len;
  }
  return all;
}

std::string Rendezvous::broadcast(const std::string& blob) {
  // Small blobs only (the 128-byte unique id): one gather round is simple and bounded.
  return all_gather(rank_ == 0 ? blob : std::string())[0];
}

}  // namespace moe::ep
