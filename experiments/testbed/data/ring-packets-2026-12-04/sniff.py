#!/usr/bin/env python3
"""sniff.py IFACE OUT: every IPv4/TCP packet a testbed host's kernel sends or receives on its
TUN interface, with the kernel's timestamp, one line each, until SIGTERM.

Run inside a host's namespace (ip netns exec NS python3 sniff.py PREFIXemu OUT). An AF_PACKET
socket sees the host's outgoing packets as its kernel hands them to the TUN (the fabric reads
them next) and its incoming ones as the fabric writes them; SO_TIMESTAMPNS stamps each on
CLOCK_REALTIME, converted here to CLOCK_MONOTONIC (the clock ring_steps' rounds start on) by the
offset between the two read at start and at stop (both written in the header). Only the first
80 bytes of a packet are read. Lines:
  T_MONOTONIC DIR SRC DST IP_LEN SPORT DPORT SEQ ACK FLAGS PAYLOAD
DIR is out or in. What it leaves out: non-TCP packets, and the time a packet spends between the
kernel's stamp and the fabric's read (sub-millisecond on this testbed).
"""
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def offset():
    """CLOCK_REALTIME - CLOCK_MONOTONIC, the pair read as close together as Python allows."""
    best = None
    for _ in range(20):
        a = time.clock_gettime(time.CLOCK_MONOTONIC)
        r = time.clock_gettime(time.CLOCK_REALTIME)
        b = time.clock_gettime(time.CLOCK_MONOTONIC)
        if best is None or b - a < best[0]:
            best = (b - a, r - (a + b) / 2)
    return best[1]


def main(iface, out_path):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    s.settimeout(0.2)
    off0 = offset()
    lines = []
    while not stop:
        try:
            data, anc, _flags, addr = s.recvmsg(80, 256)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        stamp = None
        for level, kind, value in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                stamp = sec + 1e-9 * nsec
        if stamp is None or len(data) < 40 or data[0] >> 4 != 4 or data[9] != 6:
            continue
        ihl = (data[0] & 15) * 4
        ip_len = struct.unpack("!H", data[2:4])[0]
        src, dst = socket.inet_ntoa(data[12:16]), socket.inet_ntoa(data[16:20])
        sport, dport, seq, ack, off_flags = struct.unpack("!HHIIH", data[ihl:ihl + 14])
        tcp_len = (off_flags >> 12) * 4
        flags = off_flags & 0x3F
        payload = ip_len - ihl - tcp_len
        direction = "out" if addr[2] == PACKET_OUTGOING else "in"
        lines.append((stamp, direction, src, dst, ip_len, sport, dport, seq, ack, flags, payload))
    off1 = offset()
    off = (off0 + off1) / 2
    with open(out_path, "w") as f:
        f.write(f"# iface {iface} realtime-monotonic offset start {off0:.9f} stop {off1:.9f}\n")
        for (t, *rest) in lines:
            f.write(f"{t - off:.6f} " + " ".join(str(v) for v in rest) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
