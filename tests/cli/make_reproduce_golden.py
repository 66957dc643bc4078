#!/usr/bin/env python3
# make_reproduce_golden.py: writes tests/cli/reproduce_golden.json from one reduced run.
#
#   tauplan reproduce --reduced --fresh --out /tmp/golden
#   python3 tests/cli/make_reproduce_golden.py /tmp/golden > tests/cli/reproduce_golden.json
#
# Measured counts are deterministic for a seed and a build (lockstep timing, fixed data order):
# the test pins them exactly. The seed-to-seed spread (the same cells measured with seed 2) is
# recorded and pinned separately; it is what the claims use as their tolerance.
import json
import sys

out = sys.argv[1]
s = json.load(open(f"{out}/sparknet/results.json"))
h = json.load(open(f"{out}/hetseq/results.json"))
golden = {
    "made_by": "tauplan reproduce --reduced --fresh; tests/cli/make_reproduce_golden.py",
    "commit": s["context"]["commit"],
    "date": s["context"]["date"],
    "compute_backend": s["context"].get("compute_backend", ""),
    "sparknet": {
        "na": s["na"],
        "spread": [{k: r[k] for k in ("workers", "tau", "speedup_seed1", "speedup_seed2")}
                   for r in s["spread"]],
        "spread_na": s["spread_na"],
        "heatmap": [{k: c[k] for k in ("workers", "tau", "ma", "speedup_measured")}
                    for c in s["heatmap"]],
        "claims": {c["id"]: c["holds"] for c in s["claims"]},
        "claim_kinds": {c["id"]: c["kind"] for c in s["claims"]},
        "alexnet": [{k: a[k] for k in ("workers", "round_s", "comm_s")} for a in s["alexnet"]],
    },
    "hetseq": {
        "scaling": [{k: p[k] for k in ("nodes", "step_s")} for p in h["scaling"]],
        "mixed": [{k: p[k] for k in ("split", "step_s")} for p in h["mixed"]],
    },
}
json.dump(golden, sys.stdout, indent=1)
print()
