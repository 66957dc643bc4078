#!/usr/bin/env bash
# trace_layout.sh TAUPLAN [MPIRUN]: `tauplan simulate --trace` and `tauplan measure --trace` of
# the same small job write one trace layout.
#
# The job: fashion-mlp (MLP 784-32-10, synthetic stand-in), sync and local-sgd (tau 2), K = 2
# on test-crossbar-4 with ring, and (MPI only) ps with K = 2 and one server on test-ps. The
# traces of simulate, of measure with threads and of measure under `mpirun -np 2` (ring) and
# `-np 3` (ps), over TCP, must have: the same processes (one per strategy); the same set of span
# categories; per category the same event-name patterns (digits masked) and the same args
# fields; "ph": "X" spans in microseconds with dur >= 0; one named track per worker ("wK HOST"),
# and the same server tracks ("server HOST"); under MPI, the same number of point-to-point
# messages per collective as the simulator's flows (counted at run time on every rank and
# summed on rank 0). A field missing on one side fails.
set -u
tauplan=$1
mpirun=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.err; do echo "--- $f"; cat "$f"; done; exit 1; }

cat > "$dir/job.yaml" <<'YAML'
workload: fashion-mlp
strategies: [sync, local-sgd]
workers: 2
batch: 32
tau: 2
convergence: fixed
iterations: 8
hidden: [32]
data_dir: /nonexistent/fashion-mnist
allow_synthetic: true
train_samples: 2000
eval_samples: 500
target_accuracy: 0.1
eval_every: 4
max_steps: 64
timing: concurrent
YAML

run() {  # run NAME CMD...: stdout and stderr to $dir/NAME.{out,err}; exit 0 or 3 (answer)
  local name=$1
  shift
  "$@" > "$dir/$name.out" 2> "$dir/$name.err"
  local rc=$?
  [ "$rc" -eq 0 ] || fail "$name: exit $rc"
}

ring=(--platform test-crossbar-4 --collective ring)
ps=(--platform test-ps --collective ps)
run sim-ring "$tauplan" simulate "$dir/job.yaml" "${ring[@]}" --trace "$dir/sim-ring.json"
run threads-ring "$tauplan" measure "$dir/job.yaml" "${ring[@]}" --trace "$dir/threads-ring.json"
pairs="sim-ring:threads-ring"
if [ -n "$mpirun" ]; then
  mpi=("$mpirun" --allow-run-as-root --oversubscribe --mca btl tcp,self)
  run sim-ps "$tauplan" simulate "$dir/job.yaml" "${ps[@]}" --trace "$dir/sim-ps.json"
  run mpi-ring "${mpi[@]}" -np 2 "$tauplan" measure \
    "$dir/job.yaml" "${ring[@]}" --trace "$dir/mpi-ring.json"
  run mpi-ps "${mpi[@]}" -np 3 "$tauplan" measure \
    "$dir/job.yaml" "${ps[@]}" --trace "$dir/mpi-ps.json"
  pairs="$pairs sim-ring:mpi-ring sim-ps:mpi-ps"
fi

python3 - "$dir" $pairs <<'PY' || fail "the layouts differ"
import json, re, sys
folder, pairs = sys.argv[1], sys.argv[2:]

def layout(name):
    doc = json.load(open("%s/%s.json" % (folder, name)))
    assert doc["displayTimeUnit"] == "ms", name
    procs = {}
    for e in doc["traceEvents"]:
        p = procs.setdefault(e["pid"], {"name": None, "tracks": {}, "cats": {}, "flows": {}})
        if e["ph"] == "M" and e["name"] == "process_name":
            p["name"] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            p["tracks"][e["tid"]] = re.sub(r"\d+", "#", e["args"]["name"].split(" (")[0])
        elif e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0, (name, e)
            c = p["cats"].setdefault(e["cat"], {"names": set(), "args": set()})
            c["names"].add(re.sub(r"\d+", "#", e["name"]))
            c["args"].add(tuple(sorted(e["args"])))
            if e["cat"] == "comm":
                p["flows"].setdefault(e["name"], set()).add(e["args"]["flows"])
        elif e["ph"] != "M":
            raise AssertionError("%s: unexpected phase %s" % (name, e["ph"]))
    for pid, p in procs.items():
        spans_on = {e["tid"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid}
        assert spans_on <= set(p["tracks"]), (name, "spans on unnamed tracks", spans_on)
    return procs

for pair in pairs:
    a_name, b_name = pair.split(":")
    a, b = layout(a_name), layout(b_name)
    assert sorted(a) == sorted(b), (pair, "processes", sorted(a), sorted(b))
    for pid in a:
        pa, pb = a[pid], b[pid]
        strategy = pa["name"].split(" ")[0]
        assert pb["name"].split(" ")[0] == strategy, (pair, pa["name"], pb["name"])
        where = "%s %s" % (pair, strategy)
        assert pa["tracks"] == pb["tracks"], (where, "tracks", pa["tracks"], pb["tracks"])
        assert sum(1 for t in pa["tracks"].values() if t.startswith("w")) == 2, (where, pa["tracks"])
        assert set(pa["cats"]) == set(pb["cats"]), (where, "categories", set(pa["cats"]), set(pb["cats"]))
        for cat in pa["cats"]:
            assert pa["cats"][cat]["names"] == pb["cats"][cat]["names"], (
                where, cat, "names", pa["cats"][cat]["names"], pb["cats"][cat]["names"])
            assert pa["cats"][cat]["args"] == pb["cats"][cat]["args"], (
                where, cat, "args", pa["cats"][cat]["args"], pb["cats"][cat]["args"])
        if not b_name.startswith("threads"):  # real messages: as many as the simulated flows
            assert pa["flows"] == pb["flows"], (where, "flows", pa["flows"], pb["flows"])
        print("ok: %s: %s, tracks %s, categories %s" % (
            where, pb["name"], sorted(pb["tracks"].values()), sorted(pb["cats"])))
PY
