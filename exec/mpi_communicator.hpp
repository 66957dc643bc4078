// mpi_communicator.hpp: one worker per MPI rank (OpenMPI), across processes and machines.
//
// MpiSession initialises MPI (thread level funneled: only the main thread calls MPI) and
// finalises it. MpiCommunicator spans MPI_COMM_WORLD with one worker per rank, so K must equal
// the world size (an InputError otherwise, as for `mpirun -np 3` on a K = 2 job).
// Mean: each rank scales its buffer by w_k / sum w (weights gathered and summed in rank order,
// as the thread communicator does) in double, then MPI_Allreduce(MPI_SUM) on doubles; with
// K = 2 this is bit-identical to the thread communicator (a + b is commutative), with more
// ranks it can differ in the last float bit. Adasum: MPI_Allgather of all K vectors, then the
// same recursive pairwise tree on every rank (identical to the thread communicator, at K x the
// memory). This header needs no MPI; the implementation is built when MPI is found
// (TAUPLAN_HAVE_MPI). What it leaves out: several workers per rank, GPU-aware MPI, and
// Horovod's bandwidth-optimal Adasum (vector halving, distance doubling).
#pragma once

#include <string>

#include "exec/communicator.hpp"

namespace tauplan::exec {

/// True when compiled with MPI.
bool mpi_compiled();
/// True when this process looks started by mpirun/srun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or
/// PMIX_RANK in the environment).
bool launched_by_mpi_launcher();

class MpiSession {
 public:
  /// Initialises MPI unless it already is; finalises in the destructor if it initialised.
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const;
  int size() const;
  /// Broadcasts `bytes` bytes from `root` (e.g. an NCCL unique id).
  void broadcast(void* data, int bytes, int root) const;
  void barrier() const;

 private:
  bool owns_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  /// Needs an MpiSession alive. Throws InputError(job_file, "workers", ...) when the world size
  /// differs from `workers`.
  MpiCommunicator(int workers, const std::string& job_file);

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int workers() const override { return size_; }
  int local_workers() const override { return 1; }
  int first_local_worker() const override { return rank_; }
  MemorySpace memory() const override { return MemorySpace::Host; }
  void combine(const std::vector<float*>& local_buffers, const std::vector<double>& local_weights,
               std::size_t n, CombineRule rule) override;
  void barrier() override;
  double max_all(double value) override;

 private:
  int rank_ = 0;
  int size_ = 1;
  std::vector<double> sum_;
  std::vector<float> gathered_;
};

}  // namespace tauplan::exec
