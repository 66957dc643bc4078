// replica.hpp: one worker's copy of the model, whatever hardware it computes on.
//
// A replica owns a flat parameter vector and a flat gradient vector (host or device memory, as
// memory() says; a communicator of the same memory space combines them), computes the gradient
// of the mean loss over a batch handed to it in host memory, applies an SGD step, and counts
// correct predictions. compute() returns only when the work is done, so the caller can time it.
// Implementations: CpuReplica (Eigen, cpu_replica.hpp) and the CUDA replica (exec/cuda/).
// What it leaves out: optimiser state (plain SGD), mixed precision.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "exec/communicator.hpp"
#include "exec/mlp.hpp"

namespace tauplan::exec {

class Replica {
 public:
  virtual ~Replica() = default;
  Replica() = default;
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  virtual MemorySpace memory() const = 0;
  virtual std::size_t parameter_count() const = 0;
  /// Flat buffers in memory(): what a communicator combines.
  virtual float* parameters() = 0;
  virtual float* gradients() = 0;
  virtual void set_parameters_from_host(const float* host) = 0;
  virtual void get_parameters_to_host(float* host) const = 0;
  virtual void get_gradients_to_host(float* host) const = 0;
  /// Forward and backward on `n` samples (host x: n x inputs, y: labels); the gradient of the
  /// mean loss over them lands in gradients(). Returns the mean loss.
  virtual double compute(const float* x, const int* y, int n) = 0;
  /// compute(), calling `ready(first)` as the backward pass goes with the index from which
  /// gradients() is final (lower each time, 0 last), so that a second thread may combine that
  /// part while the pass goes on (bucket_stream.hpp). The default calls ready(0) once compute()
  /// has returned: correct, with nothing to overlap.
  virtual double compute_with_ready(const float* x, const int* y, int n,
                                    const std::function<void(std::size_t)>& ready) {
    const double loss = compute(x, y, n);
    ready(0);
    return loss;
  }
  /// parameters -= lr * gradients.
  virtual void sgd_step(float lr) = 0;
  /// Correct predictions over `n` samples (host memory).
  virtual long long correct(const float* x, const int* y, long long n) = 0;
};

/// Makes the replica of worker `worker` (global index), e.g. on the right device.
using ReplicaFactory = std::function<std::unique_ptr<Replica>(const MlpShape&, int worker)>;

}  // namespace tauplan::exec
