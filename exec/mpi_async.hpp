// mpi_async.hpp: asynchronous parameter-server training across MPI ranks (async_trainer.hpp).
//
// mpirun -np K+S: ranks 0..K-1 are workers, ranks K..K+S-1 servers (rank K the lead). A worker
// runs its cycle of the Plan's ops (worker_cycle) as message handlers: a Pull reads the shard of
// the server's last reply (asking for it with a pull request when it holds none, as in the first
// cycle), the Compute takes a step, a Push sends the gradient's shard, and an Apply waits for the
// server's reply, which it sends once it has applied the gradient (the push's acknowledgement and
// the next pull in one message); with a staleness bound the server holds that reply until the
// bound lets the worker go on. Servers receive messages in arrival order (MPI_Probe on any
// source) and apply them one at a time; the lead evaluates (gathering the other shards) and
// decides to stop, tells the other servers, and every server answers each worker's next message
// with a stop; a worker told to stop completes its exchanges and says goodbye to every server
// that has not told it to stop (one its cycle never reached included), so that every message
// sent is received and every server leaves. A worker posts each receive before its send, sends
// a cycle's pull requests before waiting on the first, and its pushes before waiting on the
// first apply, so no rank blocks another. Statistics meet on rank 0 (worker 0), which reports;
// among them every server's own processing (the row's `servers`, exec/report.hpp): per update,
// the apply (the lead's evaluation excluded) and the preparation of its reply, not the waits in
// MPI_Probe, MPI_Recv and MPI_Send; 2 messages (the push and its reply) and the shard's floats x 4
// bytes per update; wall from the first push's arrival to the end of the last update's handling
// (the lead's evaluations included).
// Compiled with MPI only (TAUPLAN_HAVE_MPI); without it, asking for it is an InputError.
// What it leaves out: several workers per rank, and GPU-aware MPI.
#pragma once

#include "exec/async_trainer.hpp"

namespace tauplan::exec {

/// Runs on every rank of an MPI job of K + S ranks. `reporter` is set on rank 0, whose
/// Measurement is the run's; other ranks return an empty one. Throws InputError when the world
/// size is not K + S.
Measurement train_async_mpi(const model::Plan& plan, const model::Platform& platform,
                            const Dataset& data, const MlpShape& shape, const TrainOptions& options,
                            bool& reporter);

}  // namespace tauplan::exec
