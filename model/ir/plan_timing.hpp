// plan_timing.hpp: a Plan bound to a platform and timed: every op costed, the longest path taken.
// The analytic engine (model/analytic/) is this and the rounds; strategies use it too
// (async-ps sets the staleness its convergence is charged from it).
//
// Compute: steps x (overhead + flop / host speed). Update: overhead + flop / speed.
// Collective: its algorithm's alpha-beta time over the platform's routes (or the job's fixed
// S). Transfer: latency + bytes / narrowest bandwidth of its route. Apply: flop / the server
// host's speed. The round time is the longest path through the DAG; compute_s and comm_s split
// the critical path.
//
// Asynchronous plans (plan.hpp): worker w's cycle T_w is the longest path through its own
// chain, so alone it makes r_w = 1 / T_w updates per second (with a staleness bound s > 0 every
// worker is held to the slowest one's rate, 1 / max T: bounded clock differences force equal
// long-run rates). Shared resources cap the rates: each server's processor (seconds of Apply per
// update of each worker), its two queues of transfers (a server receives, and sends, one
// transfer at a time: seconds of transfer, latency included, per update), and each link the
// transfers cross (bytes / bandwidth per update). A worker's transfers that start together share
// its links (its pushes, posted at once), except its servers' replies under a rendezvous
// (replies_arrive_in_turn: the worker receives one message at a time): those arrive one after
// another, in server order (SimGrid: in the order their requests arrive), sharing nothing. Loaded
// servers change that order under a rendezvous: a one-thread server clears a worker's push when
// it frees, each at its own time, so pushes above the eager limit leave one after another (each
// ending after its bytes, the earlier ones' and the group's other transfers', in server order)
// and each reply above it is timed alone (it came back while a later push flowed). The engine
// times the plan both ways: where the workers, with pushes in turn and replies apart, would
// outrun the servers (progressive filling cuts a server first), the servers bind and the rates
// are theirs; otherwise the servers wait for the pushes, which leave at once and share (SimGrid
// lets each message's wait decide).
// Progressive filling: the resource that needs the largest cut scales the rates of the workers
// that use it (all workers under a staleness bound) until it is exactly busy; those workers are
// fixed, and the next resource is cut among the rest. The throughput X = sum of the rates is
// then min(sum 1/T_w, 1/t_apply, B_link / bytes per update) in the one-bottleneck cases the tests
// pin. Staleness: updates applied between a worker's pull and its apply are X D_w - 1 on average,
// with D_w the time from its read to its apply: T_w, plus the wait at cut resources after the
// read (a cut worker waits 1/x_w - T_w in all: after its read at a server's processor or
// receive queue, before it at the send queue; when both of a server's link queues are cut
// together, a worker reads, then waits for the next push slot of the receive queue, D_w =
// ceil(T_w / t) t); hence mean staleness sum_w x_w D_w - 1, which is K - 1 when no worker waits
// before its read or at the staleness bound [identity: every worker always has one update in
// flight, Little's law]. What it leaves out: a reply order other than server order (replies
// whose applies end far apart do not wait for each other; the engine queues them all the same),
// servers that are loaded now and then (one order or the other for the whole run), contention the
// formulas do not name (a link shared by the parallel shards of one worker's pull), stragglers
// and failures (the simulator's business), and anything stochastic.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::model {

/// A resource an asynchronous plan's workers share: a server's processor or a link.
struct SharedResource {
  std::string name;  ///< "server ps0 processor", "server ps0 link in", "link ps0-link_DOWN"
  int server = -1;   ///< a server's processor (its Apply ops' durations), or -1 for a link
  /// A worker waits for it before its pull reads the parameters (a server's send queue), so
  /// that wait does not make its update staler.
  bool before_read = false;
  std::vector<double> seconds_per_update;  ///< link: busy seconds per update of each worker
};

/// A Plan bound to a platform: ops in topological order with their durations resolved and
/// predecessors in compressed arrays, so that evaluation is one pass over flat memory.
struct CompiledPlan {
  std::vector<double> duration_s;     ///< per op, topological order
  std::vector<OpKind> kind;           ///< per op
  std::vector<double> step_fraction;  ///< per op (compute: part of a step it is, x steps)
  std::vector<int> pred_offset;       ///< CSR: preds of op i are pred_index[pred_offset[i] ..
  std::vector<int> pred_index;        ///<   pred_offset[i+1])
  int steps_per_round = 1;
  // Asynchronous plans only.
  bool asynchronous = false;
  int staleness_bound = 0;
  int workers = 0;
  std::vector<int> owner;                 ///< per op: the worker whose cycle it is in
  std::vector<int> apply_server;          ///< per op: the server of an Apply, else -1
  std::vector<SharedResource> resources;  ///< processors, links in, links out, links
  /// The transfers timed otherwise in the order loaded servers impose (pushes one at a time,
  /// replies apart; see the header comment): (op index, topological order; its duration). Empty
  /// where that order changes nothing. Every other op keeps its duration_s in both orders.
  std::vector<std::pair<int, double>> loaded_servers_transfers;
};

struct RoundTiming {
  double round_s = 0;
  double compute_s = 0;  ///< compute + update on the critical path, per step
  double comm_s = 0;     ///< collectives on the critical path (exposed), per round
  // Asynchronous plans only (round_s = 1 / updates_per_s; compute_s and comm_s: a worker's step
  // and its pull + push + apply, averaged over updates).
  double updates_per_s = 0;
  std::string bottleneck;              ///< "workers", "staleness bound", or a resource's name
  double mean_staleness = 0;           ///< sum_w x_w D_w - 1
  double max_staleness = 0;            ///< max_w X D_w - 1 (the most stale worker's mean)
  std::vector<double> cycle_s;         ///< T_w, uncontended
  std::vector<double> worker_rate;     ///< x_w, updates per second of each worker
  std::vector<double> worker_compute;  ///< compute of one step of each worker
};

/// Duration of one op on the platform (the same costs sim/ uses for its uncontended case).
double op_duration_s(const Op& op, const Plan& plan, const Platform& platform);
/// Whether an asynchronous worker's replies (its servers' parameters) of `bytes` arrive one at a
/// time: under a rendezvous (MPI over TCP), messages above the eager limit. The worker receives
/// one message at a time (exec/async_ranks.cpp: a probe, then a blocking receive), and a
/// rendezvous message's bytes leave its server only after the receiver's clear-to-send, so a
/// second server's reply waits until the first has arrived, its server's thread with it. Timed on
/// the testbed (experiments/testbed/README.md, "A worker's two pushes, timed": one worker, two
/// servers, the replies 44 ms apart, a reply's time on the worker's link). Both engines ask this.
bool replies_arrive_in_turn(const Platform& platform, double bytes);
/// The Plan bound to the platform: every op's duration, its predecessors, and for an
/// asynchronous plan each op's worker and server and the resources the workers share.
CompiledPlan compile(const Plan& plan, const Platform& platform);
/// One round's time by the longest path (synchronous), or the rates, bottleneck and staleness
/// of progressive filling (asynchronous), as the header comment states.
RoundTiming evaluate(const CompiledPlan& compiled);

}  // namespace tauplan::model
