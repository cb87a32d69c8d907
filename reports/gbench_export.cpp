#include "reports/gbench_export.hpp"

#include "reports/case_summary.hpp"
#include "reports/metadata.hpp"

namespace moe::report {

using nlohmann::json;

json to_gbench_json(const Report& r) {
  const json& env = r.environment;
  json context{{"date", metadata_string(r.invocation, "/started_at")},
               {"executable", "moebench"},
               {"host_name", metadata_string(env, "/host/hostname")},
               {"num_cpus", metadata_integer(env, "/host/cpu_count", 0)},
               {"mhz_per_cpu", 0},
               {"cpu_scaling_enabled", false},
               {"caches", json::array()},
               {"library_build_type",
                metadata_string(r.tool, "/build_type") == "Debug" ? "debug" : "release"},
               {"moebench_version", metadata_string(r.tool, "/version")},
               {"moebench_git_commit", metadata_string(r.tool, "/git_commit")},
               {"gpu", describe_gpu(r)}};
  json benchmarks = json::array();
  int family = 0;
  for (const CaseResult& c : r.cases) {
    for (const auto& [name, m] : c.measurements) {
      if (m.gpu_time_us.empty()) continue;
      const std::string bench = c.key() + (name == "main" ? "" : "[" + name + "]");
      const Stats gpu = m.gpu_time();
      json b{{"name", bench},
             {"family_index", family++},
             {"per_family_instance_index", 0},
             {"run_name", bench},
             {"run_type", "iteration"},
             {"repetitions", 1},
             {"repetition_index", 0},
             {"threads", 1},
             {"iterations", m.samples()},
             {"real_time", gpu.median},
             {"cpu_time", m.host_time_us.empty() ? 0.0 : m.host_time().median},
             {"time_unit", "us"},
             {"gpu_time_min_us", gpu.min},
             {"gpu_time_p90_us", gpu.p90},
             {"gpu_time_rsd", gpu.rsd},
             {"verdict", to_string(c.verdict)}};
      if (name == "main" || c.measurements.size() == 1) {
        if (auto g = c.metrics.find("gbps"); g != c.metrics.end())
          b["bytes_per_second"] = g->second.value * 1e9;
        if (auto p = c.metrics.find("pct_of_read_ceiling"); p != c.metrics.end())
          b["pct_of_read_ceiling"] = p->second.value;
      }
      benchmarks.push_back(std::move(b));
    }
  }
  return json{{"context", context}, {"benchmarks", benchmarks}};
}

}  // namespace moe::report
