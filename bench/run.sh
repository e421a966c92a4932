#!/usr/bin/env bash
# Builds the benchmark programs and runs every workload on 127.0.0.1 against Muster, the raw
# TCP floor and PyTorch's TCPStore, interleaved, unpinned and pinned to one CPU (taskset -c 0),
# each process bounded in time. Prints a Markdown table and writes bench/results/latest.csv
# (raw rows: bench/results/raw.csv). The whole run stays under 15 minutes.
#
#   bench/run.sh                 all workloads, 3 repetitions (about 7-8 minutes)
#   bench/run.sh --quick         1 repetition, short windows (about 1-2 minutes)
#   bench/run.sh --tune          CAF scheduler / middleman settings (about 9 minutes)
#   options: --reps=N --workloads=seq,conc,barrier,bringup,failure,heartbeat,durable,resume
#            --pin=both|none|only --build-dir=DIR
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
RESULTS="$ROOT/bench/results"
REPS=3
WORKLOADS="seq,conc,barrier,bringup,failure,heartbeat,durable,resume"
PIN=both
QUICK=0
TUNE=0
BUDGET_S=$((14 * 60))  # the script stops starting new runs after this
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1; REPS=1 ;;
    --tune) TUNE=1 ;;
    --reps=*) REPS="${arg#*=}" ;;
    --workloads=*) WORKLOADS="${arg#*=}" ;;
    --pin=*) PIN="${arg#*=}" ;;
    --build-dir=*) BUILD="${arg#*=}" ;;
    *) echo "run.sh: unknown option $arg (see the header of bench/run.sh)" >&2; exit 2 ;;
  esac
done
START=$(date +%s)
mkdir -p "$RESULTS"

# --- PyTorch's TCPStore comes from Debian's libtorch-dev --------------------------------------
install_torch() {
  if dpkg -s libtorch-dev >/dev/null 2>&1; then return 0; fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      echo "run.sh: libtorch-dev is not installed and this user cannot install packages;" \
           "continuing without the TCPStore columns (install it: apt-get install libtorch-dev)" >&2
      return 1
    fi
  fi
  echo "run.sh: installing libtorch-dev (PyTorch's TCPStore; about 500 MB installed)..." >&2
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends \
      libtorch-dev >/dev/null; then
    echo "run.sh: could not install libtorch-dev; continuing without the TCPStore columns" >&2
    return 1
  fi
}
HAVE_TORCH=1
install_torch || HAVE_TORCH=0

# --- build --------------------------------------------------------------------------------------
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DMUSTER_BUILD_BENCH=ON >/dev/null
else
  cmake "$BUILD" -DMUSTER_BUILD_BENCH=ON >/dev/null  # picks up a newly installed libtorch
fi
TARGETS="tcp_pingpong muster_bench bench_report"
if [ "$HAVE_TORCH" = 1 ]; then TARGETS="$TARGETS tcpstore_bench"; fi
# shellcheck disable=SC2086
cmake --build "$BUILD" -j 2 --target $TARGETS >&2
BIN="$BUILD/bench"
if [ ! -x "$BIN/tcpstore_bench" ]; then HAVE_TORCH=0; fi

# --- machine ------------------------------------------------------------------------------------
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/,/ /g')
MACHINE="nproc=$(nproc) cpu=${CPU:-unknown} kernel=$(uname -r | sed 's/,/ /g')"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $MACHINE; load average before: $LOAD_BEFORE" >&2

# --- running ------------------------------------------------------------------------------------
RAW="$RESULTS/raw.csv"
if [ "$TUNE" = 1 ]; then RAW="$RESULTS/raw-tune.csv"; fi
echo "pin,rep,system,variant,workload,param,metric,value,unit" >"$RAW"
SKIPPED=0

# run PIN REP SYSTEM VARIANT WORKLOAD PARAM LIMIT_S [flags...]: one bounded driver invocation.
run() {
  local pin=$1 rep=$2 system=$3 variant=$4 workload=$5 param=$6 limit=$7
  shift 7
  local bin="$BIN/${system}_bench"
  [ "$system" = tcp ] && bin="$BIN/tcp_pingpong"
  [ "$system" = tcpstore ] && [ "$HAVE_TORCH" = 0 ] && return 0
  if [ $(( $(date +%s) + limit - START )) -gt "$BUDGET_S" ]; then
    SKIPPED=$((SKIPPED + 1))
    echo "run.sh: skipping $system $workload $param ($pin): time budget" >&2
    return 0
  fi
  local cmd=(timeout -k 5 "$limit" "$bin" "--workload=$workload" "--param=$param"
             "--variant=$variant" "--deadline_s=$((limit - 2))" "$@")
  [ "$pin" = pinned ] && cmd=(taskset -c 0 "${cmd[@]}")
  echo "  $pin rep $rep: $system ${variant:+$variant }$workload $param" >&2
  "${cmd[@]}" 2> >(sed 's/^/    /' >&2) | sed "s/^/$pin,$rep,/" >>"$RAW" ||
    echo "run.sh: $system $workload $param ($pin) failed or timed out" >&2
}

wants() { [[ ",$WORKLOADS," == *",$1,"* ]]; }

OPS=20000; DURATION=1000; ROUNDS=20; TRIALS=10; WINDOW=30000; BIG=10000
if [ "$TUNE" = 1 ]; then OPS=10000; fi
if [ "$QUICK" = 1 ]; then OPS=5000; DURATION=500; ROUNDS=8; TRIALS=5; WINDOW=10000; fi

# One repetition of the interleaved workloads: Muster, raw TCP, TCPStore, then the next one.
repetition() {
  local pin=$1 rep=$2
  if wants seq; then
    run "$pin" "$rep" muster tryget seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" tcp "" seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" tcpstore get seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" muster insert seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" tcpstore add seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" muster state seq 1 60 "--ops=$OPS"
    # Client actors hosted on the network thread, and the floor: bare CAF with Muster's settings.
    run "$pin" "$rep" muster tryget-hosted seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" muster insert-hosted seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" muster floor seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" muster floor-hosted seq 1 60 "--ops=$OPS"
    # Through muster::Agent: its blocking call, and CallAsync as the Python binding uses it.
    run "$pin" "$rep" muster agent seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" muster agent-async seq 1 60 "--ops=$OPS"
    # The set-up docs/operations.md recommends on shared networks: mutual TLS, then the token too.
    run "$pin" "$rep" muster agent@tls seq 1 60 "--ops=$OPS" "--tls_dir=$RESULTS/certs"
    run "$pin" "$rep" muster agent@tls-token seq 1 60 "--ops=$OPS" "--tls_dir=$RESULTS/certs" \
      "--token=bench-job-token-0123456789"
  fi
  if wants conc; then
    for c in 1 4 16 64; do
      run "$pin" "$rep" muster "" conc "$c" 30 "--duration_ms=$DURATION"
      run "$pin" "$rep" muster hosted conc "$c" 30 "--duration_ms=$DURATION"
      run "$pin" "$rep" tcp "" conc "$c" 30 "--duration_ms=$DURATION"
      run "$pin" "$rep" tcpstore add conc "$c" 30 "--duration_ms=$DURATION"
      run "$pin" "$rep" tcpstore get conc "$c" 30 "--duration_ms=$DURATION"
    done
  fi
  if wants barrier; then
    for n in 8 64 256 1024; do
      run "$pin" "$rep" muster "" barrier "$n" 60 "--rounds=$ROUNDS"
      run "$pin" "$rep" muster combined barrier "$n" 60 "--rounds=$ROUNDS"
      run "$pin" "$rep" tcp "" barrier "$n" 60 "--rounds=$ROUNDS"
      run "$pin" "$rep" tcpstore "" barrier "$n" 60 "--rounds=$ROUNDS"
    done
  fi
  if wants durable; then  # a leader with a state dir against memory only
    run "$pin" "$rep" muster insert seq 1 60 "--ops=$OPS"
    run "$pin" "$rep" muster insert-durable seq 1 60 "--ops=$OPS"
    for c in 1 64; do
      run "$pin" "$rep" muster insert conc "$c" 30 "--duration_ms=$DURATION"
      run "$pin" "$rep" muster insert-durable conc "$c" 30 "--duration_ms=$DURATION"
    done
  fi
  if wants resume; then  # kill -9 of a durable leader, restarted: every agent back
    run "$pin" "$rep" muster "" resume 64 60
    run "$pin" "$rep" muster "" resume 1024 90
  fi
  if wants bringup; then
    run "$pin" "$rep" muster "" bringup 1024 60
    run "$pin" "$rep" tcp "" bringup 1024 60
    run "$pin" "$rep" tcpstore "" bringup 1024 60
    run "$pin" "$rep" muster "" bringup "$BIG" 60
    run "$pin" "$rep" tcp "" bringup "$BIG" 60
  fi
}

# Workloads that repeat internally (trials, sampled windows): once per pinning.
long_workloads() {
  local pin=$1
  if wants failure; then
    run "$pin" 1 muster "" failure 64 150 "--trials=$TRIALS"
    run "$pin" 1 muster hosted failure 64 150 "--trials=$TRIALS"
    run "$pin" 1 tcp "" failure 64 90 "--trials=$TRIALS"
  fi
  if wants bringup && [ "$pin" = unpinned ]; then
    run "$pin" 1 muster "" bringup 100000 120 --procs=16
  fi
  if wants heartbeat && [ "$pin" = unpinned ]; then
    run "$pin" 1 muster batched heartbeat "$BIG" $((WINDOW / 1000 + 60)) "--window_ms=$WINDOW" \
      "--duration_ms=$((WINDOW + 5000))"
    run "$pin" 1 muster "" heartbeat "$BIG" $((WINDOW / 1000 + 60)) "--window_ms=$WINDOW" \
      "--duration_ms=$((WINDOW + 5000))"
    run "$pin" 1 muster oneway heartbeat "$BIG" $((WINDOW / 1000 + 60)) "--window_ms=$WINDOW" \
      "--duration_ms=$((WINDOW + 5000))"
    run "$pin" 1 tcp "" heartbeat "$BIG" $((WINDOW / 1000 + 60)) "--window_ms=$WINDOW" \
      "--duration_ms=$((WINDOW + 5000))"
    run "$pin" 1 muster floor heartbeat "$BIG" $((WINDOW / 1000 + 60)) "--window_ms=$WINDOW" \
      "--duration_ms=$((WINDOW + 5000))"
    # The same floor with beats sent as one-way messages (what a beat costs if it is not a request).
    run "$pin" 1 muster floor-oneway heartbeat "$BIG" $((WINDOW / 1000 + 60)) \
      "--window_ms=$WINDOW" "--duration_ms=$((WINDOW + 5000))"
    # One frame a second per simulated process and nothing else: CAF's keep-alive, and raw TCP's
    # one-way frame on a connection per task (the floor of any design that receives one).
    run "$pin" 1 muster keepalive heartbeat "$BIG" $((WINDOW / 1000 + 60)) \
      "--window_ms=$WINDOW" "--duration_ms=$((WINDOW + 5000))"
    run "$pin" 1 tcp oneway heartbeat "$BIG" $((WINDOW / 1000 + 60)) "--window_ms=$WINDOW" \
      "--duration_ms=$((WINDOW + 5000))"
  fi
}

# CAF settings (both ends get the same): the Muster round trip with an event-based and a
# blocking client, 64 concurrent clients, a barrier of 1024 and (unpinned) the heartbeat load.
TUNE_SETTINGS=(
  "sharing-2:scheduler.policy=sharing,scheduler.max-threads=2,middleman.workers=0"
  "sharing-1:scheduler.policy=sharing,scheduler.max-threads=1,middleman.workers=0"
  "sharing-4:scheduler.policy=sharing,scheduler.max-threads=4,middleman.workers=0"
  "sharing-2-mmw1:scheduler.policy=sharing,scheduler.max-threads=2,middleman.workers=1"
  "stealing-4-mmw1(caf-default):scheduler.policy=stealing,scheduler.max-threads=4,middleman.workers=1"
  "stealing-2:scheduler.policy=stealing,scheduler.max-threads=2,middleman.workers=0"
  "stealing-1:scheduler.policy=stealing,scheduler.max-threads=1,middleman.workers=0"
  "stealing-2-nopoll:scheduler.policy=stealing,scheduler.max-threads=2,middleman.workers=0,work-stealing.aggressive-poll-attempts=0,work-stealing.moderate-poll-attempts=0"
)
tune() {
  local pin=$1 rep=$2 entry label caf
  run "$pin" "$rep" tcp "" seq 1 60 "--ops=$OPS"
  for entry in "${TUNE_SETTINGS[@]}"; do
    label=${entry%%:*} caf=${entry#*:}
    run "$pin" "$rep" muster "tryget@$label" seq 1 60 "--ops=$OPS" "--caf=$caf"
    run "$pin" "$rep" muster "blocking@$label" seq 1 60 "--ops=$OPS" "--caf=$caf" \
      --client=blocking
  done
  for entry in "${TUNE_SETTINGS[0]}" "${TUNE_SETTINGS[1]}" "${TUNE_SETTINGS[4]}"; do
    label=${entry%%:*} caf=${entry#*:}
    run "$pin" "$rep" muster "@$label" conc 64 30 "--duration_ms=$DURATION" "--caf=$caf"
    run "$pin" "$rep" muster "@$label" barrier 1024 60 "--rounds=$ROUNDS" "--caf=$caf"
    if [ "$pin" = unpinned ]; then
      run "$pin" "$rep" muster "@$label" heartbeat "$BIG" 40 --window_ms=10000 \
        --duration_ms=14000 --samples=5 "--caf=$caf"
    fi
  done
}

PINS=()
case "$PIN" in
  both) PINS=(unpinned pinned) ;;
  none) PINS=(unpinned) ;;
  only) PINS=(pinned) ;;
  *) echo "run.sh: --pin must be both, none or only" >&2; exit 2 ;;
esac
for rep in $(seq 1 "$REPS"); do
  for pin in "${PINS[@]}"; do
    if [ "$TUNE" = 1 ]; then tune "$pin" "$rep"; else repetition "$pin" "$rep"; fi
  done
done
if [ "$TUNE" = 0 ]; then
  for pin in "${PINS[@]}"; do long_workloads "$pin"; done
fi

# --- report -------------------------------------------------------------------------------------
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
MACHINE="$MACHINE; load before/after: $LOAD_BEFORE / $LOAD_AFTER; $REPS reps"
CSV="$RESULTS/latest.csv"
[ "$TUNE" = 1 ] && CSV="$RESULTS/latest-tune.csv"
"$BIN/bench_report" "--raw=$RAW" "--csv=$CSV" "--machine=$MACHINE" | tee "${CSV%.csv}.md"
echo >&2
echo "run.sh: $(( $(date +%s) - START )) s; skipped runs: $SKIPPED; CSV: $CSV" >&2
[ "$HAVE_TORCH" = 1 ] || echo "run.sh: TCPStore columns are missing (libtorch-dev)" >&2
