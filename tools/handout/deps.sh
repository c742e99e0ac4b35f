#!/usr/bin/env bash
# What `make test` needs, checked before every build: names exactly what is missing and how to get
# it, installs nothing on the machine (on Debian/Ubuntu the missing header packages are fetched into
# this folder's .deps/root, no root needed). Needs no root, no GPU, no bubblewrap, no Slurm. nvcc is optional: without it
# the build is for the CPU emulation backend only (the Makefile says so once, when it configures).
#
#   required: a C++17 compiler, CMake >= 3.25, Python 3, GoogleTest, nlohmann/json, Boost.Context
#
# Headers are looked for in /usr/include, /usr/local/include, $CONDA_PREFIX/include and .deps/include
# (README.md, "Setup", says how to get them without root).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=() how=()
have_header() {
  local d
  for d in /usr/include /usr/local/include ${CONDA_PREFIX:+"$CONDA_PREFIX/include"} .deps/include .deps/root/usr/include; do
    [ -f "$d/$1" ] && return 0
  done
  return 1
}
need() { missing+=("$1"); how+=("$2"); }

command -v "${CXX:-c++}" >/dev/null || command -v g++ >/dev/null || command -v clang++ >/dev/null \
  || need "a C++ compiler" "g++"
if command -v cmake >/dev/null; then
  version=$(cmake --version | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  read -r major minor <<<"${version:-0 0}"
  [ "$major" -gt 3 ] || { [ "$major" -eq 3 ] && [ "$minor" -ge 25 ]; } \
    || need "CMake >= 3.25 (found $(cmake --version | head -1))" "cmake"
else
  need "CMake >= 3.25" "cmake"
fi
command -v python3 >/dev/null || need "Python 3 (it rewrites your kernels for the CPU emulator)" "python3"
have_header gtest/gtest.h || need "GoogleTest (gtest/gtest.h)" "libgtest-dev"
have_header nlohmann/json.hpp || need "nlohmann/json (nlohmann/json.hpp)" "nlohmann-json3-dev"
have_header boost/context/fiber.hpp || need "Boost.Context (boost/context/fiber.hpp)" "libboost-context-dev"

[ ${#missing[@]} -eq 0 ] && exit 0
# Debian/Ubuntu without root: the header packages are fetched into this folder's .deps/root (nothing is
# installed on the machine; tools/fetch_debs.sh); a compiler, CMake or Python must come from the system
if [[ " ${how[*]} " != *" g++ "* && " ${how[*]} " != *" cmake "* && " ${how[*]} " != *" python3 "* ]] \
   && command -v apt-get >/dev/null; then
  echo "deps: fetching ${how[*]} into .deps/root (no root needed; log: ${SCANGRADE_LOG_DIR:-build/logs}/deps.log)"
  tools/fetch_debs.sh "${how[@]}" && exit 0
  echo "deps: could not fetch them" >&2
fi
echo "deps: make test needs what is missing here:" >&2
for m in "${missing[@]}"; do echo "  - $m" >&2; done
echo "install it with (Debian/Ubuntu):  sudo apt-get install -y ${how[*]}" >&2
echo "without root: see README.md, \"Setup\" (conda-forge packages, or headers in .deps/include)" >&2
exit 1
