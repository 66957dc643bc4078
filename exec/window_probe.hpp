// window_probe.hpp: how many bytes of a host's outgoing message stand ahead of a small message it
// sends to another rank as that message starts to flow, measured over ranks.
//
// A rank that sends a large message and, meanwhile, a small one to someone else (a rendezvous
// request or clear-to-send while its own chunk leaves, as in a ring) puts the small one behind
// the bytes of the large one already queued at its network interface. TCP and OpenMPI hand the
// interface a burst of the message as its data starts, not all of it, and a connection kept busy
// by one message after another (a ring's steps) sends larger bursts (experiments/testbed/
// README.md, "The queue behind a message"). The simulator charges a control message min(queued,
// W) over its first link's rate (root-zone prop queued_window_bytes, sim/rendezvous.hpp); this
// probe measures W on the wall clock. For each triple (sender X, receiver Y, pinger Z), after a
// barrier: Z times `quiet_pings` round trips of small messages to X (X echoes at once); after a
// second barrier X sends Y `messages` messages of `message_bytes`, one after another, each once Y
// says it has the one before (a ring's steps: a rendezvous each, the connection kept warm), and
// echoes Z's back-to-back pings all the while, each echo saying which message was leaving. A
// message's wait is its largest echo less the quiet median; the probe's is the median of those
// over the messages after the first (the connection's warm-up). W = that wait x the rate of X's
// first link, which the caller applies (the probe reports times).
// What it leaves out: the part of a burst that drains between two pings (the largest echo of a
// message can miss its peak by up to one ping's round trip of drain), queues elsewhere than X's
// first link (the caller chooses triples whose routes leave by one link, their narrowest), and
// sizes above 2^31 floats.
#pragma once

#include <functional>
#include <vector>

#include "exec/peer_group.hpp"

namespace tauplan::exec {

/// One measurement: X sends to Y while Z's pings to X are echoed behind X's queue.
struct WindowTriple {
  int sender = 0;
  int receiver = 0;
  int pinger = 0;
};

struct QueuedWindowRequest {
  std::vector<WindowTriple> triples;  ///< measured in this order
  double message_bytes = 1048576;     ///< each message X sends (a positive multiple of 4)
  int messages = 12;                  ///< messages X sends one after another (>= 2)
  int quiet_pings = 20;               ///< round trips timed before the stream
  /// The barrier every rank passes around each triple; empty: peers.barrier().
  std::function<void()> barrier;
};

struct QueuedWindowMeasurement {
  WindowTriple triple;
  std::vector<double> quiet_round_trips_s;  ///< Z's round trips to X, X idle
  std::vector<double> busy_round_trips_s;   ///< Z's round trips to X while X sent to Y
  std::vector<int> busy_message;            ///< which of X's messages each busy echo left behind
  double quiet_median_s = 0;
  /// Per message after the first: its largest busy round trip less quiet_median_s (at least 0);
  /// a message no echo left behind has none.
  std::vector<double> message_waits_s;
  /// The median of message_waits_s: the time X's queue holds an echo as a message starts.
  double queue_wait_s = 0;
};

/// Runs the probe on every rank of `peers` (collective: every rank calls it with the same
/// request). Returns every triple's measurement on rank 0, nothing on the others. Throws
/// std::invalid_argument on every rank for a triple whose ranks are out of range or not three
/// distinct ranks, a message size that is not a positive multiple of 4 bytes, messages < 2 or
/// quiet_pings < 1.
std::vector<QueuedWindowMeasurement> run_queued_window_probe(PeerGroup& peers,
                                                             const QueuedWindowRequest& request);

}  // namespace tauplan::exec
