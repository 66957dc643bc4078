// fabric.hpp: the testbed's links, emulated in one user-space process over TUN devices.
//
// Every host namespace has one TUN interface (<prefix>emu, 10.211.0.<rank+1>/24). The fabric
// holds all of them: an IPv4 packet that host a's kernel sends to host b's address is read from
// a's TUN, crosses the links of the platform's route a -> b one after the other, and is written
// into b's TUN, where b's kernel receives it. Each link is a drop-tail FIFO served at its rate
// followed by its latency: a packet of L bytes that reaches link l at time t leaves it at
// d = max(t, busy_l) + L / wire_rate_l (busy_l := d) and reaches the next link at
// d + latency_l, unless the bytes queued ahead of it ((max(t, busy_l) - t) x wire_rate_l) plus
// L exceed the link's queue (the packet is dropped, as a switch would). Times are virtual
// (CLOCK_MONOTONIC); a late wake-up delays a packet but never changes a link's rate. Events run
// from one heap, each as soon as no packet can still reach its link earlier (the link's
// lookahead: the least latency any route accumulates before it), so each link serves its
// packets in order of arrival, and a packet costs one timer wake-up (its delivery), not one per
// link. A split-duplex link is two such links (its _UP and _DOWN
// halves); a shared link is one, whatever the direction; a fat pipe serves each (source,
// destination) pair on its own. Packets to an address that is not a testbed host, and anything
// but IPv4, are dropped: nothing leaves the testbed's namespaces.
//
// Why not tc: this kernel has no netem (CONFIG_NET_SCH_NETEM is not set; /proc/config.gz), so tc
// can shape rates (tbf, htb) but cannot delay; a user-space delay line was needed anyway, and
// doing rate, latency, sharing and routing in one place follows any platform's routes (even
// source-dependent ones) and gives a shared link one queue for both directions. The price is
// CPU: every packet is read and written once by this process (README.md, "Limits").
// What it leaves out: packet loss other than queue overflow, jitter, reordering, IPv6, and the
// TCP acknowledgement traffic of SimGrid's crosstraffic (ACKs are charged their real bytes).
#pragma once

#include <functional>
#include <string>

#include "exec/testbed/spec.hpp"

namespace tauplan::testbed {

struct FabricOptions {
  /// The fabric stops (and the testbed is removed by on_expiry) after this many seconds.
  double ttl_s = 4 * 3600.0;
  /// The timer is armed this long before the next event and events due within this much of now
  /// run at once: the median wake-up latency of a SCHED_FIFO timerfd on this VM (24-27 us,
  /// measured with a timerfd loop; exec/testbed/README.md), so that packets leave on time on
  /// average rather than late by it every hop.
  double early_s = 25e-6;
  /// SCHED_FIFO priority (1-99), so that busy ranks on 2 cores do not delay packets; 0 keeps the
  /// normal scheduler. Linux's RT throttling still leaves 5% of each core to other tasks.
  int realtime_priority = 10;
  /// Where the fabric writes its counters once a second (JSON); empty for none.
  std::string stats_path;
  /// Cap on packets held at once (queued or in flight); more are dropped and counted.
  int max_packets = 32768;
};

/// Runs the fabric of `spec` until SIGTERM or SIGINT (returns 0), a host namespace or TUN that
/// goes away (returns 1), or the time to live (calls on_expiry, returns 0). With ready_fd >= 0,
/// writes "ready\n" there once every TUN is attached (or "error: ...\n" and returns 1), then
/// closes it. Must run with the rights to enter the namespaces.
int run_fabric(const Spec& spec, const FabricOptions& options, int ready_fd,
               const std::function<void()>& on_expiry);

}  // namespace tauplan::testbed
