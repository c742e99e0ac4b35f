#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (base image: Ubuntu 22.04;
# 24.04 works too), with the bundle unpacked in /autograder/source. It installs the build
# dependencies, builds the grader for the CPU emulation backend (Gradescope has no GPU) into
# /autograder/source/build, and grades the starter files once as a smoke test, so that a broken
# image fails here, at upload time, instead of on the students' submissions.
#
# Student code runs in this image, usually without bubblewrap (Docker's default seccomp profile):
# as an unprivileged uid that can read whatever "others" may read. So the grader is built without
# reference solutions (the emulation backend needs none; a reference/ put into the zip by hand is
# deleted after the build) and hidden/ (hidden suites, the secret) is made root's alone at the end.
#
# The CUDA toolkit is not needed to grade on the emulation backend. When the CMake project has the
# SCANGRADE_CUDA option, the build is configured with -DSCANGRADE_CUDA=OFF and no nvcc is installed.
# Without that option (older trees) `project(... LANGUAGES CUDA)` needs nvcc, so a minimal CUDA
# toolkit (nvcc, cudart, CCCL headers: ~1 GB less than the full toolkit) comes from NVIDIA's apt
# repository. Ubuntu's own nvidia-cuda-toolkit package is not used: on 22.04 it is CUDA 11.5, below
# the 12+ ScanGrade needs, and cannot compile for sm_90.
#
# Variables: SCANGRADE_SOURCE (default /autograder/source), SCANGRADE_CUDA_APT=12-8 (the NVIDIA
# packages' version suffix, fallback path only), JOBS (default: nproc).
set -euo pipefail
SOURCE="${SCANGRADE_SOURCE:-/autograder/source}"
BUILD="$SOURCE/build"
JOBS="${JOBS:-$(nproc)}"
cd "$SOURCE"
export DEBIAN_FRONTEND=noninteractive

echo "setup: installing build dependencies"
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential cmake python3 python3-pip ca-certificates bubblewrap \
  libgtest-dev nlohmann-json3-dev libboost-context-dev >/dev/null

# CMake >= 3.25 (Ubuntu 22.04 ships 3.22): take it from PyPI when apt's is older.
cmake_ok() {
  local v; v="$(cmake --version 2>/dev/null | awk 'NR==1 {print $3}')"
  [ -n "$v" ] && [ "$(printf '%s\n' 3.25 "$v" | sort -V | head -1)" = 3.25 ]
}
if ! cmake_ok; then
  echo "setup: apt's cmake is older than 3.25: installing cmake from PyPI"
  python3 -m pip install -q 'cmake>=3.25,<4'
  hash -r
  cmake_ok || { echo "setup: still no cmake >= 3.25 on PATH" >&2; exit 1; }
fi

install_nvcc() {
  local suffix="${SCANGRADE_CUDA_APT:-12-8}" repo arch
  . /etc/os-release
  repo="ubuntu${VERSION_ID//./}"
  arch="$(uname -m)"; [ "$arch" = aarch64 ] && arch=sbsa
  echo "setup: installing nvcc ${suffix/-/.} from NVIDIA's $repo/$arch repository (this tree cannot configure without CUDA)"
  apt-get install -y -qq --no-install-recommends wget gnupg >/dev/null
  wget -q -O /tmp/cuda-keyring.deb \
    "https://developer.download.nvidia.com/compute/cuda/repos/$repo/$arch/cuda-keyring_1.1-1_all.deb"
  dpkg -i /tmp/cuda-keyring.deb >/dev/null
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends \
    "cuda-nvcc-$suffix" "cuda-cudart-dev-$suffix" "cuda-cccl-$suffix" >/dev/null
  [ -x /usr/local/cuda/bin/nvcc ] || ln -sfn "/usr/local/cuda-${suffix/-/.}" /usr/local/cuda
}

cmake_flags=(-DCMAKE_BUILD_TYPE=Release -DSCANGRADE_BUILD_TESTS=OFF -DSCANGRADE_EMU_BUILD_TESTS=OFF
             -DSCANGRADE_WITH_REFERENCE=OFF)
if grep -q 'SCANGRADE_CUDA' CMakeLists.txt; then
  cmake_flags+=(-DSCANGRADE_CUDA=OFF)
else
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || install_nvcc
  export PATH="/usr/local/cuda/bin:$PATH"
  cmake_flags+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90)
fi

echo "setup: building the grader (emulation backend) in $BUILD"
cmake -S . -B "$BUILD" "${cmake_flags[@]}"
cmake --build "$BUILD" -j "$JOBS" --target scangrade_grader

# Smoke test: the starter files compile and every slot reports not implemented (exit 1: graded,
# some case did not pass). Anything else means the image cannot grade.
echo "setup: smoke test: grading the starter files"
set +e
python3 grading/grade.py student --build-dir "$BUILD" --backend emulate --max-n 4096 --formats gradescope \
  --out /tmp/scangrade-smoke --quiet
rc=$?
set -e
if [ "$rc" -ne 1 ] || [ ! -s /tmp/scangrade-smoke/gradescope.json ]; then
  echo "setup: smoke test failed (grade.py exit $rc, expected 1): the autograder image cannot grade" >&2
  exit 1
fi
rm -rf /tmp/scangrade-smoke

# What student code must not read: no model solution, and hidden/ for root alone (run_autograder.py
# makes it so again before each grading)
if [ -e reference ]; then
  echo "setup: removing reference/ (model solutions do not belong in the image student code runs in)"
  rm -rf reference
fi
if [ -d hidden ]; then
  chown -R 0:0 hidden
  chmod 0700 hidden
  find hidden -type f -exec chmod 0600 {} +
fi
chmod +x "$SOURCE/run_autograder"
echo "setup: done"
