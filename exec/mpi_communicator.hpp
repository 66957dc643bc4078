// mpi_communicator.hpp: one worker per MPI rank (OpenMPI), across processes and machines.
//
// MpiSession initialises MPI (thread level funneled: only the main thread calls MPI), installs
// the ways out of mpi_watchdog.hpp and finalises MPI, unless an exception is unwinding (a peer
// may be waiting for this rank: leaving without MPI_Finalize lets the launcher end the others).
// MpiCommunicator runs one strategy over MPI_COMM_WORLD: ranks 0..K-1 are the workers, and for
// the server algorithms (ps, sparknet) ranks K..K+s-1 are the plan's servers, so the world must
// hold K ranks, or K + s (InputError `workers` otherwise). combine() executes the plan's
// collective algorithm as point-to-point messages over MpiPeers (p2p_collective.hpp: ring, ps,
// tree, sparknet, hierarchical), over all K workers or, for a collective over a subgroup, over a
// communicator split off for that group; Adasum all-gathers the K vectors (a ring of K-1 steps) and
// runs the same pairwise tree on every rank as the thread communicator. A server rank calls serve()
// instead of training, and records its own processing call by call (server_processing.hpp). Only
// TCP-capable transports are assumed (no shared memory), so the same code runs on one machine, in
// the emulated testbed and across machines. This header needs no MPI; the implementation is built
// when MPI is found (TAUPLAN_HAVE_MPI). What it leaves out: several workers per rank, GPU-aware
// MPI, and Horovod's bandwidth-optimal Adasum.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/communicator.hpp"
#include "exec/peer_group.hpp"
#include "exec/server_processing.hpp"
#include "exec/trace_event.hpp"
#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::exec {

/// True when compiled with MPI.
bool mpi_compiled();
/// The host this process runs on: TAUPLAN_TESTBED_HOST when set (the emulated testbed), else
/// its host name ("?" when unknown; empty in a build without MPI).
std::string mpi_process_host();
/// True when this process looks started by mpirun/srun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or
/// PMIX_RANK in the environment).
bool launched_by_mpi_launcher();

/// How often this process's OpenMPI reads its TCP sockets while it has nothing of its own
/// outstanding (the MCA parameter mpi_event_tick_rate, read back from MPI_T after MPI_Init), and
/// who set it: e.g. "mpi_event_tick_rate 1 us (set by tauplan)". Empty before an MpiSession, in
/// a build without MPI, or when the MPI library has no such parameter (not OpenMPI).
std::string mpi_tcp_progress();

class MpiSession {
 public:
  /// Initialises MPI unless it already is (then finalises in the destructor) and starts the
  /// watchdog (mpi_watchdog.hpp). Before MPI_Init it sets OMPI_MCA_mpi_event_tick_rate=1 unless
  /// the environment already sets it: OpenMPI's default (10000 us) lets a rank that waits with
  /// nothing outstanding (a parameter server awaiting a push) see a message's arrival, and its
  /// rendezvous, only on a 10 ms grid (exec/testbed/README.md, "OpenMPI's TCP progress").
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const;
  int size() const;
  /// Broadcasts `bytes` bytes from `root` (e.g. an NCCL unique id).
  void broadcast(void* data, int bytes, int root) const;
  /// A barrier over the world. With `deadline` false it may last any time (idle ranks while
  /// rank 0 trains alone): only the launcher ends it when a rank dies.
  void barrier(bool deadline = true) const;
  /// The longest any one MPI wait may last before the run is ended (the job's mpi_timeout_s).
  void set_wait_timeout(double seconds) const;

 private:
  bool owns_ = false;
};

class MpiCommunicator final : public HostCommunicator {
 public:
  /// Collective over MPI_COMM_WORLD (every rank constructs it). Needs an MpiSession alive.
  /// Throws InputError: `workers` when the world size is not K (+ s for ps and sparknet),
  /// `collective` when exec/ has no MPI implementation of the plan's algorithm or the workers'
  /// nodes do not fit it.
  MpiCommunicator(const model::Plan& plan, const model::Platform& platform,
                  const KeyOrigins& origins);
  ~MpiCommunicator() override;

  /// This rank is one of the plan's servers: it calls serve(), not the trainer.
  bool is_server() const;
  /// Server ranks: aligns with the workers' start of training, then serves their collectives
  /// until they finish; returns this server's spans of the first `trace_rounds` rounds and, when
  /// `processing` is not null, fills it with this server's own work, call by call (its index j,
  /// its host, each call's processing, messages and bytes: server_processing.hpp).
  std::vector<TraceEvent> serve(long long trace_rounds, ServerProcessing* processing = nullptr);
  /// Worker ranks: the K workers among themselves as point-to-point peers (rank r is worker r;
  /// a communicator of their own, so no message of theirs meets the collectives').
  PeerGroup& worker_peers();

  std::string name() const override { return "mpi"; }
  int rank() const override;
  int size() const override;
  int workers() const override;
  int local_workers() const override;
  int first_local_worker() const override;
  void combine(const std::vector<float*>& local_buffers, const std::vector<double>& local_weights,
               std::size_t n, CombineRule rule) override;
  /// The plan's algorithm over the group's own communicator (split off at construction for
  /// every group of the plan's collectives); Adasum is refused (std::logic_error).
  void combine_group(const std::vector<int>& group, const std::vector<float*>& member_buffers,
                     const std::vector<double>& member_weights, std::size_t n,
                     CombineRule rule) override;
  void barrier() override;
  double max_all(double value) override;
  std::vector<double> all_gather(const std::vector<double>& values) override;
  /// The start barrier, then each worker rank's clock offset to rank 0: the sample of least
  /// round-trip time of kClockProbes ping-pongs (Cristian's method), and the largest round trip.
  void align_start() override;
  /// Every worker rank sends its arrival time (on rank 0's clock) to rank 0, which names a
  /// start: the latest arrival plus two of the largest round trips and 200 us, broadcast; each
  /// rank converts it to its own clock.
  std::chrono::steady_clock::time_point agree_round_start() override;
  bool agrees_round_start() const override { return true; }
  /// True when MPI was initialised with MPI_THREAD_SERIALIZED or more (MpiSession asks for it).
  bool combines_from_second_thread() const override;
  void finish() override;
  std::vector<std::string> gather_to_first(const std::string& text) override;
  long long messages_sent() const override;
  std::vector<std::string> process_hosts() const override;

 private:
  /// Splits a communicator off for every subgroup of the plan's collectives (InputError
  /// `collective` for a server algorithm, or a group its check refuses).
  void make_subgroups(const model::Plan& plan, const model::Platform& platform,
                      const KeyOrigins& origins);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tauplan::exec
