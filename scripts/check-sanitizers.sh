#!/usr/bin/env bash
# Builds the host code with AddressSanitizer and UndefinedBehaviorSanitizer into
# ${MOEBENCH_SANITIZE_BUILD_DIR:-build-asan} and runs the CPU tests (`ctest -L cpu`), which also
# drive the instrumented moebench binary. Any sanitizer report fails the test it occurs in.
#
#   scripts/check-sanitizers.sh                 # as CI runs it
#   MOEBENCH_SANITIZE=undefined scripts/check-sanitizers.sh
#   scripts/check-sanitizers.sh -R test_report  # extra arguments go to ctest
#
# Only the CPU tests and moebench are built, not the GPU tests or microbenchmarks. Device code
# is checked by scripts/compute-sanitizer.sh instead; runtime options: docs/sanitizers.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MOEBENCH_SANITIZE_BUILD_DIR:-$root/build-asan}
"$root/scripts/setup.sh"
export PATH="$PATH:/usr/local/cuda/bin"

# No kernel runs in a CPU test, so without a GPU one architecture as PTX only is enough (no
# ptxas: the build takes about half as long). With a GPU, build for it as build.sh does.
archs=${MOEBENCH_SANITIZE_CUDA_ARCHITECTURES:-}
if [[ -z "$archs" ]] && ! nvidia-smi -L >/dev/null 2>&1; then archs=90a-virtual; fi
# Build type Debug (-O0 -g, asserts on) unless MOEBENCH_SANITIZE_BUILD_TYPE says otherwise: the
# instrumented host code compiles about 3x faster than at RelWithDebInfo's -O2, which had made
# this CI's longest stage.
args=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${MOEBENCH_SANITIZE_BUILD_TYPE:-Debug}"
      -DMOEBENCH_SANITIZE="${MOEBENCH_SANITIZE:-address,undefined}"
      -DMOEBENCH_BUILD_MICROBENCH=OFF)
if [[ -n "$archs" ]]; then args+=("-DCMAKE_CUDA_ARCHITECTURES=$archs"); fi
cmake "${args[@]}" >/dev/null

targets=(moebench)
for t in "$root"/tests/cpu/test_*.cpp; do targets+=("$(basename "$t" .cpp)"); done
cmake --build "$build" --parallel "${MOEBENCH_JOBS:-$(nproc)}" --target "${targets[@]}"

# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be; without
# it any process that loads libcuda (a GPU machine) dies at cudaInit. Harmless without a GPU.
# Caller-set ASAN_OPTIONS/UBSAN_OPTIONS come last, so they win.
export ASAN_OPTIONS="protect_shadow_gap=0:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
cd "$build"
ctest -L cpu --output-on-failure --timeout "${MOEBENCH_TEST_TIMEOUT:-1500}" "$@"
