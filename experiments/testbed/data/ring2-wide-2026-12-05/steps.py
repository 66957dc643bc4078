#!/usr/bin/env python3
"""steps.py: each run's ring steps against the rule (read after the run; run.sh's protocol)."""
import gzip, statistics, sys, os
here = os.path.dirname(os.path.abspath(__file__))
sub = sys.argv[1] if len(sys.argv) > 1 else ""
for name in ["rt-2.67", "rt-1.33", "rr-2.67"]:
    path = os.path.join(here, sub, f"steps-{name}.txt")
    opener = gzip.open if not os.path.exists(path) else open
    path = path if os.path.exists(path) else path + ".gz"
    steps = {}
    for line in opener(path, "rt"):
        f = line.split()
        if f[0] != "step":
            continue
        rnd, rank, s, enter, leave = int(f[1]), int(f[2]), int(f[3]), float(f[4]), float(f[5])
        steps.setdefault((rnd, s), []).append((enter, leave))
    durations = sorted(max(l for _, l in v) - min(e for e, _ in v) for v in steps.values())
    rounds = {}
    for (rnd, s), v in steps.items():
        rounds[rnd] = max(rounds.get(rnd, 0), max(l for _, l in v))
    r = sorted(rounds.values())
    print(f"{name}: steps {len(durations)}: min {durations[0]:.3f} median "
          f"{statistics.median(durations):.3f} max {durations[-1]:.3f} s; rounds median "
          f"{statistics.median(r):.3f} min {r[0]:.3f} max {r[-1]:.3f} s")
    print("   steps in order:", " ".join(f"{max(l for _, l in steps[k]) - min(e for e, _ in steps[k]):.2f}" for k in sorted(steps)))
