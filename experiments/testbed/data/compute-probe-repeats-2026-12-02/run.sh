#!/usr/bin/env bash
# run.sh TAUPLAN [OUT [pin]]: the measurement of experiments/testbed/README.md, "Why the compute
# probe moves" (protocol written before it ran). Brings up the star testbed
# (platforms/testbed-ps8.xml, prefix tpc-) and launches the compute probe of three of the main
# matrix's rows 8 times each, taking turns, 48 rounds per batch size a launch (validate takes 12),
# each launch's every round kept in its JSON (`step_rounds`); then takes it down. Root; run from
# the repository root; writes beside itself, or into OUT; nothing else should run meanwhile.
# With `pin` (added after the first run, for "Pinned ranks"; without it the script does what it
# did), each rank runs pinned to vCPU (its MPI rank mod the vCPUs), its affinity in its .err.
# LAUNCHES, ROUNDS and ROWS in the environment (added for "The mean of several launches"; by
# default 8, 48 and all three rows, as the first two runs had) set the launches, the rounds per
# batch size and the rows (of ps-k8, localsgd-tau16, ring-k4); analyse.py runs at 48 rounds only.
# Both runs' timelines say "exit 0" whatever the launch did: the status was read after $(date)
# had run (fixed after the second run; their JSONs show every launch finished, see the README).
set -uo pipefail
launches=${LAUNCHES:-8} rounds=${ROUNDS:-48} rows=${ROWS:-ps-k8 localsgd-tau16 ring-k4}
bin=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "${2:-$here}" && out=$(cd "${2:-$here}" && pwd)
pin=()
if [ "${3:-}" = pin ]; then
  # ${OMPI_COMM_WORLD_RANK:?} fails the rank rather than pin every rank to vCPU 0.
  pin=(bash -c 'cpu=$((${OMPI_COMM_WORLD_RANK:?} % $(nproc))); taskset -pc "$cpu" $$ >&2 &&
    exec "$0" "$@"')
elif [ -n "${3:-}" ]; then
  echo "run.sh: expected pin or nothing as the third argument, got $3" >&2
  exit 2
fi
for row in $rows; do
  case $row in
    ps-k8 | localsgd-tau16 | ring-k4) ;;
    *) echo "run.sh: ROWS: unknown row $row (ps-k8, localsgd-tau16, ring-k4)" >&2; exit 2 ;;
  esac
done
"$bin" testbed up platforms/testbed-ps8.xml --prefix tpc- > "$out/up.txt" 2>&1 || exit 1
vmstat 5 > "$out/vmstat-5s.txt" &
vm=$!
trap '"$bin" testbed down --prefix tpc- > /dev/null 2>&1; kill $vm 2>/dev/null' EXIT
probe() {  # probe ROW LAUNCH HOSTS WORKERS BATCHES STEPS_PER_ROUND WAIT_S [SERVER_PROCESSING]
  local stem="$out/$1-launch-$2"
  echo "$(date -u +%H:%M:%S) $1 launch $2" >> "$out/timeline.txt"
  "$bin" testbed run --prefix tpc- --hosts "$3" -- "${pin[@]}" "$bin" testbed compute-probe \
    experiments/testbed/fashion-mlp.yaml --computing-ranks "$4" --batches "$5" \
    --steps-per-round "$6" --probe-rounds "$rounds" --wait "$7" ${8:+--server-processing "$8"} \
    --probe-out "$stem.json" > "$stem.out" 2> "$stem.err"
  local rc=$?
  echo "$(date -u +%H:%M:%S) $1 launch $2 exit $rc" >> "$out/timeline.txt"
}
# The rows' waits are what run 1 of main-matrix-three-2026-12-02 predicted as their rounds'
# communication (its results[].compute_calibration.wait_s, rows 2, 9 and 6).
for launch in $(seq 1 "$launches"); do
  for row in $rows; do
    case $row in
      ps-k8) probe ps-k8 "$launch" h0,h1,h2,h3,h4,h5,h6,h7,ps0 8 16,32 1 0.325092 combine ;;
      localsgd-tau16) probe localsgd-tau16 "$launch" h0,h1,h2,h3,ps0 4 64,128 16 0.173969 combine ;;
      ring-k4) probe ring-k4 "$launch" h0,h1,h2,h3 4 64,128 1 0.19062 ;;
    esac
  done
done
[ "$rounds" = 48 ] || exit 0
python3 "$here/analyse.py" "$out" > "$out/analysis.txt" 2>&1
rc=$?
echo "$(date -u +%H:%M:%S) analysis exit $rc" >> "$out/timeline.txt"
