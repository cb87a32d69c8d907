#!/usr/bin/env bash
# Installs the distribution packages moebench builds with (Debian 12+ / Ubuntu 22.04+).
# The CUDA toolkit itself (nvcc, CUPTI, NVTX; 12.x or 13.x) must already be installed.
# Harmless to run twice: it installs only what is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ git pkg-config
  libcli11-dev nlohmann-json3-dev doctest-dev libbenchmark-dev
  libbenchmark-tools python3 python3-scipy   # Google Benchmark's compare.py, used by a test
  clang   # scripts/fuzz.sh: libFuzzer (its runtime comes with libclang-common-N-dev's deps)
)
# scripts/check-page.sh: the rendered HTML pages checked in headless Chromium. Ubuntu's chromium
# is a snap (no apt package): there the check reports itself skipped.
[[ $(. /etc/os-release 2>/dev/null && echo "${ID:-}") == ubuntu ]] || packages+=(chromium)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present" >&2
fi

# nvcc must be reachable; the usual install prefix is /usr/local/cuda.
if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: nvcc not found: install the CUDA toolkit (12.x or 13.x) first" >&2
  exit 3
fi
