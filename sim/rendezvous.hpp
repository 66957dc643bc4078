// rendezvous.hpp: a collective's messages as an MPI library over TCP sends them, host by host.
//
// On a platform whose protocol is a rendezvous (model/inputs/platform.hpp: MessageProtocol), the
// simulator runs a collective's steps without the step barrier of collective_lowering.hpp: each
// host goes through the steps it takes part in, in order, and leaves a step once its own sends
// and receives in it are done (MPI_Sendrecv, or Isend/Irecv then Waitall, per step). A message
// above the eager limit is three transfers: a request (a header: kControlMessageBytes) from the
// sender when it enters the step, a clear-to-send (a header) back once the request has arrived and
// the receiver has entered the step (posted its receive), then the bytes; the sender's part is done
// when the clear-to-send arrives (its bytes go to the socket buffer), the receiver's when the
// bytes arrive. A message at or below the limit is one transfer, done for the sender at once
// and for the receiver when it has arrived and the receiver has entered the step.
//
// With the platform's queued_window_bytes (model::MessageProtocol), each route's first link is
// also a first-in-first-out queue: every message's bytes join it when they start (the whole
// message, leaving at the link's bandwidth), and a request or clear-to-send waits behind what is
// queued there, up to the window's worth, before it starts; the bytes still share the links as
// fluids. On the testbed an answer waited so behind its sender's own outgoing chunk
// (experiments/testbed/README.md, "A ring step, packet by packet").
//
// Why it matters: a host that finishes its step early sends its next request while its
// neighbour is still receiving, so back-to-back ring steps pay two one-way latencies each, not
// the three an isolated message pays (experiments/testbed/README.md measured both).
// What it leaves out: the queue's drain when the first link is shared (taken at the link's
// whole bandwidth), queues at other links of a route, a queue left by one collective when the
// next starts, the queue for messages outside collectives (send_message, the asynchronous
// parameter server's: they never wait), in collectives, the bytes of the first
// fragment that travel with the request (the receiver answers only once they have arrived, so an
// isolated message costs the same either way; single messages, message_parts, carry them), a socket
// buffer smaller than a message (the sender would wait for its bytes to drain), TCP's in-order
// delivery of two messages on one connection (a request may overtake the bytes before it), and the
// reduction arithmetic.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <simgrid/s4u.hpp>

#include "model/inputs/platform.hpp"
#include "sim/collective_lowering.hpp"

namespace tauplan::sim {

/// Bytes of a request or a clear-to-send. Not 0: SimGrid 3.32 never completes a transfer of 0
/// bytes between hosts (Comm::sendto_async of 0 bytes waits for ever; found here). 1 byte adds
/// 1 / bandwidth, 0.08 us at 1.25e7 B/s, against the 64-byte headers it stands for.
constexpr double kControlMessageBytes = 1;

/// Runs the flows of `steps` (one FlowStage repeat each, in program order) host by host as
/// described above, with `protocol`'s eager limit (protocol.rendezvous must be set). Every
/// transfer started is in `comms` while in flight (the caller may cancel them); `stop` is asked
/// after every completion and ends the run early when it returns true (returns false then).
/// Adds the transfers started to `transfers_started`.
bool run_rendezvous_steps(const std::vector<const FlowStage*>& steps,
                          const model::MessageProtocol& protocol,
                          const std::vector<simgrid::s4u::Host*>& hosts,
                          std::vector<simgrid::s4u::CommPtr>& comms,
                          const std::function<bool()>& stop, long long& transfers_started);

/// A message as the wire carries it under `protocol`: above the eager limit of a rendezvous, a
/// request carrying the first fragment (the limit's bytes), a clear-to-send back (`handshake`),
/// then the rest; otherwise one transfer of every byte (`rest_bytes` 0). Every simulated
/// point-to-point message above the limit is split here, so that the engines agree on its parts.
struct MessageParts {
  double request_bytes = 0;
  bool handshake = false;
  double rest_bytes = 0;
};
MessageParts message_parts(double bytes, const model::MessageProtocol& protocol);

/// The bytes SimGrid is asked to move for `bytes`: rounded, at least 1 (see kControlMessageBytes).
std::uint64_t wire_bytes(double bytes);

/// One message from `src` to `dst` under `protocol`, alone (the receiver is taken as ready): its
/// parts (message_parts) one after another.
void send_message(simgrid::s4u::Host* src, simgrid::s4u::Host* dst, double bytes,
                  const model::MessageProtocol& protocol);

}  // namespace tauplan::sim
