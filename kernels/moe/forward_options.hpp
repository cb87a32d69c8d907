#pragma once
// The switches that change which kernels a forward runs, as one value carried by every call
// (MoeForwardArgs::options). Nothing here is process-wide: two engines in one process may run
// with different options, and a report records the options its engines ran with
// (engine/engine_options.hpp maps them to names, environment variables and CLI values).
// Every default is the fastest choice measured on an H200; each alternative is kept for A/B
// timing and produces the same bits.

#include "kernels/moe/moe_types.hpp"

namespace moe::kernels {

// The int4 decode kernels: SIMT (codes to fp32, FMA: instruction bound) or on tensor cores
// (Int4MmaWarp, int4_mma_warp.cuh: codes straight into mma.sync B fragments, up to 8 tokens a
// pass). automatic: SIMT at M=1, where the tensor-core gate_up loses, tensor cores from M=2 to
// 8, where the decode path ends for int4. simt: the SIMT kernels only, which end int4's decode
// path at M=2 (then the mma family or the tensor-core tiles, by runs_mma_gemm below).
enum class Int4Decode : int { automatic, simt, tensor_cores };

// How the route's ranking block picks each token's top-k (same ids either way): ranks (a
// thread a logit, compared with the token's E logits) or rounds (a warp a token, k rounds of a
// butterfly). automatic: ranks while a thread has one logit to place (decode sizes), rounds
// beyond.
enum class TopKSelect : int { automatic, ranks, rounds };

// Which expert GEMM family runs gate_up and down. legacy: the decode kernels and the
// tensor-core tiles, by M (forward.hpp); mma: the mma family at every M (expert_gemm_mma.cu:
// weights as the 16-row A operand of mma.m16n8k16, tokens as the 8-wide B operand); stream: the
// streaming family at every M (expert_gemm_stream.cu, sm_90+: the same fragments, the weights
// brought into a shared-memory ring by bulk copies, one block an SM). Under mma and stream int4
// weights are generated in the family's layout (int4_layout below), so a layer's weights follow
// this choice. automatic: int4 on Hopper streams (streams_int4 below), bf16 too with stream_bf16
// (streams_bf16), otherwise the rule of runs_mma_gemm below.
enum class GemmFamily : int { automatic, legacy, mma, stream };
// Its value as the switch `gemm` spells it.
constexpr const char* to_string(GemmFamily g) {
  switch (g) {
    case GemmFamily::legacy: return "legacy";
    case GemmFamily::mma: return "mma";
    case GemmFamily::stream: return "stream";
    case GemmFamily::automatic: break;
  }
  return "auto";
}

// Which kernel runs the tensor-core path's tiles (the legacy family above the decode sizes):
// wmma, the 64 x 64 tiles of expert_gemm_tensor_core.cu (sm_80+, both formats); wgmma, the
// persistent warp-group-MMA tiles of expert_gemm_wgmma.cu (sm_90a, both formats; elsewhere the
// wmma tiles run). automatic: wgmma from kWgmmaAutoMinTokens on sm_90a, where it was 1.3-3.4x
// faster on every case measured (H100, M = 1024 and 4096, four shapes, both formats), wmma
// below; at every M for weights in the stream tiles (streams_int4 and streams_bf16 below generate
// them; of the tiles only the wgmma ones read them).
enum class TensorCoreTiles : int { automatic, wmma, wgmma };
// Its value as the switch `tiles` spells it.
constexpr const char* to_string(TensorCoreTiles t) {
  switch (t) {
    case TensorCoreTiles::wmma: return "wmma";
    case TensorCoreTiles::wgmma: return "wgmma";
    case TensorCoreTiles::automatic: break;
  }
  return "auto";
}
constexpr int kWgmmaAutoMinTokens = 1024;

// How an expert-parallel layer (engine/ep/nccl/sharded_layer.hpp) runs its experts on the rows
// it received: rows, the per-row SIMT kernel (kernels/ep/expert_rows.cu, bf16), or grouped: the
// records grouped by expert into the route stage's outputs and run through the gate_up and down
// stages above, on the family gemm and M = ranks * capacity select (kernels/ep/grouped_rows.cu).
// rows stays the default until ep-step on two GPUs or more says grouped is faster.
enum class EpCompute : int { rows, grouped };

// The element type of down's per-pair rows (scratch down_out), which the combine sums: fp32
// everywhere, or bf16 where the warp-group MMA tiles run down (down_rows_in_bf16), which halves
// the bytes down writes and the combine reads at prefill sizes (qwen3-30b-a3b M = 8192: 537 MB
// each way in fp32), as vLLM's fused_moe keeps them; each row element then takes one bf16
// rounding before the weighted sum. bf16 is the default: the layer's A/B at M = 2048 and 8192
// won or tied on four shapes (docs/design/kernels.md).
enum class DownRows : int { fp32, bf16 };

struct ForwardOptions {
  // Programmatic dependent launch between the forward's kernels (sm_90+): each kernel is
  // scheduled before the previous one ends, so gate_up streams the shared experts while the
  // route still runs. Ignored below sm_90.
  bool programmatic_launch = true;
  // On the decode path on sm_90+, the route runs as one thread-block cluster (logits spread
  // over its blocks, ranking and grouping in block 0's shared memory) instead of the one-kernel
  // route with its memset node, counters and fences.
  bool cluster_route = true;
  // The cluster route's ranking block holds one SM until it ends, so the last block of a
  // full-residency decode gate_up grid starts only then: that block skips the shared experts
  // and goes straight to the routed ones, which are ready when it starts.
  bool spare_late_block = true;
  // The cluster route's blocks load their router rows into registers before they wait for the
  // previous kernel (rows per block <= 8, H <= 2048), so after the wait the logits need one
  // load of x; off, the rows are loaded after the wait.
  bool hold_router_rows = true;
  Int4Decode int4_decode = Int4Decode::automatic;
  TopKSelect top_k_select = TopKSelect::automatic;
  GemmFamily gemm = GemmFamily::automatic;
  TensorCoreTiles tiles = TensorCoreTiles::automatic;
  // Under gemm=automatic on sm_90a, int4 layers are generated in the stream tiles and stream
  // (streams_int4 below); off, they stay in rows under the rule for rows.
  bool stream_int4 = true;
  // The same for bf16 layers (streams_bf16 below): generated in the stage tiles, streamed up to
  // kStreamAutoMaxTokensBf16 and read by the wgmma tiles above. Off until its A/B on a GPU.
  bool stream_bf16 = false;
  // A layer loads every kernel its forward can launch when it is built, rather than CUDA's
  // lazy loading doing it at each kernel's first launch: that load may wait for the device's
  // work in flight, so the first forward at a new M stalled its host and drained the device
  // (which hid a scratch pool's missing drain from probe scratch-regrow).
  bool preload_kernels = true;
  EpCompute ep_compute = EpCompute::rows;
  DownRows down_rows = DownRows::bf16;

  bool operator==(const ForwardOptions&) const = default;
};

// The decode path's bound in tokens (ForwardPath::automatic takes the decode kernels up to
// here, forward.hpp says why): bf16 decode is faster up to M=4 and slower at M=8 (H200); int4
// decodes up to M=8 on tensor cores, up to M=2 with int4-decode=simt.
constexpr int kDecodeMaxTokensBf16 = 4;
constexpr int kDecodeMaxTokensInt4Simt = 2;
constexpr int kDecodeMaxTokensInt4 = 8;  // with Int4Decode other than simt
constexpr int decode_max_tokens(WeightFormat f, Int4Decode int4_decode) {
  if (f == WeightFormat::bf16) return kDecodeMaxTokensBf16;
  return int4_decode == Int4Decode::simt ? kDecodeMaxTokensInt4Simt : kDecodeMaxTokensInt4;
}

// automatic on Hopper streams int4 layers: their weights are generated in the stream tiles,
// which the stream family reads up to kStreamAutoMaxTokensInt4 tokens and the wgmma tiles above
// (the decode kernels, the mma family and the wmma tiles read only the row layout): 1.5-2.3x
// faster than the row layout's kernels at M = 8 and 64 on all four peer shapes (H100;
// docs/design/kernels.md). Not for a routed expert's scaled input (Llama-4: only the wmma
// gate_up reads it), nor where tiles=wmma is named, nor for rows the wgmma tiles' 32-code copies
// do not cover; not with stream_int4 off.
constexpr int kStreamAutoMaxTokensInt4 = 64;
constexpr bool streams_int4(const ForwardOptions& o, const MoeDims& d, int sm) {
  return o.gemm == GemmFamily::automatic && o.stream_int4 && o.tiles != TensorCoreTiles::wmma &&
         d.format == WeightFormat::int4 &&
         !d.scale_input && sm == 90 && d.hidden % 32 == 0 && d.inter % 32 == 0;
}

// The int4 layout a layer's weights are generated in, on a device of compute capability sm: the
// mma fragment layout when the mma family is asked for by name, the stream tiles when the stream
// family is or automatic streams int4 (a stage's codes are then one copy, their words fit the
// activations as loaded); otherwise the row layout, which every other kernel reads. Reading the
// fragment layout by row cost the decode kernels 3-14% a step.
constexpr Int4Layout int4_layout(const ForwardOptions& o, const MoeDims& d, int sm) {
  if (o.gemm == GemmFamily::stream || streams_int4(o, d, sm)) return Int4Layout::stream_tiles;
  return o.gemm == GemmFamily::mma ? Int4Layout::mma_fragments : Int4Layout::rows;
}

// automatic on Hopper with stream_bf16 streams bf16 layers as it does int4: the stage tiles,
// which the stream family reads up to kStreamAutoMaxTokensBf16 tokens (stream against auto,
// H200: 1.04-1.5x faster from M = 2 to 32 on the four peer shapes, 2-13% slower at M = 1;
// docs/design/kernels.md) and the wgmma tiles above. Not for a routed expert's scaled input,
// nor where tiles=wmma is named, nor for rows the stage tiles do not cut into 32-k blocks.
constexpr int kStreamAutoMaxTokensBf16 = 64;
constexpr bool streams_bf16(const ForwardOptions& o, const MoeDims& d, int sm) {
  return o.gemm == GemmFamily::automatic && o.stream_bf16 && o.tiles != TensorCoreTiles::wmma &&
         d.format == WeightFormat::bf16 && !d.scale_input && sm == 90 && d.hidden % 32 == 0 && d.inter % 32 == 0;
}

// The bf16 layout: the stream family's stage tiles when it is asked for by name (it reads
// only them: a stage is then one copy) or automatic streams bf16, otherwise rows, which every
// other kernel but the wgmma tiles reads.
constexpr Bf16Layout bf16_layout(const ForwardOptions& o, const MoeDims& d, int sm) {
  return o.gemm == GemmFamily::stream || streams_bf16(o, d, sm) ? Bf16Layout::stream_tiles : Bf16Layout::rows;
}

// Whether a forward under o reads int4 weights that sit in `have`: a named family only its own
// layout; automatic the layout it generates and the row layout too (weights an engine adapter
// hands over: the kernels are then chosen as for rows).
constexpr bool reads_int4_layout(const ForwardOptions& o, const MoeDims& d, int sm, Int4Layout have) {
  return have == int4_layout(o, d, sm) || (o.gemm == GemmFamily::automatic && have == Int4Layout::rows);
}
constexpr bool reads_bf16_layout(const ForwardOptions& o, const MoeDims& d, int sm, Bf16Layout have) {
  return have == bf16_layout(o, d, sm) || (o.gemm == GemmFamily::automatic && have == Bf16Layout::rows);
}

// The rules below take where a layer's weights sit (ExpertTable::layouts(); each format its own
// field), so automatic picks the kernels that read them.
constexpr bool in_stream_tiles(const MoeDims& d, WeightLayouts l) {
  return d.format == WeightFormat::int4 ? l.int4 == Int4Layout::stream_tiles : l.bf16 == Bf16Layout::stream_tiles;
}

// Whether a forward of m tokens runs the streaming family: when named, at every M; under
// automatic, a layer in the stream tiles up to kStreamAutoMaxTokensInt4 or kStreamAutoMaxTokensBf16.
constexpr bool runs_stream_gemm(const ForwardOptions& o, const MoeDims& d, WeightLayouts l, int m) {
  const int most = d.format == WeightFormat::int4 ? kStreamAutoMaxTokensInt4 : kStreamAutoMaxTokensBf16;
  return o.gemm == GemmFamily::stream || (o.gemm == GemmFamily::automatic && in_stream_tiles(d, l) && m <= most);
}

// automatic runs the mma family for bf16 from 8 to 16 tokens: there it beat the legacy kernels
// on every shape measured (H200, deepseek-v2-lite, qwen3-30b-a3b, mixtral-8x7b, gpt-oss-20b:
// 5-12% a step); at M <= 4 the decode kernels win, at M >= 32 the tensor-core tiles on two of
// the four. For int4 (where it does not stream) it runs the family from the decode path's end up
// to kMmaAutoMaxTokensInt4, where it beat the tensor-core tiles on every shape; beyond, the
// tiles win on three of four.
constexpr int kMmaAutoMinTokens = 8;
constexpr int kMmaAutoMaxTokens = 16;
constexpr int kMmaAutoMaxTokensInt4 = 64;

// Whether a forward of m tokens runs the mma expert GEMM family, on a device of compute
// capability sm (major * 10 + minor). The family needs sm_80 and reads x by token, so a
// routed expert's scaled input (Llama-4) keeps the tensor-core gate_up under automatic.
constexpr bool runs_mma_gemm(const ForwardOptions& o, const MoeDims& d, WeightLayouts l, int m, int sm) {
  switch (o.gemm) {
    case GemmFamily::mma: return true;
    case GemmFamily::legacy:
    case GemmFamily::stream: return false;
    case GemmFamily::automatic: break;
  }
  if (d.scale_input || sm < 80 || in_stream_tiles(d, l)) return false;
  if (d.format == WeightFormat::int4) return m > decode_max_tokens(d.format, o.int4_decode) && m <= kMmaAutoMaxTokensInt4;
  return m >= kMmaAutoMinTokens && m <= kMmaAutoMaxTokens;
}

// Whether the tensor-core path of a forward of m tokens runs the warp-group MMA tiles, on a
// device of compute capability sm: from kWgmmaAutoMinTokens under automatic, at every M for
// weights in the stream tiles (the one tile kernel that reads them), never elsewhere than sm_90a.
// Their copies move whole 16-byte chunks: 8 bf16 or 32 int4 codes.
constexpr bool runs_wgmma_tiles(const ForwardOptions& o, const MoeDims& d, WeightLayouts l, int m, int sm) {
  if (o.tiles == TensorCoreTiles::wmma || sm != 90) return false;
  if (o.tiles == TensorCoreTiles::automatic && m < kWgmmaAutoMinTokens && !in_stream_tiles(d, l)) return false;
  const int chunk = d.format == WeightFormat::int4 ? 32 : 8;
  return d.hidden % chunk == 0 && d.inter % chunk == 0;
}

// Whether a forward of m tokens asked to take `requested` runs on the decode path, on a device
// of compute capability sm: below sm_80 always (no bf16 mma: the SIMT kernels handle any M); a
// scaled input (Llama-4) never (only the tensor-core gate_up reads it; resolve_forward_path
// refuses it below sm_80); otherwise automatic by decode_max_tokens.
constexpr bool takes_decode_path(ForwardPath requested, const ForwardOptions& o, const MoeDims& d, int m, int sm) {
  if (sm < 80) return true;
  if (d.scale_input) return false;
  if (requested == ForwardPath::automatic)
    requested = m <= decode_max_tokens(d.format, o.int4_decode) ? ForwardPath::decode : ForwardPath::tensor_core;
  return requested == ForwardPath::decode;
}

// The expert GEMM kernels of one forward, as enqueue_expert_gemms runs them and a report names them.
enum class ExpertGemmKernels { stream, mma, decode, wgmma_tiles, wmma_tiles };
constexpr const char* to_string(ExpertGemmKernels k) {
  switch (k) {
    case ExpertGemmKernels::stream: return "stream";
    case ExpertGemmKernels::mma: return "mma";
    case ExpertGemmKernels::decode: return "decode";
    case ExpertGemmKernels::wgmma_tiles: return "wgmma-tiles";
    case ExpertGemmKernels::wmma_tiles: return "wmma-tiles";
  }
  return "?";
}

// Which kernels a forward of m tokens runs: the family ForwardOptions::gemm names or automatic
// picks (stream, then mma), else the legacy family's decode kernels on the decode path (they
// read rows: weights in the stream tiles go to the wgmma tiles) and its tensor-core tiles beyond.
constexpr ExpertGemmKernels expert_gemm_kernels(const ForwardOptions& o, const MoeDims& d, WeightLayouts l, int m,
                                                int sm, bool decode_path) {
  if (runs_stream_gemm(o, d, l, m)) return ExpertGemmKernels::stream;
  if (runs_mma_gemm(o, d, l, m, sm)) return ExpertGemmKernels::mma;
  if (decode_path && !in_stream_tiles(d, l)) return ExpertGemmKernels::decode;
  return runs_wgmma_tiles(o, d, l, m, sm) ? ExpertGemmKernels::wgmma_tiles : ExpertGemmKernels::wmma_tiles;
}

// Whether down writes its rows in bf16 (DownRows) in a forward that runs `kernels`.
constexpr bool down_rows_in_bf16(const ForwardOptions& o, ExpertGemmKernels kernels) {
  return o.down_rows == DownRows::bf16 && kernels == ExpertGemmKernels::wgmma_tiles;
}

// The expert GEMM kernels a layer's forward can run at some M: what preload_forward_kernels
// loads (forward.hpp). decode: the decode kernels (the legacy family's small M); tiles: the
// tensor-core tiles (its large M; runs_wgmma_tiles says which).
struct ExpertGemmFamilies {
  bool mma = false;
  bool decode = false;
  bool tiles = false;
  bool stream = false;
  bool operator==(const ExpertGemmFamilies&) const = default;
};
constexpr ExpertGemmFamilies expert_gemm_families(const ForwardOptions& o, const MoeDims& d, WeightLayouts l, int sm) {
  // Each rule gives a family a range of M that starts at one token or ends at none: the legacy
  // family's decode kernels run at one token when no other family does (a scaled input takes
  // the tiles at every M), its tiles at the largest M when no other family does (sm_80+, else
  // the decode kernels again: resolve_forward_path's rule); the mma family at 16 tokens if ever.
  constexpr int kLargest = 1 << 30;
  const bool stream_small = runs_stream_gemm(o, d, l, 1), stream_large = runs_stream_gemm(o, d, l, kLargest);
  const bool mma_small = runs_mma_gemm(o, d, l, 1, sm), mma_large = runs_mma_gemm(o, d, l, kLargest, sm);
  const bool legacy_small = !stream_small && !mma_small, legacy_large = !stream_large && !mma_large;
  return {runs_mma_gemm(o, d, l, kMmaAutoMaxTokens, sm), (legacy_small && !d.scale_input) || (legacy_large && sm < 80),
          legacy_large && sm >= 80, stream_small || stream_large};
}

}  // namespace moe::kernels
