#!/usr/bin/env bash
# Copies what a GPU machine needs to check this build into one folder (default .gpu/, ignored
# by git): moebench, the GPU test binaries, the engine adapters they load and the
# scripts/gpu-*.sh runners. Fixtures stay in the checkout (fixtures/), which the runners point
# the binaries at.
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [DEST]     (defaults: build, .gpu)
#
# Build first for the target GPU (e.g. -DCMAKE_CUDA_ARCHITECTURES=90a for an H200); the
# binaries link the CUDA runtime statically and need only the driver and libcupti there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
dest=${2:-$root/.gpu}
[[ -x "$build/apps/moebench" ]] || { echo "gpu-bundle.sh: no $build/apps/moebench (build first)" >&2; exit 2; }
mkdir -p "$dest"
cp "$build/apps/moebench" "$dest/"
for src in "$root"/tests/gpu/test_*.cpp "$root"/tests/gpu/test_*.cu; do
  name=$(basename "${src%.*}")
  if [[ -x "$build/tests/$name" ]]; then cp "$build/tests/$name" "$dest/"; else echo "gpu-bundle.sh: $name not built" >&2; exit 2; fi
done
# The engine adapters the GPU tests of the engine ABI load (test_engine_abi_probe,
# test_adapter_probe_verdicts, test_cublas_adapter_probes; the cuBLAS one where it was built).
cp "$build/adapters/libmoebench_engine_adapter.so" \
   "$build/adapters/libmoebench_stale_resident_cache_adapter.so" "$dest/"
if [[ -f "$build/adapters/libmoebench_cublas_per_expert_adapter.so" ]]; then
  cp "$build/adapters/libmoebench_cublas_per_expert_adapter.so" "$dest/"
fi
du -sh "$dest"
