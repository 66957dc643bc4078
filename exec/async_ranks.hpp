// async_ranks.hpp: asynchronous parameter-server training, the handlers of its Plan's ops over a
// PeerGroup (exec/peer_group.hpp), whatever the transport (exec/async_cycle.hpp has the rest).
//
// K + S ranks: ranks 0..K-1 are workers, ranks K..K+S-1 servers (rank K the lead). A worker
// runs its cycle of the Plan's ops (worker_cycle) as message handlers: a Pull reads the shard of
// the server's last reply (asking for it with a pull request when it holds none, as in the first
// cycle), the Compute takes a step, a Push sends the gradient's shard, and an Apply waits for the
// server's reply, which it sends once it has applied the gradient (the push's acknowledgement and
// the next pull in one message); with a staleness bound the server holds that reply until the
// bound lets the worker go on. A server is one thread: each reply holds it until the reply has
// left (PeerGroup::complete_sends, a blocking send's wait under MPI's rendezvous protocol), the
// behaviour the engines model (sim/async_simulation.hpp, model/ir/plan_timing.cpp). Servers receive
// messages in arrival order (recv_any from any rank) and apply them one at a time; the lead
// evaluates (gathering the other shards) and decides to stop, tells the other servers, and every
// server answers each worker's next message with a stop; a worker told to stop completes its
// exchanges and says goodbye to every server that has not told it to stop (one its cycle never
// reached included), so that every message sent is received and every server leaves. A worker sends
// a cycle's pull requests before waiting on the first, and its pushes before waiting on the first
// apply, and takes the servers' replies as they come, whichever server sent them; a worker's sends
// never wait, a server's reply waits only for a worker that is receiving, so no rank blocks
// another. Afterwards every rank sends what it measured to rank 0 (worker 0), which reports; among
// it every server's own processing (the row's `servers`, exec/report.hpp): per update, the apply
// (the lead's evaluation excluded) and the preparation of its reply, not the waits in receives; 2
// messages (the push and its reply) and the shard's floats x 4 bytes per update; wall from the
// first push's arrival to the end of the last update's handling (the lead's evaluations included).
// Each worker also times every cycle that pushed, from its first push's post to the first and to
// the last reply of a server it pushed to (with several servers: whether the replies came
// together). Two transports run the same handlers: threads of this process (a ThreadPeerHub,
// messages are copies) and MPI ranks (MpiPeers under mpirun -np K+S). What it leaves out: several
// workers per rank, GPU workers, and GPU-aware transports.
#pragma once

#include "exec/async_cycle.hpp"
#include "exec/peer_group.hpp"

namespace tauplan::exec {

/// Runs this rank's part (peers.rank() < K: a worker, else a server) of an asynchronous job of
/// K + S ranks. `reporter` is set on rank 0, whose Measurement is the run's (communicator:
/// peers.name()); other ranks return an empty one. InputError when peers.size() is not K + S.
Measurement train_async(const model::Plan& plan, const model::Platform& platform,
                        const Dataset& data, const MlpShape& shape, const TrainOptions& options,
                        PeerGroup& peers, bool& reporter);

/// The same job with its K + S ranks as threads of this process.
Measurement train_async_threads(const model::Plan& plan, const model::Platform& platform,
                                const Dataset& data, const MlpShape& shape,
                                const TrainOptions& options);

}  // namespace tauplan::exec
