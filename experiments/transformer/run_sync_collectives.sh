#!/usr/bin/env bash
# run_sync_collectives.sh TAUPLAN OUT: sync-2.yaml's transformer (2 workers, 150 steps) with its
# gradient combined by every collective algorithm, between threads (communicator
# thread-messages) and between MPI processes (mpirun -np 2, or -np 3 with the server rank of ps
# and sparknet on platform test-ps), beside the shared-memory combine (communicator threads).
# Each run's JSON goes to OUT; the table (markdown) to stdout. About a minute on 2 cores.
set -euo pipefail
tauplan=$1
out=$2
job=$(cd "$(dirname "$0")" && pwd)/sync-2.yaml
run=(mpirun --allow-run-as-root --oversubscribe)
mkdir -p "$out"
"$tauplan" measure "$job" --communicator threads --json > "$out/threads.json" 2> "$out/threads.err"
for c in ring tree hierarchical ps sparknet; do
  platform=() ranks=2
  case $c in ps | sparknet) platform=(--platform test-ps) ranks=3 ;; esac
  "$tauplan" measure "$job" --communicator thread-messages --collective $c "${platform[@]}" \
    --json > "$out/thread-messages-$c.json" 2> "$out/thread-messages-$c.err"
  "${run[@]}" -np $ranks "$tauplan" measure "$job" --collective $c "${platform[@]}" \
    --json > "$out/mpi-$c.json" 2> "$out/mpi-$c.err"
done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
names = ["threads"] + [p + c for c in ["ring", "tree", "hierarchical", "ps", "sparknet"]
                       for p in ["thread-messages-", "mpi-"]]
print("| communicator | collective | round ms | compute ms (ranks) | comm ms (ranks) | final loss | server busy |")
print("|---|---|---|---|---|---|---|")
for name in names:
    document = json.load(open(os.path.join(out, name + ".json")))
    (row,) = document["results"]
    comm = [r["comm_s"] * 1e3 for r in row["ranks"]]
    compute = [r["compute_s"] * 1e3 for r in row["ranks"]]
    servers = row.get("servers")
    print("| %s | %s | %.2f | %.1f-%.1f | %.2f-%.2f | %.4f | %s |" % (
        row["communicator"], row["collective"], row["round_median_s"] * 1e3, min(compute),
        max(compute), min(comm), max(comm), row["loss"]["final"],
        "%.3f" % servers[0]["busy_fraction"] if servers else ""))
print("\ncommit %s, %s" % (document["context"]["commit"], document["context"]["date"]))
PY
