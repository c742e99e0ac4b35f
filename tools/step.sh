#!/usr/bin/env bash
# One stage of a make target, said in one line with its output in a log file:
#
#   tools/step.sh [--once PATH] LOG 'what it does' -- command [args...]
#
# Runs the command with stdout and stderr in LOG. Before it, one line when PATH (what the stage makes)
# does not exist yet: the stage runs for the first time and its result is kept ("once"); otherwise the
# line comes when the command is still running after 5 s. After it, the time it took when that was the
# first time (3 s or more) or it took 10 s or more; nothing when it had nothing to do.
# On failure, the log's last 30 lines and its name, and the command's exit status.
# VERBOSE=1: the line, then the command's own output as it comes (no log file).
set -uo pipefail

once=""
if [ "${1:-}" = "--once" ]; then once=$2; shift 2; fi
log=$1 what=$2
shift 2
[ "${1:-}" = "--" ] && shift

if [ "${VERBOSE:-0}" != 0 ] && [ -n "${VERBOSE:-}" ]; then
  echo "scangrade: $what"
  exec "$@"
fi

mkdir -p "$(dirname "$log")"
first=0
if [ -n "$once" ] && [ ! -e "$once" ]; then
  first=1
  echo "scangrade: $what (once; log: $log)"
fi
start=$(date +%s)
timer=""
if [ $first = 0 ]; then   # a stage with work to do (still running after 5 s) says so
  ( sleep 5; echo "scangrade: $what (log: $log)" ) &
  timer=$!
fi
"$@" >"$log" 2>&1
status=$?
[ -n "$timer" ] && kill "$timer" 2>/dev/null
took=$(( $(date +%s) - start ))
if [ $status -ne 0 ]; then
  echo "scangrade: $what failed (exit status $status); the end of $log:" >&2
  tail -n 30 "$log" >&2
  exit $status
fi
if { [ $first = 1 ] && [ $took -ge 3 ]; } || [ $took -ge 10 ]; then
  if [ $took -ge 60 ]; then
    echo "scangrade: $what: done in $((took / 60)) min $((took % 60)) s"
  else
    echo "scangrade: $what: done in $took s"
  fi
fi
