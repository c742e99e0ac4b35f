#!/usr/bin/env bash
# Checks what the build needs; installs what is missing with apt-get when run as root on Debian or
# Ubuntu, else prints the exact command. Cheap enough to run before every build.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
have_header() { [ -f "/usr/include/$1" ] || [ -f "/usr/local/include/$1" ] || [ -f ".deps/include/$1" ]; }
have_header nlohmann/json.hpp || missing+=(nlohmann-json3-dev)
have_header gtest/gtest.h || missing+=(libgtest-dev)
command -v cmake >/dev/null || missing+=(cmake)
have_header boost/context/fiber.hpp || missing+=(libboost-context-dev)  # the CPU emulation backend
command -v bwrap >/dev/null || [ -x .deps/bwrap-root/usr/bin/bwrap ] || missing+=(bubblewrap)  # the sandbox around student code
# Optional: a one-node Slurm cluster for batch.py --slurm's tests (grading/tests/slurm_cluster.py starts
# munged, slurmctld and slurmd from these); installed with the rest when root, else those tests skip.
optional=()
have_sbin() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ]; }
{ have_sbin slurmctld && have_sbin slurmd && command -v sbatch >/dev/null; } || optional+=(slurm-wlm)
{ have_sbin munged && have_sbin mungekey; } || optional+=(munge)
# Optional: podman, runc and debootstrap for grading/tests/test_container_images.py (the PrairieLearn image
# built and run on a debootstrapped Debian base); installed when root, else that test skips.
containers=()
{ command -v podman >/dev/null && have_sbin runc && have_sbin debootstrap; } || containers+=(podman runc debootstrap)

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "deps: nvcc not found: install the CUDA toolkit (12.x or 13.x) and put its bin/ on PATH" >&2
  exit 1
fi
# Python packages for the grader's tests and batch grading (pinned in requirements-dev.txt, which
# includes requirements.txt), from PyPI.
if ! python3 -c "import pytest, jsonschema, jinja2, yaml, tqdm" 2>/dev/null; then
  echo "deps: installing requirements-dev.txt with pip"
  python3 -m pip install -q -r requirements-dev.txt || echo "deps: warning: could not install requirements-dev.txt: batch.py and the Python tests will fail" >&2
fi
if [ ${#optional[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "deps: installing ${optional[*]} (the Slurm tests' one-node cluster)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${optional[@]}" >/dev/null; } || echo "deps: warning: could not install ${optional[*]}: the Slurm tests will skip" >&2
  else
    echo "deps: note: ${optional[*]} not installed: the Slurm tests will skip (sudo apt-get install -y ${optional[*]})" >&2
  fi
fi
if [ ${#containers[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "deps: installing ${containers[*]} (the container image test)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${containers[@]}" >/dev/null; } \
      || echo "deps: warning: could not install ${containers[*]}: the container image test will skip" >&2
  else
    echo "deps: note: ${containers[*]} not installed: the container image test will skip (sudo apt-get install -y ${containers[*]})" >&2
  fi
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "deps: installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "deps: missing ${missing[*]}; install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
