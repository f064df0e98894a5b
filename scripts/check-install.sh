#!/usr/bin/env bash
# Installs weft into a temporary prefix, then configures, builds and runs the
# find_package(weft) consumer in tests/install/ against that prefix. The prefix
# is then moved and the consumer rebuilt, to check the package is relocatable.
#
#   scripts/check-install.sh [BUILD_DIR]
#
# BUILD_DIR defaults to build/release (configured with the `release` preset if
# it is not configured yet). Set WEFT_KEEP_TMP=1 to keep the temporary dir.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build/release}"
build="$(realpath -m "$build")"

log() { printf '[check-install] %s\n' "$*"; }

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  if [[ "$build" == "$repo/build/release" ]]; then
    log "configuring $build (preset release)"
    (cd "$repo" && cmake --preset release)
  else
    log "configuring $build (library only)"
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF -DWEFT_BUILD_EXAMPLES=OFF
  fi
fi

cache_get() {  # cache_get VAR -> value from $build/CMakeCache.txt (or empty)
  sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n1
}
cxx="$(cache_get CMAKE_CXX_COMPILER)"
generator="$(cache_get CMAKE_GENERATOR)"
build_type="$(cache_get CMAKE_BUILD_TYPE)"
sanitize="$(cache_get WEFT_SANITIZE)"

log "building the weft library in $build"
cmake --build "$build" --target weft

tmp="$(mktemp -d "${TMPDIR:-/tmp}/weft-install.XXXXXX")"
cleanup() {
  if [[ "${WEFT_KEEP_TMP:-0}" == 1 ]]; then log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

log "installing into $tmp/prefix"
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" \
  || { cat "$tmp/install.log"; exit 1; }

libdir=lib
[[ -d "$tmp/prefix/lib64/cmake/weft" ]] && libdir=lib64
[[ -d "$tmp/prefix/$(cache_get CMAKE_INSTALL_LIBDIR)/cmake/weft" ]] && libdir="$(cache_get CMAKE_INSTALL_LIBDIR)"
for f in include/weft/weft.hpp include/weft/detail/scheduler_hooks.hpp \
         "$libdir/cmake/weft/weftConfig.cmake" "$libdir/cmake/weft/weftConfigVersion.cmake" \
         "$libdir/cmake/weft/weftTargets.cmake"; do
  [[ -f "$tmp/prefix/$f" ]] || { log "FAIL: $f was not installed"; exit 1; }
done
ls "$tmp/prefix/$libdir"/libweft.* >/dev/null 2>&1 || { log "FAIL: libweft not installed"; exit 1; }

# A sanitizer build of libweft needs the same runtime in the consumer.
extra=()
case "$sanitize" in
  address) extra+=(-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined) ;;
  thread)  extra+=(-DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread) ;;
esac

consume() {  # consume PREFIX BUILD_DIR
  local prefix="$1" cbuild="$2"
  log "configuring tests/install against $prefix"
  cmake -S "$repo/tests/install" -B "$cbuild" ${generator:+-G "$generator"} \
    ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"} -DCMAKE_BUILD_TYPE="${build_type:-Release}" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    ${extra[@]+"${extra[@]}"} >"$cbuild.configure.log" || { cat "$cbuild.configure.log"; exit 1; }
  local found
  found="$(sed -n 's/^weft_DIR:PATH=//p' "$cbuild/CMakeCache.txt")"
  if [[ "$(realpath "$found")" != "$(realpath "$prefix/$libdir/cmake/weft")" ]]; then
    log "FAIL: find_package(weft) found $found instead of the install in $prefix"
    exit 1
  fi
  log "building the consumer"
  cmake --build "$cbuild"
  log "running the consumer"
  "$cbuild/weft_consumer"
}

consume "$tmp/prefix" "$tmp/consumer"
mv "$tmp/prefix" "$tmp/moved-prefix"
consume "$tmp/moved-prefix" "$tmp/consumer-moved"
log "OK: installed weft works with find_package(weft) (and is relocatable)"
