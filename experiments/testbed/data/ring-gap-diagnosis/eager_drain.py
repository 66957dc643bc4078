#!/usr/bin/env python3
"""eager_drain.py: does an eager sender wait for its bytes to leave its NIC? (post hoc)

On the ring of 16's step traces (steps-ring16-*.txt.gz, as steps.py reads them), each rank's
leave of each step against three rules, all with store-and-forward: 0, steps.py's (an eager
sender is done at once); 1, the sender is done when its chunk has left its NIC (bytes / 12.5
MB/s after it entered); 2, as 1, and a chunk starts only once the NIC has sent the previous
step's. Prints the excess (measured leave less the rule's) over all ranks, steps and rounds after
the first: median, mean, 10th percentile; then the rules' own rounds run from an aligned start
(no measured entry), which says whether the rule changes the round itself. Usage:
eager_drain.py [DIR]
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


def leaves(enter, previous_enter, rule):
    """Every rank's leave of a step under `rule`, from the ranks' entries to it (and to the step
    before, for rule 2)."""
    k = len(HOSTS)
    drain = CHUNK / steps.RATE
    send, recv = [0.0] * k, [0.0] * k
    for r in range(k):
        right = (r + 1) % k
        start = enter[r]
        if rule == 2 and previous_enter is not None:
            start = max(start, previous_enter[r] + drain)
        send[r] = enter[r] if rule == 0 else start + drain
        arrive = start + steps.latency(HOSTS[r], HOSTS[right]) + drain + \
            steps.store_and_forward(HOSTS[r], HOSTS[right])
        recv[right] = max(arrive, enter[right])
    return [max(a, b) for a, b in zip(send, recv)]


def main(folder):
    for path in sorted(glob.glob(os.path.join(folder, "steps-ring16-[0-9].txt.gz"))):
        rounds = steps.read(path)
        for rule in (0, 1, 2):
            excess = []
            for number, ranks in sorted(rounds.items()):
                if number == 0 or len(ranks) != len(HOSTS):
                    continue
                for s in range(len(ranks[0])):
                    enter = [ranks[r][s][0] for r in range(len(HOSTS))]
                    before = [ranks[r][s - 1][0] for r in range(len(HOSTS))] if s else None
                    for r, leave in enumerate(leaves(enter, before, rule)):
                        excess.append(ranks[r][s][1] - leave)
            excess.sort()
            print(f"{os.path.basename(path)} rule {rule}: excess a step median "
                  f"{1e3 * statistics.median(excess):.2f} ms, mean {1e3 * statistics.mean(excess):.2f}"
                  f", 10th percentile {1e3 * excess[len(excess) // 10]:.2f}")
    for rule in (0, 1, 2):
        enter, before = [0.0] * len(HOSTS), None
        for _ in range(30):
            leave = leaves(enter, before, rule)
            before, enter = enter, leave
        print(f"rule {rule} alone from an aligned start: round {1e3 * max(enter):.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)
