#!/usr/bin/env bash
# transformer_mpi.sh TAUPLAN MPIRUN JOBS: exec's decoder block across MPI processes.
#
# 1. experiments/transformer/tensor-2.yaml's block on a 2 x 2 mesh (tensor 2, pipeline 2, 2
#    micro-batches, 1F1B) under `mpirun -np 4`, 8 steps: exit 0, one JSON document (rank 0's),
#    communicator mpi, 4 ranks; and the same job on 4 threads: the loss of every step equal to
#    within 1e-6 relative (the ranks run the same Plan and sum along the same ring on both
#    transports), the tensor all-reduces and messages per step of every rank equal;
# 2. sync of 2 workers through the MPI communicator, the plan's collective algorithm: a ring
#    under `mpirun -np 2`, and ps under `mpirun -np 3` (2 workers, 1 server rank, platform
#    test-ps), 4 steps each: communicator mpi, the loss of every step that of sync on 2 threads
#    (the shared-memory combine) within 1e-6 relative; the ps row names its server's processing,
#    one call per step, 2 pushes and 2 replies per call, the pushes the whole gradient in fp32;
# 3. single runs on rank 0 alone under mpirun (communicator threads, 1 worker);
# 4. refused with exit 2 and an error line naming the key (each rank prints its own): a mesh of 4
#    workers under `mpirun -np 2` and ps's sync of 2 workers without its server rank (key
#    workers), thread-messages under mpirun (key communicator).
set -u
tauplan=$1
mpirun=$2
jobs=$3
run=("$mpirun" --allow-run-as-root --oversubscribe)
job=$jobs/tensor-2.yaml
mesh=(--workers 4 --tensor-parallel 2 --pipeline-parallel 2 --micro-batches 2 --max-steps 8)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*; do echo "--- $f"; cat "$f"; done; exit 1; }

"${run[@]}" -np 4 "$tauplan" measure "$job" "${mesh[@]}" --json > "$dir/mpi.json" 2> "$dir/mpi.err" \
  || fail "mpirun -np 4 measure exited $?"
"$tauplan" measure "$job" "${mesh[@]}" --json > "$dir/threads.json" 2> "$dir/threads.err" \
  || fail "measure on threads exited $?"
python3 - "$dir/mpi.json" "$dir/threads.json" <<'PY' || fail "MPI and threads differ"
import json, sys
(mpi,) = json.load(open(sys.argv[1]))["results"]  # one document: only rank 0 printed
(threads,) = json.load(open(sys.argv[2]))["results"]
assert mpi["communicator"] == "mpi" and threads["communicator"] == "threads", (mpi["communicator"], threads["communicator"])
assert mpi["layout"] == threads["layout"] == "d1 t2 p2 m2 1f1b", (mpi["layout"], threads["layout"])
a, b = mpi["loss_per_step"], threads["loss_per_step"]
assert len(a) == len(b) == 8, (len(a), len(b))
worst = max(abs(x - y) / abs(y) for x, y in zip(a, b))
assert worst <= 1e-6, (a, b)
assert a[-1] < a[0], a
key = lambda r: (r["rank"], r["tensor_allreduces_per_step"], r["pipeline_sends_per_step"])
assert sorted(map(key, mpi["ranks"])) == sorted(map(key, threads["ranks"])), (mpi["ranks"], threads["ranks"])
print("ok: %s on 4 MPI ranks and 4 threads: loss %.4f -> %.4f, largest relative difference %.2g"
      % (mpi["layout"], a[0], a[-1], worst))
PY

sync=(--strategies sync --workers 2 --tensor-parallel 1 --max-steps 4 --json)
"$tauplan" measure "$job" "${sync[@]}" > "$dir/sync-threads.json" 2> "$dir/sync-threads.err" \
  || fail "sync on threads exited $?"
"${run[@]}" -np 2 "$tauplan" measure "$job" "${sync[@]}" --collective ring > "$dir/sync-ring.json" \
  2> "$dir/sync-ring.err" || fail "sync ring under mpirun -np 2 exited $?"
"${run[@]}" -np 3 "$tauplan" measure "$job" "${sync[@]}" --collective ps --platform test-ps \
  > "$dir/sync-ps.json" 2> "$dir/sync-ps.err" || fail "sync ps under mpirun -np 3 exited $?"
python3 - "$dir/sync-threads.json" "$dir/sync-ring.json" "$dir/sync-ps.json" <<'PY' || fail "sync under MPI"
import json, sys
(threads,), (ring,), (ps,) = (json.load(open(f))["results"] for f in sys.argv[1:])
assert threads["communicator"] == "threads" and ring["communicator"] == ps["communicator"] == "mpi"
assert (ring["collective"], ps["collective"]) == ("ring", "ps"), (ring["collective"], ps["collective"])
for row in (ring, ps):
    a, b = row["loss_per_step"], threads["loss_per_step"]
    assert len(a) == len(b) == 4, (a, b)
    worst = max(abs(x - y) / abs(y) for x, y in zip(a, b))
    assert worst <= 1e-6, (row["collective"], a, b)
(server,) = ps["servers"]
params = ps["parameters"]
assert server["calls"] == 4 and server["call_messages"] == [4] * 4, server
assert server["call_bytes"] == [2 * 4 * params] * 4, (server["call_bytes"], params)  # the pushes' payload
assert "servers" not in ring
print("ok: sync on 2 MPI ranks (ring) and 2 + 1 server (ps) gives the threads' losses; server calls %d of %d bytes"
      % (server["calls"], server["call_bytes"][0]))
PY

"${run[@]}" -np 2 "$tauplan" measure "$job" --strategies single --workers 1 --tensor-parallel 1 --max-steps 3 --json \
  > "$dir/single.json" 2> "$dir/single.err" || fail "single under mpirun exited $?"
python3 - "$dir/single.json" <<'PY' || fail "single under mpirun"
import json, sys
(row,) = json.load(open(sys.argv[1]))["results"]
assert row["strategy"] == "single" and row["communicator"] == "threads" and row["workers"] == 1, row
print("ok: single under mpirun ran on rank 0")
PY

refused() {  # refused KEY ARGS...: exit 2 and one line naming the flag --KEY that gave the value
  local key=$1
  shift
  "${run[@]}" -np 2 "$tauplan" measure "$job" "$@" > /dev/null 2> "$dir/refused.err"
  local rc=$?
  local line
  line=$(grep -m1 "error:" "$dir/refused.err")
  [ $rc -eq 2 ] || fail "$* under mpirun -np 2: exit $rc, expected 2"
  case "$line" in
    *"command line: --$key: expected"*) echo "ok: refused: $line" ;;
    *) fail "$* under mpirun -np 2: '$line' does not name $key" ;;
  esac
}
refused workers "${mesh[@]}"
refused workers --strategies sync --workers 2 --tensor-parallel 1 --collective ps --platform test-ps
refused communicator --strategies sync --workers 2 --tensor-parallel 1 --communicator thread-messages
