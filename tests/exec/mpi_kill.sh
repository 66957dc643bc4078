#!/usr/bin/env bash
# mpi_kill.sh TAUPLAN MPIRUN: a rank that dies (or stops answering) mid-run cannot hang
# `mpirun tauplan measure` (issue 14).
#
# Each case starts `mpirun -np 3 tauplan measure` over TCP (--mca btl tcp,self: no shared memory,
# as in the emulated testbed and across machines) on a long job (200000 steps, a target out of
# reach), waits until rank 0 has logged the start of training and one more second, then acts
# on one rank:
#   worker    SIGKILL to rank 1 of a ring run (the others are in collectives or computing);
#   server    SIGKILL to rank 2, the server rank of a ps run with K = 2 (its serving loop);
#   idle      SIGKILL to rank 2 while rank 0 trains `single` alone (the others wait in a
#             barrier with no deadline);
#   frozen    SIGSTOP to rank 1 of a ring run with mpi_timeout_s 3 (alive, so the launcher sees
#             nothing: the other ranks' deadline must end the run).
# Every case must end within 30 s of the signal with a non-zero exit, a one-line error from a
# surviving rank on stderr ("tauplan: error: MPI rank ..."), and no process of the run left
# (ranks are found by a marker in their command line; any left is reported and killed by pid).
# Prints the time from the signal to the end of mpirun for each case.
set -u
tauplan=$1
mpirun=$2
dir=$(mktemp -d /tmp/tauplan-kill.XXXXXX)
mpirun_pid=""
# pids_of MARKER: processes whose command line contains MARKER (no procps needed).
pids_of() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    [ "$pid" = "$$" ] && continue
    tr '\0' ' ' 2> /dev/null < "$f" | grep -qF -- "$1" && echo "$pid"
  done
}
cleanup() {
  [ -n "$mpirun_pid" ] && kill -KILL "$mpirun_pid" 2> /dev/null
  for pid in $(pids_of "$dir/job.yaml"); do
    kill -CONT "$pid" 2> /dev/null
    kill -KILL "$pid" 2> /dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- stderr"; cat "$dir/err" 2> /dev/null; exit 1; }

cat > "$dir/job.yaml" <<'YAML'
workload: fashion-mlp
workers: 2
batch: 32
tau: 4
hidden: [64]
data_dir: /nonexistent/fashion-mnist
allow_synthetic: true
train_samples: 2000
eval_samples: 200
target_accuracy: 0.99
eval_every: 50
max_steps: 200000
YAML

# rank_pid RANK: the pid of the tauplan process of MPI rank RANK in this run.
rank_pid() {
  local pid
  for pid in $(pids_of "$dir/job.yaml"); do
    [ "$pid" = "$mpirun_pid" ] && continue
    if tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$pid"
      return
    fi
  done
}

case_run() {  # case_run NAME SIGNAL RANK WORKERS EXTRA-ARGS...
  local name=$1 signal=$2 rank=$3 workers=$4
  shift 4
  : > "$dir/err"
  "$mpirun" --allow-run-as-root --oversubscribe --mca btl tcp,self -np 3 "$tauplan" measure \
    "$dir/job.yaml" --workers "$workers" "$@" > "$dir/out" 2> "$dir/err" &
  mpirun_pid=$!
  local waited=0
  until grep -q "measure: .* on " "$dir/err"; do
    sleep 0.2
    waited=$((waited + 1))
    [ "$waited" -lt 300 ] || fail "$name: training did not start within 60 s"
    kill -0 "$mpirun_pid" 2> /dev/null || fail "$name: mpirun ended before training"
  done
  sleep 1
  local victim
  victim=$(rank_pid "$rank")
  [ -n "$victim" ] || fail "$name: no process for rank $rank"
  kill -0 "$mpirun_pid" 2> /dev/null || fail "$name: the run ended before the signal"
  local start end
  start=$(date +%s.%N)
  kill "-$signal" "$victim"
  local limit=$((30 * 10)) ticks=0
  while kill -0 "$mpirun_pid" 2> /dev/null; do
    sleep 0.1
    ticks=$((ticks + 1))
    [ "$ticks" -lt "$limit" ] || fail "$name: mpirun still running 30 s after SIG$signal to rank $rank"
  done
  wait "$mpirun_pid"
  local rc=$?
  end=$(date +%s.%N)
  mpirun_pid=""
  [ "$rc" -ne 0 ] || fail "$name: exit 0 after SIG$signal to rank $rank"
  grep -q "^tauplan: error: MPI rank [0-9] of 3 (host .*): " "$dir/err" ||
    fail "$name: no one-line error from a surviving rank"
  sleep 0.5
  local left
  left=$(pids_of "$dir/job.yaml")
  [ -z "$left" ] || fail "$name: processes left behind: $left"
  printf 'ok: %s: SIG%s to rank %d: mpirun exited %d after %.2f s; %s\n' "$name" "$signal" \
    "$rank" "$rc" "$(awk "BEGIN { print $end - $start }")" \
    "$(grep -m1 '^tauplan: error: MPI rank' "$dir/err")"
}

case_run worker KILL 1 3 --strategies sync --collective ring --platform test-crossbar-4
case_run server KILL 2 2 --strategies sync --collective ps --platform test-ps
case_run idle KILL 2 3 --strategies single --platform test-crossbar-4
case_run frozen STOP 1 3 --strategies local-sgd --collective ring --platform test-crossbar-4 \
  --mpi-timeout-s 3
