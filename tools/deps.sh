#!/usr/bin/env bash
# What a make target needs, checked before it runs; what is missing is installed, and only that:
#
#   tools/deps.sh [build|grade|batch|test]      (default: build)
#
#   build  (make, make test): a C++17 compiler, CMake >= 3.25, Python 3, GoogleTest, nlohmann/json,
#          Boost.Context (the CPU emulation backend). nvcc is optional: without it the build is for the
#          emulation backend only (the Makefile says so in one line).
#   grade  (make demo, make grade, make gallery): build + bubblewrap, the sandbox around student code
#          (without it grading runs the student's code unconfined, and says so).
#   batch  (make batch): grade + the grader's Python packages (requirements.txt: the class report).
#   test   (make check, make deps-test): batch + what only the project's own tests use: the Python test
#          tools (requirements-dev.txt), slurm-wlm and munge (a one-node Slurm cluster), podman, runc and
#          debootstrap (the PrairieLearn image test). Those tests skip without them.
#
# As root on Debian or Ubuntu, missing packages come from apt-get. Not root, required Debian packages
# are downloaded with apt-get into .deps/ (tools/fetch_debs.sh: a private package list, no root needed)
# and unpacked there (.deps/root: the Makefile points CMake at it); anything else missing is said with the exact
# `sudo apt-get install` line. Python packages: pip; where pip may not install into the system's Python
# (PEP 668) or there is no pip, Debian's python3-* packages as root, else .deps/python (pip --target),
# else Debian's python3-* packages unpacked into .deps/root (the Makefile and batch.py look in both).
# One line per thing installed; apt-get and pip write to $SCANGRADE_LOG_DIR/deps.log (default build/logs).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-build}
case $mode in build|grade|batch|test) ;; *) echo "usage: tools/deps.sh [build|grade|batch|test]" >&2; exit 2;; esac
log_dir=${SCANGRADE_LOG_DIR:-build/logs}
log=$log_dir/deps.log
root=$([ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && echo 1 || echo 0)

have_header() {
  local d
  for d in /usr/include /usr/local/include .deps/include .deps/root/usr/include; do
    [ -f "$d/$1" ] && return 0
  done
  return 1
}
have_sbin() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ]; }
quiet() { mkdir -p "$log_dir"; "$@" >>"$log" 2>&1; }

apt_install() {   # root: packages from apt-get (--with-recommends first to keep them), lists refreshed once
  local recommends=--no-install-recommends
  if [ "$1" = --with-recommends ]; then recommends=; shift; fi
  if [ -z "${apt_updated:-}" ]; then quiet apt-get update -qq || true; apt_updated=1; fi
  quiet env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $recommends "$@" && return 0
  echo "deps: apt-get install $* failed; the end of $log:" >&2
  tail -n 5 "$log" >&2
  return 1
}

# --- required by the build --------------------------------------------------------------------------
missing=()
command -v "${CXX:-c++}" >/dev/null || command -v g++ >/dev/null || missing+=(g++)
if command -v cmake >/dev/null; then
  read -r major minor < <(cmake --version | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p') || true
  { [ "${major:-0}" -gt 3 ] || { [ "${major:-0}" -eq 3 ] && [ "${minor:-0}" -ge 25 ]; }; } || missing+=(cmake)
else
  missing+=(cmake)
fi
have_header gtest/gtest.h || missing+=(libgtest-dev)
have_header nlohmann/json.hpp || missing+=(nlohmann-json3-dev)
have_header boost/context/fiber.hpp || missing+=(libboost-context-dev)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$root" = 1 ]; then
    echo "deps: installing ${missing[*]} (the build; log: $log)"
    apt_install "${missing[@]}" || exit 1
  elif command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
       && [[ " ${missing[*]} " != *" g++ "* && " ${missing[*]} " != *" cmake "* ]]; then
    echo "deps: fetching ${missing[*]} into .deps/root, no root needed (log: $log)"
    tools/fetch_debs.sh "${missing[@]}" || {
      echo "deps: could not fetch them (the end of $log below); install them with:" >&2
      tail -n 5 "$log" >&2; echo "  sudo apt-get install -y ${missing[*]}" >&2; exit 1; }
  else
    echo "deps: missing ${missing[*]}; install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
[ "$mode" = build ] && exit 0

# --- grade: the sandbox -----------------------------------------------------------------------------
if ! command -v bwrap >/dev/null && [ ! -x .deps/bwrap-root/usr/bin/bwrap ]; then
  if [ "$root" = 1 ]; then
    echo "deps: installing bubblewrap (the sandbox around student code; log: $log)"
    apt_install bubblewrap || echo "deps: warning: without bubblewrap student code runs unconfined" >&2
  else
    echo "deps: note: no bubblewrap: student code runs unconfined (sudo apt-get install -y bubblewrap)" >&2
  fi
fi
[ "$mode" = grade ] && exit 0

# --- batch: the grader's Python packages ------------------------------------------------------------
pip_install() {   # pip into this Python; else Debian's packages (root), .deps/python (pip --target), or
  local requirements=$1 debian=$2   # Debian's packages unpacked in .deps/root (no pip, not root); $3 checks
  if quiet python3 -m pip install -q -r "$requirements"; then return 0; fi
  if [ "$root" = 1 ]; then apt_install $debian && return 0; fi
  if quiet python3 -m pip install -q --upgrade --target .deps/python -r "$requirements"; then
    echo "deps: installed into .deps/python (this Python takes no pip packages: PEP 668)"; return 0; fi
  if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null && tools/fetch_debs.sh $debian \
     && PYTHONPATH=".deps/root/usr/lib/python3/dist-packages:$PYTHONPATH" python3 -c "$3" 2>>"$log"; then
    echo "deps: fetched $debian into .deps/root (no pip here, no root needed)"; return 0; fi
  echo "deps: could not install $requirements (the end of $log below); install: sudo apt-get install -y $debian" >&2
  tail -n 5 "$log" >&2
  return 1
}
export PYTHONPATH="$PWD/.deps/python:$PWD/.deps/root/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
if ! python3 -c "import jinja2, yaml, tqdm" 2>/dev/null; then
  echo "deps: installing requirements.txt (Jinja2, PyYAML, tqdm: the class report; log: $log)"
  pip_install requirements.txt "python3-jinja2 python3-yaml python3-tqdm" "import jinja2, yaml, tqdm" || exit 1
fi
[ "$mode" = batch ] && exit 0

# --- test: what only the project's own tests use ------------------------------------------------------
if ! python3 -c "import pytest, jsonschema" 2>/dev/null; then
  echo "deps: installing requirements-dev.txt (pytest, jsonschema: the Python tests; log: $log)"
  pip_install requirements-dev.txt "python3-pytest python3-jsonschema" "import pytest, jsonschema" \
    || echo "deps: warning: without pytest and jsonschema the Python tests fail" >&2
fi
slurm=() containers=()
{ have_sbin slurmctld && have_sbin slurmd && command -v sbatch >/dev/null; } || slurm+=(slurm-wlm)
{ have_sbin munged && have_sbin mungekey; } || slurm+=(munge)
{ command -v podman >/dev/null && have_sbin runc && have_sbin debootstrap; } || containers+=(podman runc debootstrap)
optional() {      # what: the tests that skip without them; the rest: apt_install's arguments
  local what=$1; shift
  if [ "$root" = 1 ]; then
    echo "deps: installing ${*#--with-recommends} ($what; log: $log)"
    apt_install "$@" || echo "deps: warning: $what will skip" >&2
  else
    echo "deps: note: ${*#--with-recommends} not installed: $what will skip (sudo apt-get install -y ${*#--with-recommends})" >&2
  fi
}
[ ${#slurm[@]} -eq 0 ] || optional "the Slurm tests" "${slurm[@]}"
[ ${#containers[@]} -eq 0 ] || optional "the container image test" --with-recommends "${containers[@]}"
