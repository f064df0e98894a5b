#!/usr/bin/env bash
# Builds weft (release preset) and runs the quick benchmark demo.
#
#   scripts/demo.sh [extra weft-bench arguments]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

scripts/setup-deps.sh
cmake --preset release
cmake --build --preset release --target weft-bench

bench=""
for candidate in build/release/bench/weft-bench build/release/weft-bench; do
  if [[ -x "$candidate" ]]; then bench="$candidate"; break; fi
done
if [[ -z "$bench" ]]; then
  bench="$(find build/release -name weft-bench -type f -perm -u+x -print -quit)"
fi
if [[ -z "$bench" ]]; then
  echo "[demo] weft-bench was not built (is bench/ enabled? WEFT_BUILD_BENCH=ON)" >&2
  exit 1
fi

echo "[demo] $bench --quick $*"
exec "$bench" --quick "$@"
