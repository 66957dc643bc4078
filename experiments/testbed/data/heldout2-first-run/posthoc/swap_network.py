#!/usr/bin/env python3
"""swap_network.py RUN NETWORK OUT FIRST LAST: a post-hoc diagnosis, not part of the protocol.
Copies validate's output RUN to OUT and, in the row platforms FIRST..LAST (NN.xml), sets every
link's bandwidth to the one NETWORK (a calibrated network of the same testbed platform) gives it;
each row platform is also written as NN-before.xml and NN-after.xml (validate --replay reads them;
the run's own were deleted for size, and NN.xml holds their mean compute)."""
import re
import shutil
import sys
from pathlib import Path

run, network, out, first, last = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
link = re.compile(r'<link id="([^"]+)" bandwidth="([^"]+)"')
rates = dict(link.findall(network.read_text()))
shutil.copytree(run, out)
swapped = 0
for row in sorted((out / "platforms").glob("[0-9][0-9].xml")):
    text = row.read_text()
    if first <= int(row.stem) <= last:
        new = link.sub(lambda m: f'<link id="{m.group(1)}" bandwidth="{rates.get(m.group(1), m.group(2))}"', text)
        swapped += sum(a != b for a, b in zip(link.findall(text), link.findall(new)))
        text = new
        row.write_text(text)
    for suffix in ("-before", "-after"):
        (row.parent / f"{row.stem}{suffix}.xml").write_text(text)
print(f"{swapped} link bandwidths swapped", file=sys.stderr)
