// async_simulation.hpp: an asynchronous Plan (plan.hpp: no barrier between workers) in SimGrid.
//
// One actor per worker loops over its cycle (the Plan's ops that carry its index: pull from each
// server, compute, push to each server, each server applies) with no barrier; each server is
// three FIFO queues, each served one request at a time: receiving pushes over its link, sending
// parameters over its link, and applying updates on its processor (Apply ops executed on the
// server host at its speed). A pull reads the server's version when it starts sending; an
// apply records the update's staleness (updates the server applied since that read). With a
// staleness bound s > 0 (SSP) a worker waits before step t+s+1 until every worker has pushed
// step t. Stragglers slow a worker's steps as in the synchronous simulator; a failing worker
// loses the update in flight (its apply is dropped) and rejoins after restart_s; a failing server
// stops serving for restart_s (its queues wait; it keeps its parameters, as a replicated server
// would). Under a rendezvous protocol (MPI over TCP: exec's server ranks) a server is one
// thread whose one queue receives, applies and sends in turn (MPI_Recv, the apply, a blocking
// MPI_Send); a push's request, with its first fragment, goes before the server takes the push,
// and a reply holds the thread only until its clear-to-send is back (its bytes then drain from
// the socket buffer); servers_detail's apply_busy is then the thread's. A worker's pushes,
// posted at once, share its links; its servers' replies above the eager limit arrive one at a
// time (model::replies_arrive_in_turn: the worker receives one message at a time, and a
// rendezvous message's bytes leave only after the receiver's clear-to-send), in the order their
// requests arrived, each server's thread waiting for its clear-to-send meanwhile.
// Throughput (round_s = seconds per update) is taken over the simulated updates after a warm-up
// of a fifth of them, on a window of whole multiples of K updates. What it leaves out: protocol
// messages (a pull request costs nothing), the receive order of replies taken outside a worker's
// turn (its first cycle's pulls and those after a restart share its links), servers that answer
// pulls while applying from a copy, checkpoints of a failed server, and actors killed mid-transfer
// (a failed worker's transfer in flight runs to its end, then is dropped). Used by simulator.cpp's
// simulate(); this header does not include SimGrid.
#pragma once

#include "model/base/chrome_trace.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"
#include "model/ir/result.hpp"
#include "sim/simulator.hpp"

namespace tauplan::sim {

/// Simulates an asynchronous `plan` (plan.asynchronous) as simulate() does a synchronous one:
/// `platform` must be the one loaded in this process. Returns a row with engine "simgrid".
model::ResultRow simulate_asynchronous(const model::Plan& plan, const model::Platform& platform,
                                       const SimOptions& options, model::ChromeTrace* trace,
                                       int trace_pid);

}  // namespace tauplan::sim
