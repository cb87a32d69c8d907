// The per-rank environment of an expert-parallel run (environment.ranks): every rank's GPU,
// the peer-access matrix from each rank's own answers and the NVLink links between the ranks'
// GPUs, merged on the CPU from fabricated entries; written into a report and loaded back;
// a mistyped block refused by the loader, naming the field.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "common/errors.hpp"
#include "reports/rank_environment.hpp"
#include "reports/report.hpp"
#include "support/cli_runner.hpp"

using nlohmann::json;
using moe::report::merge_rank_environments;

namespace {

// Rank r on GPU r of host `host`; it sees the other GPUs of `pcis` with peer access `can`.
json rank_entry(int r, const std::string& host, const std::vector<std::string>& pcis, bool can,
                json links = json::array()) {
  json peers = json::object();
  for (std::size_t i = 0; i < pcis.size(); ++i)
    if (static_cast<int>(i) != r) peers[pcis[i]] = can;
  return {{"rank", r},
          {"hostname", host},
          {"device", r},
          {"name", "NVIDIA H200"},
          {"uuid", "GPU-0000000" + std::to_string(r)},
          {"pci_bus_id", pcis[r]},
          {"peer_access", peers},
          {"nvlink", {{"available", true}, {"links", links}}}};
}

}  // namespace

TEST_CASE("two ranks on one host joined by NVLink: peer access both ways and the links between them") {
  const std::vector<std::string> pcis{"0000:19:00.0", "0000:3B:00.0"};
  // Rank 0's links 0 and 1 end at rank 1's GPU (NVML spells the domain with 8 digits); link 2
  // is down.
  const json links0 = json::array({{{"link", 0}, {"active", true}, {"remote_pci_bus_id", "00000000:3b:00.0"}},
                                   {{"link", 1}, {"active", true}, {"remote_pci_bus_id", "00000000:3B:00.0"}},
                                   {{"link", 2}, {"active", false}}});
  const json links1 = json::array({{{"link", 0}, {"active", true}, {"remote_pci_bus_id", "00000000:19:00.0"}}});
  const json m = merge_rank_environments({rank_entry(0, "node1", pcis, true, links0),
                                          rank_entry(1, "node1", pcis, true, links1)});
  CHECK(m["world"] == 2);
  CHECK(m["hosts"] == 1);
  CHECK(m["gpus_distinct"] == true);
  CHECK(m["per_rank"][0]["uuid"] == "GPU-00000000");
  CHECK(m["per_rank"][1]["pci_bus_id"] == "0000:3B:00.0");
  CHECK_FALSE(m["per_rank"][0].contains("peer_access"));  // it is the matrix
  CHECK(m["per_rank"][0]["nvlink_active_links"] == 2);
  CHECK(m["peer_access"] == json::array({json::array({nullptr, true}), json::array({true, nullptr})}));
  CHECK(m["nvlink_links"] == json::array({json::array({nullptr, 2}), json::array({1, nullptr})}));
}

TEST_CASE("ranks on two hosts, one missing, and GPUs without NVLink or peer access") {
  const std::vector<std::string> a{"0000:19:00.0", "0000:3B:00.0"};
  json r2 = rank_entry(0, "node2", {"0000:19:00.0"}, false);
  r2["rank"] = 2;
  r2["nvlink"] = {{"available", false}, {"reason", "libnvidia-ml.so.1 not found"}, {"links", json::array()}};
  const json m = merge_rank_environments({rank_entry(0, "node1", a, false), rank_entry(1, "node1", a, false), r2,
                                          json(nullptr)});
  CHECK(m["world"] == 4);
  CHECK(m["hosts"] == 2);
  CHECK(m["per_rank"][3] == json{{"rank", 3}, {"missing", true}});
  CHECK(m["peer_access"][0][1] == false);
  CHECK(m["peer_access"][0][2].is_null());  // across hosts: unknown, not false
  CHECK(m["peer_access"][2][3].is_null());  // a missing rank
  CHECK(m["nvlink_links"][0][1] == 0);      // NVML answered: no link between them
  CHECK(m["nvlink_links"][2][0].is_null()); // no NVML on rank 2, and another host
  // Rank 2 and rank 0 are on GPU 0 of different hosts with the same PCI id: still distinct.
  CHECK(m["gpus_distinct"] == true);
}

TEST_CASE("two ranks on one GPU are flagged, and need no peer access") {
  const std::vector<std::string> pcis{"0000:19:00.0"};
  json r1 = rank_entry(0, "node1", pcis, true);
  r1["rank"] = 1;
  const json m = merge_rank_environments({rank_entry(0, "node1", pcis, true), r1});
  CHECK(m["gpus_distinct"] == false);
  CHECK(m["peer_access"][0][1].is_null());
}

TEST_CASE("a report with the ranks block round-trips through the loader; a mistyped one is refused") {
  const auto dir = moe::test::scratch_dir("rank-environment");
  moe::report::Report r;
  r.tool = {{"name", "moebench"}};
  r.environment = {{"host", {{"hostname", "node1"}, {"cpu_count", 16}}},
                   {"gpu", {{"available", true}}},
                   {"ranks", merge_rank_environments({rank_entry(0, "node1", {"0000:19:00.0", "0000:3B:00.0"}, true),
                                                      rank_entry(1, "node1", {"0000:19:00.0", "0000:3B:00.0"}, true)})}};
  const auto path = (dir / "ep.json").string();
  {
    std::ofstream out(path);
    out << json(r).dump(1);
  }
  const moe::report::Report back = moe::report::load_report(path);
  CHECK(back.environment["ranks"] == r.environment["ranks"]);
  json bad = json(r);
  bad["environment"]["ranks"]["world"] = "two";
  {
    std::ofstream out(path);
    out << bad.dump();
  }
  CHECK_THROWS_WITH_AS(moe::report::load_report(path),
                       doctest::Contains("field \"environment.ranks.world\" = \"two\" must be an integer"),
                       moe::UsageError);
  bad["environment"]["ranks"]["world"] = 2;
  bad["environment"]["ranks"]["per_rank"] = json::object();
  {
    std::ofstream out(path);
    out << bad.dump();
  }
  CHECK_THROWS_WITH_AS(moe::report::load_report(path), doctest::Contains("must be an array"), moe::UsageError);
  std::filesystem::remove_all(dir);
}
