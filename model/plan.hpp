// plan.hpp: the strategy IR. One round of data-parallel training as a DAG of operations.
//
// A Plan holds one round: per-worker Compute and Update ops, Collective ops over a group of
// workers, and Barriers, linked by dependency edges (a Boost.Graph adjacency list). The round
// repeats `rounds` times. Every engine reads the same Plan: model/ takes the longest path,
// sim/ runs each worker as an actor, exec/ runs each op for real. What it leaves out: anything
// inside an op (kernels, chunking of a collective; the collective algorithm decides that) and
// pipelining between rounds (round r+1 starts when round r's last op ends).
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <string>
#include <vector>

namespace tauplan::model {

enum class OpKind { Compute, Update, Collective, Barrier };

/// What a collective combines: gradients before an SGD step (sync), or the parameters
/// themselves after local steps (local-sgd, SparkNet).
enum class CollectivePayload { Gradients, Parameters };

struct Op {
  OpKind kind = OpKind::Barrier;
  std::string label;  ///< human-readable, e.g. "w3 backward bucket 2"

  // Compute and Update: the worker (index into Plan::worker_hosts) that runs it.
  int worker = -1;
  // Compute: one step is forward+backward on `samples` samples costing `flop`, preceded by a
  // fixed `overhead_s` (kernel launches, data loading); the op runs `steps` such steps back to
  // back (local-sgd's tau local steps, each with its local SGD update folded into the step).
  // `flop` of a partial op (one gradient bucket of the backward pass) is that part's share.
  double samples = 0;
  double flop = 0;
  double overhead_s = 0;
  int steps = 1;
  /// Compute: 1 for an op that is (or ends) a training step; the ops of one step that is split
  /// in parts (forward, backward buckets) carry the fraction of the step they are.
  double step_fraction = 1.0;

  // Update: flop of the optimizer step on the worker (0 when folded into the compute step).
  // Also uses `flop` and `overhead_s`.

  // Collective: algorithm name (a registered CollectiveAlgorithm), payload and bytes per worker.
  std::string algorithm;
  CollectivePayload payload = CollectivePayload::Gradients;
  double bytes = 0;
  std::vector<int> group;  ///< workers taking part, in ring order (indices into worker_hosts)
  /// What-if override: when >= 0 the collective takes exactly this long (the job's S).
  double fixed_time_s = -1;
};

using PlanGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op, boost::no_property>;
using OpId = PlanGraph::vertex_descriptor;

enum class BatchSplit { Even, Speed };

struct Plan {
  std::string strategy;  ///< "single", "sync", "local-sgd", ...
  int workers = 1;       ///< K
  int tau = 1;           ///< local steps per round (1 for single and sync)
  double batch = 0;      ///< b as the job gives it (global for sync, per worker for local-sgd)
  BatchSplit split = BatchSplit::Even;
  std::string collective;              ///< algorithm of the round's collectives ("" for single)
  bool overlap = false;                ///< sync: all-reduce overlapped with backward in buckets
  double bucket_bytes = 0;             ///< bucket size when overlapping
  std::vector<int> worker_hosts;       ///< platform host index of each worker
  std::vector<int> server_hosts;       ///< parameter servers / driver used by the collectives
  std::vector<double> worker_samples;  ///< samples each worker computes per step
  int steps_per_round = 1;             ///< SGD steps (per worker) in one round: tau, or 1
  long long rounds = 0;                ///< how many times the round repeats (Na or Ma)
  double convergence_steps = 0;        ///< Na(b) or Ma(b,K,tau) before rounding up
  PlanGraph graph;

  OpId add(Op op);
  void depend(OpId before, OpId after);
  /// Ops in a dependency-respecting order; throws std::logic_error on a cycle.
  std::vector<OpId> topological_order() const;
  /// Number of ops of one kind.
  int count(OpKind kind) const;
};

const char* to_string(OpKind kind);
const char* to_string(BatchSplit split);

}  // namespace tauplan::model
