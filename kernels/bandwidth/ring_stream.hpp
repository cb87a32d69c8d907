#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

// The streaming expert GEMM's pipeline alone (probe `stream`): one block an SM, a producer warp
// copying a buffer's equal byte shares in stages (bulk copies, kernels/moe/stage_ring.cuh,
// sm_90 and newer) into a ring of shared memory for each of 8 consumer warps, dealt to the
// warps in turn as the expert GEMM deals its unit-passes; each warp reads its whole stage with
// 16-byte loads and releases it; with the math on, it also feeds what it read to mma.m16n8k16
// as the expert GEMM does (bf16 fragments, or int4 codes dequantised in registers). What it
// reaches is what a streaming kernel can reach on this GPU, the figure the bandwidth probe's
// expert GEMMs are judged against.
namespace moe::kernels {

enum class RingMath { none, bf16, int4 };
const char* to_string(RingMath m);

struct RingShape {
  int stage_bytes;  // a multiple of 512 (32 lanes x 16 bytes), at most kMaxRingStage
  int slots;        // each consumer warp's, 2 .. kMaxRingSlots
};
constexpr int kMaxRingStage = 8 * 1024;  // a warp holds its whole stage in registers
constexpr int kMaxRingSlots = 3;          // 8 warps x 3 x 8 KB: the most shared memory allows

// Whether this device runs it (sm_90 and newer: bulk copies).
bool ring_stream_supported();

// Streams `bytes` (a multiple of 16, 16-byte aligned) of `src`; XORs every word the consumers
// read into *xor_out (which the caller zeroes: then equal to pattern_xor_reference over the
// buffer when each word was read once; nothing but the kernel is enqueued, so a CUDA graph of
// back-to-back launches times the kernel alone) and writes a sum of the math's results to sink[block] (one float a
// block, of no meaning: it keeps the math from being optimised away). Throws moe::Error for a
// bad shape or device.
void ring_stream(const void* src, std::size_t bytes, RingShape ring, RingMath math, std::uint32_t* xor_out,
                 float* sink, cudaStream_t stream);

// Blocks ring_stream launches (one an SM): the floats `sink` must hold.
int ring_stream_blocks();

}  // namespace moe::kernels
