// p2p_collective.hpp: the collective algorithms executed for real as point-to-point messages
// over a PeerGroup (exec/peer_group.hpp), behind one interface and one registry keyed by the
// algorithm's name: the MPI communicator runs them over MpiPeers (one worker per process), and
// any PeerGroup can (ThreadPeerHub's threads in the tests).
//
// The names and the algorithms are model/ir/collective.hpp's (the analytic cost) and sim/lower_*'s
// (the simulated flows), so that one Plan's collective is the same algorithm in every engine:
//   ring          reduce-scatter then all-gather, 2(K-1) steps of chunks of N/K;
//   ps            each worker pushes shard j (N/s) to server rank K+j, which sums the K shards
//                 and sends the result back (pull); server ranks serve until the workers finish;
//   tree          binary heap over the workers (model::heap_parents_by_depth): reduce to worker
//                 0 level by level, then broadcast back down;
//   sparknet      the driver (server rank K) collects every worker's vector, averages, and
//                 broadcasts the result;
//   hierarchical  by Host::node of the workers' hosts: ring reduce-scatter inside every node,
//                 G rings across nodes (the i-th worker of every node) on each node's chunks,
//                 ring all-gather inside every node.
// Each is one file (p2p_ring.cpp, ...) and one line in p2p_collective.cpp's registry.
// The weighted mean: peer algorithms sum [w_k x_k, w_k] (the weight rides as one extra float,
// exact for the integer weights the trainer passes) and divide at the end; server algorithms
// send [x_k, w_k] and the server calls combine_mean in worker order, so ps and sparknet give
// the thread communicator's floats bit for bit, ring, tree and hierarchical agree to float
// rounding (sums in float, in another order). Every wait is named (PeerWaitLabel: under MPI the
// watchdog's error names it). A server algorithm reports each call it serves (ServedCall): when
// its first message arrived, and its processing, the server's own work (server_processing.hpp):
// from the arrival of the K pushes (the receives' completion) to the K replies posted, so the
// combine and the replies' posting, not the waits; with its messages (K
// received + K sent) and payload bytes (K x the shard's floats x 4). What it leaves out: pipelining
// of chunks inside a step, overlap of the phases, and Adasum (the communicator all-gathers for it,
// whatever the algorithm).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/peer_group.hpp"
#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::exec {

/// The ranks of one collective over a PeerGroup: ranks 0..K-1 run workers 0..K-1 of the plan,
/// ranks K..K+s-1 its servers (Plan::server_hosts, in order) when the algorithm uses them.
struct CollectiveRanks {
  int rank = 0;     ///< this rank in the PeerGroup
  int workers = 0;  ///< K
  int servers = 0;  ///< s
  /// Workers grouped by their host's node (Host::node), nodes in first-seen order, the same
  /// number on every node (hierarchical's shape; checked when the layout is made).
  std::vector<std::vector<int>> nodes;
  bool is_server() const { return rank >= workers; }
};

/// One call a server rank served (P2pCollective::serve).
struct ServedCall {
  std::chrono::steady_clock::time_point first_message{};  ///< the call's first message arrived
  double processing_s = 0;  ///< the server's own work: the K pushes in to the K replies posted
  long long messages = 0;   ///< received + sent
  long long bytes = 0;      ///< payload bytes combined (K x the shard's floats x 4)
};

class P2pCollective {
 public:
  virtual ~P2pCollective() = default;
  /// model/ir/collective.hpp's name of the algorithm.
  virtual const char* name() const = 0;
  /// True when the algorithm runs on server ranks (the run then has K + s ranks).
  virtual bool uses_servers() const { return false; }
  /// Throws InputError when the workers on these hosts (a collective's members, in order) do
  /// not fit the algorithm (hierarchical: the same number of workers on every node).
  virtual void check(const std::vector<int>& /*worker_hosts*/,
                     const model::Platform& /*platform*/) const {}
  /// On a worker rank: replaces `data` (n floats of this worker, weight >= 0) by the weighted
  /// mean over the K workers, sum w_k x_k / sum w_k; every worker ends with the same floats.
  virtual void mean(const CollectiveRanks& ranks, PeerGroup& peers, float* data, double weight,
                    std::size_t n) const = 0;
  /// On a server rank: serves one collective call of the workers and returns true (with what
  /// the call was, when `call` is not null), or returns false when the workers have finished.
  virtual bool serve(const CollectiveRanks& /*ranks*/, PeerGroup& /*peers*/,
                     ServedCall* /*call*/) const {
    return false;
  }
  /// On a worker rank, once at the end of the run: releases the server ranks.
  virtual void finish(const CollectiveRanks& /*ranks*/, PeerGroup& /*peers*/) const {}
};

/// The algorithm named `name`; throws InputError(origins.of("collective"), ...) when exec/ has
/// none.
const P2pCollective& p2p_collective(const std::string& name, const KeyOrigins& origins);
std::vector<std::string> p2p_collective_names();

// Building blocks shared by the algorithms (p2p_collective.cpp).

/// Range i of `parts` contiguous, balanced ranges of [0, n) (the first n % parts get one more).
std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, int parts, int i);
/// Which of a call's buffers a thread's reused buffer is (reused_floats).
enum class ReusedBuffer { Weighted, Incoming, Children, Shards, Pushes, Mean, Count };
/// `n` floats of this thread's (a rank: an MPI process's thread, a worker thread), the same
/// memory from call to call, as a library's registered buffers are; their contents are what the
/// last use left. Algorithms that took fresh vectors of n floats each call paid the allocator's
/// page faults and unmapping every call: glibc maps buffers of megabytes afresh and gives them
/// back, and on this project's 2-vCPU VM that was 15 of the 16 ms of a tree of 2 MPI ranks
/// combining the transformer's 1.87 MB gradient, and most of a server's 26 ms a call
/// (2026-11-29; experiments/transformer/README.md). A server's buffers (Pushes, Mean) are its own
/// thread's. What it leaves out: giving the memory back before the thread ends.
float* reused_floats(ReusedBuffer which, std::size_t n);
/// [w x_0, ..., w x_{n-1}, w] (products in double, rounded to float): what peer algorithms sum,
/// in this thread's Weighted buffer (n + 1 floats, valid until the thread's next call).
float* weighted_with_weight(const float* data, double weight, std::size_t n);
/// out[i] = sum[i] / sum[n] (in double): the mean from a summed weighted_with_weight vector.
void divide_by_weight(const float* sum, std::size_t n, float* out);
/// Ring reduce-scatter (sum) of `data` (n floats, in ring.size() chunks) over the ranks `ring`,
/// this rank at `position`: afterwards it holds the full sum of chunk (position + 1) mod R.
void ring_reduce_scatter(PeerGroup& peers, const std::vector<int>& ring, int position, float* data,
                         std::size_t n, int tag, const char* what);
/// Ring all-gather of `data` (n floats, in ring.size() chunks) over `ring`, where the rank at
/// position p holds chunk (p + shift) mod R; afterwards every rank holds every chunk.
void ring_all_gather(PeerGroup& peers, const std::vector<int>& ring, int position, float* data,
                     std::size_t n, int shift, int tag, const char* what);
/// What tells one server algorithm from another (ps, sparknet): its name, its messages' tags
/// and its waits' labels.
struct PushPullNames {
  const char* name;
  int push_tag, pull_tag, stop_tag;
  const char* worker_wait;  ///< a worker's push and pull
  const char* server_wait;  ///< a server's wait for the pushes
};
/// A server algorithm: on a worker, [shard j of x, w] to server rank K + j for each of the s
/// servers and the mean of each shard back into `data`; on a server, per call, [shard, w] from
/// every worker, combine_mean in worker order, the shard's mean back to every worker (false on
/// the workers' stop message; the call's ServedCall: first message, processing, messages, bytes,
/// see above); at the end, a stop message from every worker to every server.
std::unique_ptr<P2pCollective> make_push_pull_collective(const PushPullNames& names);

/// Adasum over the K workers of `ranks` whatever the algorithm: every worker's [x, w] block
/// around a ring of the workers (K - 1 steps), then combine_adasum's pairwise tree on every
/// worker (the same floats everywhere). `gathered` is the caller's scratch (K (n + 1) floats).
void adasum_by_all_gather(const CollectiveRanks& ranks, PeerGroup& peers, float* data,
                          double weight, std::size_t n, std::vector<float>& gathered);

/// Workers (positions in `worker_hosts`) grouped by Host::node of their host, nodes in
/// first-seen order (hierarchical's shape).
std::vector<std::vector<int>> workers_by_node(const std::vector<int>& worker_hosts,
                                              const model::Platform& platform);

/// A collective of the plan over a subgroup of its workers (not all K).
struct CollectiveSubgroup {
  std::vector<int> group;               ///< the members (worker indices), in the plan's order
  std::vector<std::vector<int>> nodes;  ///< the members' positions grouped by node
};
/// The plan's collectives over subgroups, each group once, in the plan's topological order,
/// checked against `algorithm` (InputError(origins.of("collective"), ...) for a server algorithm,
/// whose servers serve all K; the algorithm's own check on the members' hosts).
std::vector<CollectiveSubgroup> plan_subgroups(const model::Plan& plan,
                                               const model::Platform& platform,
                                               const P2pCollective& algorithm,
                                               const KeyOrigins& origins);

// One factory per algorithm file.
std::unique_ptr<P2pCollective> make_p2p_ring();
std::unique_ptr<P2pCollective> make_p2p_ps();
std::unique_ptr<P2pCollective> make_p2p_tree();
std::unique_ptr<P2pCollective> make_p2p_sparknet();
std::unique_ptr<P2pCollective> make_p2p_hierarchical();

}  // namespace tauplan::exec
