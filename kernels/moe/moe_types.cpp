#include "kernels/moe/moe_types.hpp"

namespace moe::kernels {

std::string_view to_string(WeightFormat f) {
  switch (f) {
    case WeightFormat::bf16: return "bf16";
    case WeightFormat::int4: return "int4";
  }
  return "unknown";
}

std::string_view to_string(Scoring s) {
  switch (s) {
    case Scoring::softmax: return "softmax";
    case Scoring::sigmoid: return "sigmoid";
  }
  return "unknown";
}

std::string_view to_string(TopKMethod t) {
  switch (t) {
    case TopKMethod::greedy: return "greedy";
    case TopKMethod::group_limited_greedy: return "group_limited_greedy";
    case TopKMethod::noaux_tc: return "noaux_tc";
  }
  return "unknown";
}

std::string_view to_string(Int4Layout l) {
  switch (l) {
    case Int4Layout::rows: return "rows";
    case Int4Layout::mma_fragments: return "mma-fragments";
    case Int4Layout::stream_tiles: return "stream-tiles";
  }
  return "?";
}

std::string_view to_string(Bf16Layout l) { return l == Bf16Layout::stream_tiles ? "stream-tiles" : "rows"; }

std::string_view to_string(ForwardPath p) {
  switch (p) {
    case ForwardPath::automatic: return "auto";
    case ForwardPath::decode: return "decode";
    case ForwardPath::tensor_core: return "tensor_core";
  }
  return "unknown";
}

}  // namespace moe::kernels
