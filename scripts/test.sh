#!/usr/bin/env bash
# Sets up, builds and runs every test. GPU tests run where a GPU exists and are reported as
# skipped (with the reason) where none does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "${MOEBENCH_BUILD_DIR:-$root/build}"
status=0
ctest --output-on-failure --timeout "${MOEBENCH_TEST_TIMEOUT:-1500}" "$@" || status=$?
# CTest shows no output of skipped tests: print why the GPU tests skipped, once.
grep -h "^SKIPPED:" Testing/Temporary/LastTest.log 2>/dev/null | sort -u || true
exit $status
