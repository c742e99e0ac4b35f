#!/usr/bin/env bash
# Debian packages for this project folder only, without root:
#
#   tools/fetch_debs.sh PACKAGE...
#
# Downloads the packages and what they depend on that this machine does not have installed, with
# apt-get download and a private copy of the package lists (.deps/apt/: `apt-get update` into a folder
# of ours needs no root), and unpacks them into .deps/root/ (dpkg-deb -x: nothing is installed, no
# maintainer script runs). The Makefiles give CMake .deps/root/usr. apt's output goes to
# $SCANGRADE_LOG_DIR/deps.log (default build/logs); exit status 1 when apt-get could not do it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: tools/fetch_debs.sh PACKAGE..." >&2; exit 2; }
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || exit 1
log_dir=${SCANGRADE_LOG_DIR:-build/logs}
log=$log_dir/deps.log
mkdir -p "$log_dir"
state=$PWD/.deps/apt
opts=(-o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o Debug::NoLocking=1)
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs" .deps/root
apt-get "${opts[@]}" update -qq >>"$log" 2>&1
closure=$(apt-cache "${opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
            --no-breaks --no-replaces --no-enhances "$@" 2>>"$log" | grep -v '^ \|^<' | sort -u)
want=()
for p in $closure; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" || want+=("$p")
done
[ ${#want[@]} -eq 0 ] && exit 0
(cd "$state/debs" && apt-get "${opts[@]}" download "${want[@]}") >>"$log" 2>&1
for deb in "$state"/debs/*.deb; do dpkg-deb -x "$deb" .deps/root; done
