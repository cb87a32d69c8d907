// An exchange's share of the link's ceiling in nccl-tests' terms: bus bandwidth over bus
// bandwidth, so an exchange at the ceiling reads 1 on any number of ranks (algorithm bytes
// over the ceiling's bus bandwidth read 2.0 on two ranks).
#include <doctest/doctest.h>

#include <cstddef>
#include <initializer_list>

#include "probes/ep_common/bus_bandwidth.hpp"

using namespace moe::ep;

namespace {

// nccl-tests' AlltoAllGetBw (src/alltoall.cu): `count` elements of `typesize` bytes to each
// of `nranks` peers in `sec` seconds.
void nccl_tests_alltoall_bw(std::size_t count, int typesize, double sec, double* alg_bw, double* bus_bw,
                            int nranks) {
  const double base_bw = static_cast<double>(count * nranks * typesize) / 1.0E9 / sec;
  *alg_bw = base_bw;
  const double factor = static_cast<double>(nranks - 1) / static_cast<double>(nranks);
  *bus_bw = base_bw * factor;
}

}  // namespace

TEST_CASE("algorithm and bus bandwidth are nccl-tests' alltoall formula") {
  for (int ranks : {2, 3, 4, 8}) {
    for (std::size_t count : {std::size_t{1} << 10, std::size_t{123457}, std::size_t{1} << 26}) {
      const double us = 37.5 + static_cast<double>(count) / 1e4;
      double alg = 0, bus = 0;
      nccl_tests_alltoall_bw(count, 1, us * 1e-6, &alg, &bus, ranks);
      const double bytes = static_cast<double>(count) * ranks;  // every block, the rank's own included
      CAPTURE(ranks);
      CAPTURE(count);
      CHECK(alltoall_algorithm_gbps(bytes, us) == doctest::Approx(alg).epsilon(1e-12));
      CHECK(alltoall_bus_gbps(bytes, us, ranks) == doctest::Approx(bus).epsilon(1e-12));
    }
  }
}

TEST_CASE("an exchange as fast as the ceiling is 1.0 of it on any number of ranks") {
  for (int ranks : {2, 4, 8}) {
    const double ceiling_bytes = 1024.0 * 1024 * 1024, ceiling_us = 3000;
    const double ceiling_bus = alltoall_bus_gbps(ceiling_bytes, ceiling_us, ranks);
    // A step's exchange moving a tenth of the bytes in a tenth of the time: the same rate.
    const double step_bus = alltoall_bus_gbps(ceiling_bytes / 10, ceiling_us / 10, ranks);
    CAPTURE(ranks);
    CHECK(share_of_ceiling(step_bus, ceiling_bus) == doctest::Approx(1.0));
    // Half the rate: half the ceiling.
    CHECK(share_of_ceiling(alltoall_bus_gbps(ceiling_bytes, 2 * ceiling_us, ranks), ceiling_bus) ==
          doctest::Approx(0.5));
  }
}

TEST_CASE("no ceiling, no time or no ranks give 0, never a division by zero") {
  CHECK(share_of_ceiling(10, 0) == 0);
  CHECK(alltoall_algorithm_gbps(1e6, 0) == 0);
  CHECK(alltoall_bus_gbps(1e6, 10, 0) == 0);
  CHECK(alltoall_bus_gbps(1e6, 10, 1) == 0);  // one rank: nothing crosses a link
}
