#!/usr/bin/env python3
"""ss_series.py RUN HOST: the data connection's state in each `ss -tin` sample (read after the run)."""
import gzip, re, sys, os
here = os.path.dirname(os.path.abspath(__file__))
run, host = sys.argv[1], sys.argv[2]
at = None; head = None
keys = ["rtt", "cwnd", "bbr_bw", "pacing_gain", "delivery_rate", "snd_wnd", "rcv_space", "rwnd_limited", "unacked", "notsent", "retrans", "lost"]
print("t_s recvq sendq " + " ".join(keys))
t0 = None
for line in gzip.open(os.path.join(here, os.environ.get("SUB", ""), f"ss-{run}-{host}.txt.gz"), "rt"):
    if line.startswith("at "):
        at = float(line.split()[1]); t0 = at if t0 is None else t0; head = None; continue
    f = line.split()
    if len(f) >= 4 and f[2].startswith("10.211.0.") and f[3].startswith("10.211.0."):
        head = (f[0], f[1]); continue
    if head and line.startswith("\t"):
        v = {}
        m = re.search(r"rtt:([\d.]+)", line); v["rtt"] = m.group(1) if m else "-"
        for k in ["cwnd", "snd_wnd", "rcv_space", "unacked", "notsent", "lost"]:
            m = re.search(r"\b" + k + r":(\d+)", line); v[k] = m.group(1) if m else "-"
        m = re.search(r"bbr:\(bw:(\d+)bps", line); v["bbr_bw"] = f"{int(m.group(1))/8e6:.2f}MB/s" if m else "-"
        m = re.search(r"pacing_gain:([\d.]+)", line); v["pacing_gain"] = m.group(1) if m else "-"
        m = re.search(r"delivery_rate (\d+)bps", line); v["delivery_rate"] = f"{int(m.group(1))/8e6:.2f}MB/s" if m else "-"
        m = re.search(r"rwnd_limited:(\S+)", line); v["rwnd_limited"] = m.group(1) if m else "-"
        m = re.search(r"retrans:(\S+)", line); v["retrans"] = m.group(1) if m else "-"
        print(f"{at - t0:.2f} {head[0]} {head[1]} " + " ".join(v[k] for k in keys))
        head = None
