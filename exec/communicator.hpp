// communicator.hpp: how K workers combine their flat vectors, behind one interface.
//
// A communicator spans `workers()` workers (K) spread over `size()` processes; this process
// holds `local_workers()` of them, with global indices first_local_worker() onwards. combine()
// takes one buffer per local worker and leaves the combined vector (weighted mean or Adasum,
// see combine.hpp) in every one of them, across all processes. Buffers live in host memory or
// device memory, as memory() says; the trainer checks that its replicas agree.
// Implementations: thread_communicator (K replicas in one process, shared memory),
// mpi_communicator (one worker per rank), and in exec/cuda/ the device communicator (K logical
// workers on one GPU) and the NCCL communicator (one rank per GPU).
// What it leaves out: point-to-point messages, subgroups (a combine spans all K workers) and
// asynchronous (overlapped) collectives.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "exec/combine.hpp"

namespace tauplan::exec {

enum class MemorySpace { Host, Device };

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// "threads", "mpi", "device", "nccl".
  virtual std::string name() const = 0;
  /// This process's rank and the number of processes.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// K, over all processes.
  virtual int workers() const = 0;
  virtual int local_workers() const = 0;
  virtual int first_local_worker() const = 0;
  virtual MemorySpace memory() const = 0;
  /// Combines, over all K workers, one `n`-float buffer per local worker (weights: the
  /// samples behind each); the result is written into every local buffer.
  virtual void combine(const std::vector<float*>& local_buffers,
                       const std::vector<double>& local_weights, std::size_t n,
                       CombineRule rule) = 0;
  /// Returns when every process has reached it.
  virtual void barrier() = 0;
  /// Maximum of `value` over all processes (for the lockstep clock and the stop decision).
  virtual double max_all(double value) = 0;
};

}  // namespace tauplan::exec
