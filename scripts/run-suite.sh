#!/usr/bin/env bash
# Sets up, builds and runs the default probe suite; the report goes to moebench-report.json.
# Extra arguments go to `moebench run` (e.g. --shape deepseek-v2-lite --m 1,2,4).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
exec "${MOEBENCH_BUILD_DIR:-$root/build}/apps/moebench" run "$@"
