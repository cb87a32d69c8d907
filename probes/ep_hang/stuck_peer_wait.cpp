#include "probes/ep_hang/stuck_peer_wait.hpp"

#include <chrono>
#include <exception>

namespace moe::ep {

void wait_on_stuck_peer(nlohmann::json& mine, const std::function<void()>& enqueue,
                        const std::function<void()>& wait) {
  const auto t0 = std::chrono::steady_clock::now();
  mine["entered_wait"] = true;
  try {
    enqueue();
    wait();
    mine["finished"] = true;
  } catch (const std::exception& e) {
    mine["error"] = e.what();
  }
  mine["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace moe::ep
