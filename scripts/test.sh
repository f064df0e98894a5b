#!/usr/bin/env bash
# Builds weft (release preset) and runs every test: the unit and stress tests
# and the examples (all registered with ctest), then the install check
# (find_package(weft) from a temporary install prefix).
#
#   scripts/test.sh [extra ctest arguments]
#
# Environment: WEFT_WERROR=ON turns warnings into errors (CI does).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

scripts/setup-deps.sh

# The README's usage example must be examples/hello.cpp, verbatim.
if ! diff -u <(sed -n '/^```cpp$/,/^```$/{/^```/d;p}' README.md | sed -n '1,/^}$/p') \
             examples/hello.cpp; then
  echo "[test] README.md's code example differs from examples/hello.cpp" >&2
  exit 1
fi

# WEFT_WERROR=ON (CI sets it) builds every target with -Werror.
cmake --preset release -DWEFT_WERROR="${WEFT_WERROR:-OFF}"
cmake --build --preset release
# Tests and examples (ctest -L example runs the examples alone). The install
# check runs even when a test failed; the exit status reports both.
status=0
ctest --preset release --output-on-failure "$@" || { status=$?; echo "[test] ctest FAILED" >&2; }
scripts/check-install.sh build/release || { status=$?; echo "[test] install check FAILED" >&2; }
if ((status == 0)); then
  echo "[test] all tests, examples and the install check passed"
fi
exit "$status"
