#!/usr/bin/env bash
# async_mpi.sh TAUPLAN MPIRUN: asynchronous parameter-server training across MPI ranks.
#
# 1. async-ps with K = 4 workers and one server under `mpirun -np 5` on the real Fashion-MNIST
#    (dataset-fashion-mnist), SSP bound 2: exit 0, one JSON document (rank 0), communicator mpi,
#    test accuracy >= 0.85 reached, measured staleness within (K-1)(2s+1) = 15 and every worker
#    at most 2 steps ahead of the slowest;
# 2. every server rank's own processing (`servers`, exec/report.hpp), in closed form: the lead
#    (server 0) applied updates_applied updates, each server 2 messages and its shard (chunk j of
#    the parameters over S) x 4 bytes an update, the others within K updates of the lead,
#    0 < processing_s < wall_s; checked on the run of 1. and on a short one of K = 2, S = 2
#    (synthetic data, testbed-ps's two server hosts, mpirun -np 4);
# 3. the job of 1. under `mpirun -np 4` (K + S = 5 ranks needed): exit 2, one line naming `workers`.
set -u
tauplan=$1
mpirun=$2
run=("$mpirun" --allow-run-as-root --oversubscribe)
common=(--workload fashion-mlp --platform test-ps --strategies async-ps --workers 4 --servers 1
        --batch 32 --staleness-bound 2 --timing concurrent --learning-rate 0.1
        --max-steps 6000 --eval-every 100 --eval-samples 1000 --target-accuracy 0.85)
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
check_servers() {  # check_servers WORKERS SERVERS: the `servers` of the row in $out
  python3 - "$out" "$1" "$2" <<'PY' || fail "K=$1 S=$2: unexpected servers"
import json, sys
(row,) = json.load(open(sys.argv[1]))["results"]
workers, count, n = int(sys.argv[2]), int(sys.argv[3]), row["parameters"]
servers = row["servers"]
assert [s["server"] for s in servers] == list(range(count)), servers
assert servers[0]["calls"] == row["updates_applied"], (servers[0]["calls"], row["updates_applied"])
for j, s in enumerate(servers):
    shard = n // count + (1 if j < n % count else 0)
    assert abs(s["calls"] - servers[0]["calls"]) <= workers and s["host"], s["calls"]
    assert s["messages"] == 2 * s["calls"] and s["bytes"] == shard * 4 * s["calls"], s
    assert 0 < s["processing_median_s"] and 0 < s["processing_s"] < s["wall_s"], s
    assert s["calls_recorded"] == min(s["calls"], 2048) == len(s["call_processing_s"]), s
    print("ok: async server %d of %d: %d updates of %d B, median %.3g us, busy %.3g"
          % (j, count, s["calls"], shard * 4, s["processing_median_s"] * 1e6, s["busy_fraction"]))
PY
}

"${run[@]}" -np 5 "$tauplan" measure "${common[@]}" --json > "$out" 2> "$err" \
  || fail "mpirun -np 5 tauplan measure exited $?"
python3 - "$out" <<'PY' || fail "unexpected JSON"
import json, sys
doc = json.load(open(sys.argv[1]))  # one document: only rank 0 printed
(row,) = doc["results"]
assert row["strategy"] == "async-ps" and row["workers"] == 4, row
assert row["communicator"] == "mpi", row["communicator"]
assert row["dataset"] == "fashion-mnist" and not row["synthetic_data"]
assert row["reached_target"] and row["final_accuracy"] >= 0.85, row["final_accuracy"]
assert row["staleness_version_bound"] == 15
assert row["staleness_max"] <= 15, row["staleness_histogram"]
assert row["clock_skew_max"] <= 2, row["clock_skew_max"]
assert sum(row["staleness_histogram"]) >= row["rounds"]
assert abs(row["total_s"] - row["round_s"] * row["rounds"]) <= 1e-9 * row["total_s"]
print("ok: async-ps K=4 on 5 MPI ranks reached %.3f after %d updates in %.2f s, staleness "
      "mean %.2f max %d" % (row["final_accuracy"], row["rounds"], row["total_s"],
                            row["staleness_mean"], row["staleness_max"]))
PY
check_servers 4 1

"${run[@]}" -np 4 "$tauplan" measure --workload fashion-mlp --platform testbed-ps --workers 2 \
  --servers 2 --strategies async-ps --batch 32 --hidden 32 --timing concurrent --max-steps 400 \
  --eval-every 50 --target-accuracy 0.5 --data-dir /nonexistent/fashion-mnist --allow-synthetic true \
  --train-samples 2000 --eval-samples 500 --json > "$out" 2> "$err" ||
  fail "mpirun -np 4 async-ps K=2 S=2 exited $?"
check_servers 2 2

"${run[@]}" -np 4 "$tauplan" measure "${common[@]}" > "$out" 2> "$err"
rc=$?
[ "$rc" -eq 2 ] || fail "K=4 + 1 server on 4 ranks: expected exit 2, got $rc"
grep -q "workers" "$err" || fail "the error does not name 'workers'"
echo "ok: K + S != MPI world size exits 2"
