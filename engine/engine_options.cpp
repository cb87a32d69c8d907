#include "engine/engine_options.hpp"

#include <cstdlib>

#include "common/errors.hpp"

namespace moe {

namespace {

using kernels::DownRows;
using kernels::EpCompute;
using kernels::ForwardOptions;
using kernels::GemmFamily;
using kernels::Int4Decode;
using kernels::TensorCoreTiles;
using kernels::TopKSelect;

// How a switch reads and writes its field of ForwardOptions, by canonical value.
struct Field {
  std::string (*get)(const ForwardOptions&);
  void (*put)(ForwardOptions&, std::string_view);
};

std::string on_off(bool v) { return v ? "on" : "off"; }

template <bool ForwardOptions::*member>
constexpr Field bool_field() {
  return {[](const ForwardOptions& o) { return on_off(o.*member); },
          [](ForwardOptions& o, std::string_view v) { o.*member = v == "on"; }};
}

const Field kFields[] = {
    bool_field<&ForwardOptions::programmatic_launch>(),
    bool_field<&ForwardOptions::cluster_route>(),
    bool_field<&ForwardOptions::spare_late_block>(),
    bool_field<&ForwardOptions::hold_router_rows>(),
    bool_field<&ForwardOptions::preload_kernels>(),
    {[](const ForwardOptions& o) -> std::string {
       switch (o.int4_decode) {
         case Int4Decode::simt: return "simt";
         case Int4Decode::tensor_cores: return "tensor_cores";
         case Int4Decode::automatic: break;
       }
       return "auto";
     },
     [](ForwardOptions& o, std::string_view v) {
       o.int4_decode = v == "simt" ? Int4Decode::simt
                       : v == "tensor_cores" ? Int4Decode::tensor_cores
                                             : Int4Decode::automatic;
     }},
    {[](const ForwardOptions& o) -> std::string {
       switch (o.top_k_select) {
         case TopKSelect::ranks: return "ranks";
         case TopKSelect::rounds: return "rounds";
         case TopKSelect::automatic: break;
       }
       return "auto";
     },
     [](ForwardOptions& o, std::string_view v) {
       o.top_k_select = v == "ranks" ? TopKSelect::ranks
                        : v == "rounds" ? TopKSelect::rounds
                                        : TopKSelect::automatic;
     }},
    {[](const ForwardOptions& o) -> std::string { return kernels::to_string(o.gemm); },
     [](ForwardOptions& o, std::string_view v) {
       o.gemm = v == "legacy" ? GemmFamily::legacy
                : v == "mma"  ? GemmFamily::mma
                : v == "stream" ? GemmFamily::stream
                                : GemmFamily::automatic;
     }},
    {[](const ForwardOptions& o) -> std::string { return kernels::to_string(o.tiles); },
     [](ForwardOptions& o, std::string_view v) {
       o.tiles = v == "wmma" ? TensorCoreTiles::wmma : v == "wgmma" ? TensorCoreTiles::wgmma : TensorCoreTiles::automatic;
     }},
    bool_field<&ForwardOptions::stream_int4>(),
    bool_field<&ForwardOptions::stream_bf16>(),
    {[](const ForwardOptions& o) -> std::string { return o.ep_compute == EpCompute::grouped ? "grouped" : "rows"; },
     [](ForwardOptions& o, std::string_view v) { o.ep_compute = v == "grouped" ? EpCompute::grouped : EpCompute::rows; }},
    {[](const ForwardOptions& o) -> std::string { return o.down_rows == DownRows::bf16 ? "bf16" : "fp32"; },
     [](ForwardOptions& o, std::string_view v) { o.down_rows = v == "bf16" ? DownRows::bf16 : DownRows::fp32; }},
};

const std::vector<EngineSwitch>& switch_table() {
  static const std::vector<EngineSwitch> table{
      {"pdl", "MOE_PDL", "on", {"on", "off"},
       "programmatic dependent launch between the forward's kernels (sm_90+)"},
      {"route-cluster", "MOE_ROUTE_CLUSTER", "on", {"on", "off"},
       "route as one thread-block cluster ahead of the decode kernels (sm_90+), not one kernel"},
      {"spare-late-block", "MOE_SPARE_LATE_BLOCK", "on", {"on", "off"},
       "decode gate_up's last block skips the shared experts while the cluster route holds its SM"},
      {"hold-router-rows", "MOE_HOLD_ROUTER_ROWS", "on", {"on", "off"},
       "the cluster route loads its router rows before its wait, not after"},
      {"kernel-preload", "MOE_KERNEL_PRELOAD", "on", {"on", "off"},
       "a layer loads its forward's kernels when built, not at each kernel's first launch"},
      {"int4-decode", "MOE_INT4_DECODE", "auto", {"auto", "simt", "tensor_cores"},
       "int4 decode kernels: SIMT at M=1 and tensor cores at M=2..8 (auto), or one kind"},
      {"route-select", "MOE_ROUTE_SELECT", "auto", {"auto", "ranks", "rounds"},
       "how the route ranks each token's top-k: ranks at decode sizes, rounds beyond (auto)"},
      {"gemm", "MOE_GEMM", "auto", {"auto", "legacy", "mma", "stream"},
       "expert GEMM family: on sm_90a int4 in the stream tiles, the streaming family to M=64 and the "
       "warp-group MMA tiles above; else the mma family for bf16 at M=8..16 and int4 at M=9..64, the "
       "decode kernels and tensor-core tiles by M (auto); those at every M (legacy); mma at every M, int4 "
       "in its fragment layout (mma); the streaming family at every M, sm_90+, both formats in its tiles (stream)"},
      {"tiles", "MOE_TILES", "auto", {"auto", "wmma", "wgmma"},
       "tensor-core path's tiles: persistent warp-group MMA tiles on sm_90a from M=1024 (weights in the "
       "stream tiles: at every M), else 64x64 wmma tiles (auto); the wmma tiles at every M (wmma); the "
       "warp-group MMA tiles at every M, sm_90a (wgmma)"},
      {"stream-int4", "MOE_STREAM_INT4", "on", {"on", "off"},
       "under gemm=auto on sm_90a, int4 weights in the stream tiles: the streaming family to M=64, the "
       "warp-group MMA tiles above; off, int4 in rows"},
      {"stream-bf16", "MOE_STREAM_BF16", "off", {"off", "on"},
       "under gemm=auto on sm_90a, bf16 weights in the stream family's stage tiles: the streaming family to "
       "M=64, the warp-group MMA tiles above (on); bf16 in rows (off)"},
      {"ep-compute", "MOE_EP_COMPUTE", "rows", {"rows", "grouped"},
       "expert-parallel compute on received rows: the per-row kernel (rows), or grouped into the expert GEMMs"},
      {"down-rows", "MOE_DOWN_ROWS", "bf16", {"bf16", "fp32"},
       "down's per-pair rows, which the combine sums: bf16 where the warp-group MMA tiles run down (bf16: "
       "half the bytes between down and the combine; one bf16 rounding a row element), or fp32 (fp32)"},
  };
  return table;
}

std::size_t index_of(std::string_view name) {
  const auto& table = switch_table();
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i].name == name) return i;
  std::string valid;
  for (const EngineSwitch& s : table) valid += (valid.empty() ? "" : ", ") + std::string(s.name);
  throw UsageError("engine switch '" + std::string(name) + "' is unknown; valid: " + valid);
}

// The canonical value of `value` for switch `s`; "0" and "1" are accepted for on/off, as the
// environment variables always took them.
std::string canonical(const EngineSwitch& s, std::string_view value, const std::string& source) {
  std::string_view v = value;
  if (s.values.front() == "on" || s.values.front() == "off") {
    if (v == "1") v = "on";
    if (v == "0") v = "off";
  }
  for (std::string_view ok : s.values)
    if (ok == v) return std::string(v);
  std::string valid;
  for (std::string_view ok : s.values) valid += (valid.empty() ? "" : ", ") + std::string(ok);
  if (s.values.front() == "on") valid += " (or 1, 0)";
  throw UsageError(source + ": '" + std::string(value) + "' is not a valid value of engine switch " +
                   std::string(s.name) + "; valid: " + valid);
}

}  // namespace

std::span<const EngineSwitch> engine_switches() { return switch_table(); }

EngineOptions EngineOptions::from_environment() {
  EngineOptions o;
  for (const EngineSwitch& s : switch_table()) {
    const std::string env(s.env);
    if (const char* v = std::getenv(env.c_str())) o.set(s.name, v, env);
  }
  return o;
}

EngineOptions EngineOptions::from_json(const nlohmann::json& block) {
  EngineOptions o;
  if (!block.is_object()) throw UsageError("engine options must be an object of switches");
  for (const auto& [name, entry] : block.items()) {
    const nlohmann::json& v = entry.is_object() ? entry.value("value", nlohmann::json()) : entry;
    if (!v.is_string())
      throw UsageError("engine switch '" + name + "': value must be a string, got " + v.dump());
    const std::string source = entry.is_object() ? entry.value("source", "report") : "report";
    if (source != "default") o.set(name, v.get<std::string>(), source);
  }
  return o;
}

void EngineOptions::assign(std::string_view assignment, const std::string& source) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw UsageError(source + " '" + std::string(assignment) +
                     "' is not valid: NAME=VALUE, e.g. pdl=off (`moebench list switches`)");
  set(assignment.substr(0, eq), assignment.substr(eq + 1), source);
}

void EngineOptions::set(std::string_view name, std::string_view value, const std::string& source) {
  const std::size_t i = index_of(name);
  const EngineSwitch& s = switch_table()[i];
  kFields[i].put(forward_, canonical(s, value, source));
  sources_[std::string(s.name)] = source;
}

std::string EngineOptions::value(std::string_view name) const { return kFields[index_of(name)].get(forward_); }

bool EngineOptions::is_default(std::string_view name) const {
  return value(name) == switch_table()[index_of(name)].default_value;
}

nlohmann::json EngineOptions::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const EngineSwitch& s : switch_table()) {
    const auto source = sources_.find(s.name);
    j[std::string(s.name)] = {{"value", value(s.name)},
                              {"default", is_default(s.name)},
                              {"source", source == sources_.end() ? "default" : source->second}};
  }
  return j;
}

}  // namespace moe
