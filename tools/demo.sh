#!/usr/bin/env bash
# The main job: a leader and three workers on 127.0.0.1. Each worker connects and registers;
# the script prints a timeline and exits 0 when every worker registered.
set -euo pipefail
build=${1:-build}
leader_bin="$build/examples/leader"
worker_bin="$build/examples/worker"
workers=3
log=$(mktemp -d)
cleanup() {
  [ -n "${leader_pid:-}" ] && kill "$leader_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$log"
}
trap cleanup EXIT
start=$(date +%s%N)
stamp() {
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '[%3d.%03ds] %s\n' $((ms / 1000)) $((ms % 1000)) "$*"
}

"$leader_bin" --jobs="worker=$workers" --port=0 >"$log/leader" 2>&1 &
leader_pid=$!
for _ in $(seq 100); do
  grep -q "ready at" "$log/leader" && break
  sleep 0.1
done
if ! grep -q "ready at" "$log/leader"; then
  stamp "leader did not start:"; cat "$log/leader"; exit 1
fi
address=$(grep -o "ready at [0-9.]*:[0-9]*" "$log/leader" | cut -d' ' -f3)
stamp "$(head -1 "$log/leader")"

pids=()
for task in $(seq 0 $((workers - 1))); do
  timeout 30 "$worker_bin" --leader="$address" --job=worker --task="$task" >"$log/worker$task" 2>&1 &
  pids+=($!)
done
failed=0
for task in $(seq 0 $((workers - 1))); do
  if wait "${pids[$task]}"; then
    stamp "worker/$task: $(cat "$log/worker$task")"
  else
    stamp "worker/$task FAILED: $(cat "$log/worker$task")"; failed=1
  fi
done
kill -TERM "$leader_pid"; wait "$leader_pid" || true; leader_pid=
if [ "$failed" -ne 0 ]; then stamp "demo failed"; exit 1; fi
stamp "all $workers workers registered; leader stopped cleanly"
