#!/usr/bin/env bash
# mpi_measure.sh TAUPLAN MPIRUN: `tauplan measure` across two MPI processes.
#
# 1. sync and local-sgd with K = 2 under `mpirun -np 2` (synthetic data, a few steps): exit 0,
#    JSON with two exec-cpu rows whose communicator is mpi, printed once (rank 0 only);
# 2. K = 3 under `mpirun -np 2`: exit 2 and one error line naming the key `workers`.
set -u
tauplan=$1
mpirun=$2
run=("$mpirun" --allow-run-as-root --oversubscribe -np 2)
common=(--workload fashion-mlp --platform test-crossbar-4 --batch 32 --tau 4 --hidden 32
        --max-steps 16 --eval-every 8 --data-dir /nonexistent/fashion-mnist
        --allow-synthetic true --train-samples 2000 --eval-samples 500)
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }

"${run[@]}" "$tauplan" measure --strategies sync,local-sgd --workers 2 "${common[@]}" --json \
  > "$out" 2> "$err" || fail "mpirun -np 2 tauplan measure exited $?"
python3 - "$out" <<'EOF' || fail "unexpected JSON"
import json, sys
doc = json.load(open(sys.argv[1]))  # one document: only rank 0 printed
rows = doc["results"]
assert [r["strategy"] for r in rows] == ["sync", "local-sgd"], rows
for r in rows:
    extra = r.get("extra", r)  # exec's extras may be flattened into the row
    assert r["engine"] == "exec-cpu", r["engine"]
    assert r["workers"] == 2
    assert extra["communicator"] == "mpi", extra["communicator"]
    assert extra["steps"] == 16
    assert len(extra["per_worker"]) == 2
    assert all(w["C_s"] > 0 for w in extra["per_worker"])
assert rows[1]["rounds"] == 4 and rows[1]["tau"] == 4
print("ok: sync and local-sgd measured on 2 MPI ranks")
EOF

"${run[@]}" "$tauplan" measure --strategies sync --workers 3 "${common[@]}" > "$out" 2> "$err"
rc=$?
[ "$rc" -eq 2 ] || fail "K=3 on 2 ranks: expected exit 2, got $rc"
grep -q "workers" "$err" || fail "K=3 on 2 ranks: the error does not name 'workers'"
echo "ok: K != MPI world size exits 2"
