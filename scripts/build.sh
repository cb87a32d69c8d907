#!/usr/bin/env bash
# Configures and builds moebench into ${MOEBENCH_BUILD_DIR:-build}.
# CUDA architectures: the GPU present, else every architecture CUDA 13 builds; set
# MOEBENCH_CUDA_ARCHITECTURES (e.g. 90a) to build just one, as CI does to stay fast.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MOEBENCH_BUILD_DIR:-$root/build}
export PATH="$PATH:/usr/local/cuda/bin"

args=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${MOEBENCH_BUILD_TYPE:-Release})
if [[ -n "${MOEBENCH_CUDA_ARCHITECTURES:-}" ]]; then
  args+=("-DCMAKE_CUDA_ARCHITECTURES=$MOEBENCH_CUDA_ARCHITECTURES")
fi
cmake "${args[@]}" ${MOEBENCH_CMAKE_ARGS:-}
cmake --build "$build" --parallel "${MOEBENCH_JOBS:-$(nproc)}"
