#!/usr/bin/env python3
# make_reproduce_golden.py: writes tests/cli/reproduce_golden.json from one reduced run.
#
#   tauplan reproduce --reduced --fresh --out /tmp/golden
#   python3 tests/cli/make_reproduce_golden.py /tmp/golden > tests/cli/reproduce_golden.json
#
# The tolerance of the measured counts is the largest run-to-run spread that run measured
# between two seeds (spread_max), never a number chosen to make a test pass.
import json
import sys

out = sys.argv[1]
s = json.load(open(f"{out}/sparknet/results.json"))
h = json.load(open(f"{out}/hetseq/results.json"))
golden = {
    "made_by": "tauplan reproduce --reduced --fresh; tests/cli/make_reproduce_golden.py",
    "commit": s["context"]["commit"],
    "date": s["context"]["date"],
    "sparknet": {
        "tolerance_counts": s["spread_max"],
        "tolerance_note": "largest relative seed-to-seed spread measured on the reduced grid",
        "na": s["na"],
        "heatmap": [{k: c[k] for k in ("workers", "tau", "ma", "speedup_measured")}
                    for c in s["heatmap"]],
        "claims": {c["id"]: c["holds"] for c in s["claims"]},
        "alexnet": [{k: a[k] for k in ("workers", "round_s", "comm_s")} for a in s["alexnet"]],
    },
    "hetseq": {
        "scaling": [{k: p[k] for k in ("nodes", "step_s")} for p in h["scaling"]],
        "mixed": [{k: p[k] for k in ("split", "step_s")} for p in h["mixed"]],
    },
}
json.dump(golden, sys.stdout, indent=1)
print()
