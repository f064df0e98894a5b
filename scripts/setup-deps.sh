#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages weft needs to build, test and benchmark.
#
#   scripts/setup-deps.sh           the packages above
#   scripts/setup-deps.sh --clang   also a Clang 14..16 (the newest the
#                                   distribution has), for the thread-safety
#                                   CI phase; its clang++ path is the last
#                                   line of the output
#
# Quick no-op when everything is already installed (checked with dpkg). Missing
# packages are installed with apt-get when running as root, or through sudo
# when it is available; otherwise the script prints what is missing and the
# command that installs it, and exits with status 1.
# Needs CMake >= 3.25 and a C++20 compiler: Debian 12 or Ubuntu 24.04 or newer.
set -euo pipefail

packages=(cmake ninja-build g++ libboost-context-dev libboost-fiber-dev libgtest-dev libtbb-dev
          libbenchmark-dev liburing-dev pkg-config
          curl                   # the HTTP example's test (examples/io/http_server_test.sh)
          libcurl4-openssl-dev   # libcurl: tests/io/test_io_foreign.cpp
          python3-clang-16       # libclang's Python bindings: scripts/weft-migrate (tests/migrate, bench)
          python3-matplotlib)    # the plots of scripts/weft-report (weft-bench --report, tests/report)

log() { printf '[setup-deps] %s\n' "$*"; }

want_clang=0
case "${1:-}" in
  "") ;;
  --clang) want_clang=1 ;;
  *) log "usage: scripts/setup-deps.sh [--clang]"; exit 2 ;;
esac
# Clang for -Wthread-safety: the newest of 16, 15, 14 that is installed, or
# else that the distribution offers (Debian 12 has 16; Ubuntu 24.04 has all).
clang_version=""
if ((want_clang)); then
  for v in 16 15 14; do
    if command -v "clang++-$v" >/dev/null 2>&1; then clang_version=$v; break; fi
  done
  candidate() { apt-cache policy "clang-$1" 2>/dev/null | sed -n 's/^ *Candidate: *//p' | grep -v '(none)'; }
  if [[ -z "$clang_version" ]]; then
    # A fresh container may have no package lists yet.
    if [[ -z "$(candidate 16)$(candidate 15)$(candidate 14)" && "$(id -u)" == 0 ]]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    fi
    for v in 16 15 14; do
      if [[ -n "$(candidate "$v")" ]]; then
        clang_version=$v
        packages+=("clang-$v")
        break
      fi
    done
  fi
fi

installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  log "this script supports Debian/Ubuntu (dpkg/apt) only; install by hand:"
  log "  ${packages[*]}"
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

if ((${#missing[@]})); then
  install_cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  if [[ "$(id -u)" == 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1 && { sudo -n true 2>/dev/null || [[ -t 0 ]]; }; then
    sudo=(sudo)
  else
    log "missing packages: ${missing[*]}"
    log "install them as root with:"
    log "  sudo sh -c '$install_cmd'"
    exit 1
  fi
  log "installing: ${missing[*]}"
  "${sudo[@]+"${sudo[@]}"}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]+"${sudo[@]}"}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  for p in "${missing[@]}"; do
    installed "$p" || { log "FAIL: $p is still not installed"; exit 1; }
  done
fi

# Older releases ship a CMake that cannot configure this project.
cmake_version="$(cmake --version | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p')"
if ! printf '3.25\n%s\n' "$cmake_version" | sort -V -C; then
  log "CMake $cmake_version is too old: weft needs >= 3.25 (Debian 12 / Ubuntu 24.04"
  log "have it; elsewhere use 'pip install cmake' or the Kitware apt repository)"
  exit 1
fi
log "all dependencies present (cmake $cmake_version, $(g++ -dumpfullversion 2>/dev/null | sed 's/^/g++ /'))"
if ((want_clang)); then
  if [[ -z "$clang_version" ]] || ! command -v "clang++-$clang_version" >/dev/null 2>&1; then
    log "no clang++ 14..16 installed or installable (apt-get update may be needed)"
    exit 1
  fi
  log "clang: $(command -v "clang++-$clang_version")"
  command -v "clang++-$clang_version"
fi
