#!/usr/bin/env python3
"""eager_drain.py: does an eager sender wait for its bytes to leave its NIC? (post hoc)

On the ring of 16's step traces (steps-ring16-*.txt.gz, as steps.py reads them), each rank's
leave of each step against two rules, both with store-and-forward: "at once", steps.py's own
predicted_leave (an eager sender is done when it enters); "drained", the same with the sender done
only once its chunk has left its NIC (bytes / 12.5 MB/s after it entered), i.e. the larger of
predicted_leave and the entry plus that drain. Prints the excess (measured leave less the rule's)
over all ranks, steps and rounds after the first: median, mean, 10th percentile; then each rule's
own round run from an aligned start (no measured entry), which says whether the rule changes the
round itself. Usage: eager_drain.py [DIR]
"""
import glob
import importlib.util
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("steps", os.path.join(HERE, "steps.py"))
steps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(steps)
HOSTS, CHUNK = steps.HOSTS["ring16"], steps.CHUNK["ring16"]
DRAIN_S = CHUNK / steps.RATE
RULES = ("at once", "drained")


def leaves(ranks, step, rule):
    """Every rank's leave of `step` under `rule`, from the ranks' entries ({rank: [(enter,
    leave) per step]})."""
    at_once = steps.predicted_leave(ranks, HOSTS, step, CHUNK, forwarding=True)
    if rule == "at once":
        return at_once
    return [max(leave, ranks[r][step][0] + DRAIN_S) for r, leave in enumerate(at_once)]


def main(folder):
    for path in sorted(glob.glob(os.path.join(folder, "steps-ring16-[0-9].txt.gz"))):
        rounds = steps.read(path)
        for rule in RULES:
            excess = []
            for number, ranks in sorted(rounds.items()):
                if number == 0 or len(ranks) != len(HOSTS):
                    continue
                for s in range(len(ranks[0])):
                    for r, leave in enumerate(leaves(ranks, s, rule)):
                        excess.append(ranks[r][s][1] - leave)
            excess.sort()
            print(f"{os.path.basename(path)} sender {rule}: excess a step median "
                  f"{1e3 * statistics.median(excess):.2f} ms, "
                  f"mean {1e3 * statistics.mean(excess):.2f}, "
                  f"10th percentile {1e3 * excess[len(excess) // 10]:.2f}")
    for rule in RULES:
        # Every rank enters step 0 at 0 and each next step when it left the one before.
        sim = {r: [] for r in range(len(HOSTS))}
        enter = [0.0] * len(HOSTS)
        for s in range(30):
            for r in sim:
                sim[r].append((enter[r], 0.0))
            enter = leaves(sim, s, rule)
            for r in sim:
                sim[r][s] = (sim[r][s][0], enter[r])
        print(f"sender {rule}, alone from an aligned start: round {1e3 * max(enter):.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)
