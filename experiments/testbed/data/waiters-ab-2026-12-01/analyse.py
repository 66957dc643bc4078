# Metrics of the waiters A/B protocol (experiments/testbed/README.md), from the calibrate JSONs.
import json, glob, statistics as st, os, sys
d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
arms = {}
for f in sorted(glob.glob(os.path.join(d, '*-*.json')), key=lambda p: int(os.path.basename(p).split('-')[0])):
    w = os.path.basename(f).split('-')[1].split('.')[0]
    if os.path.getsize(f) == 0:
        print(f"(skipped {os.path.basename(f)}: empty, the calibration failed)")
        continue
    j = json.load(open(f))
    routes = {}
    mads = []
    for r in j['routes']:
        beta = r['bandwidth_Bps']
        ex = [t['seconds'] - t['bytes'] / beta for t in r['transfers']]
        med = st.median(ex)
        mads.append(st.median(abs(e - med) for e in ex))
        routes[(r['src'], r['dst'])] = r['alpha_s']
    arms.setdefault(w, []).append(dict(file=os.path.basename(f), factor=j['mpi_latency_factor'],
                                        alpha=routes, mad=mads, warnings=j.get('warnings', []),
                                        seconds=j['seconds']))
for w, runs in arms.items():
    f = [r['factor'] for r in runs]
    keys = runs[0]['alpha'].keys()
    ranges = [max(r['alpha'][k] for r in runs) / min(r['alpha'][k] for r in runs) - 1 for k in keys]
    allmad = [m for r in runs for m in r['mad']]
    print(f"== {w}: {len(runs)} runs")
    for r in runs:
        print(f"   {r['file']:16s} factor {r['factor']:.4f}  mean alpha {st.mean(r['alpha'].values())*1e3:.3f} ms"
              f"  median MAD {st.median(r['mad'])*1e3:.3f} ms  warnings {len(r['warnings'])}  {r['seconds']:.0f} s")
    print(f"   (1) factor mean {st.mean(f):.4f}, range {max(f)/min(f)-1:.2%}")
    print(f"   (2) per-route alpha range over runs: median {st.median(ranges):.2%} (max {max(ranges):.2%}, {len(ranges)} routes)")
    print(f"   (3) within-run MAD of t - S/beta: median {st.median(allmad)*1e3:.3f} ms")
    print(f"   (4) warnings: " + "; ".join(sorted({x for r in runs for x in r['warnings']}))[:600])
