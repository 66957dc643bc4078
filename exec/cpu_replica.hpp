// cpu_replica.hpp: a worker's model on the CPU (the Eigen MLP of mlp.hpp) as a Replica.
//
// What it leaves out: thread pinning; each replica computes on whatever core runs its caller.
#pragma once

#include "exec/replica.hpp"

namespace tauplan::exec {

class CpuReplica final : public Replica {
 public:
  explicit CpuReplica(const MlpShape& shape) : mlp_(shape) {}

  MemorySpace memory() const override { return MemorySpace::Host; }
  std::size_t parameter_count() const override { return mlp_.parameter_count(); }
  float* parameters() override { return mlp_.parameters(); }
  float* gradients() override { return mlp_.gradients(); }
  void set_parameters_from_host(const float* host) override;
  void get_parameters_to_host(float* host) const override;
  void get_gradients_to_host(float* host) const override;
  double compute(const float* x, const int* y, int n) override {
    return mlp_.forward_backward(x, y, n);
  }
  double compute_with_ready(const float* x, const int* y, int n,
                            const std::function<void(std::size_t)>& ready) override {
    return mlp_.forward_backward(x, y, n, ready);
  }
  void sgd_step(float lr) override { mlp_.sgd_step(lr); }
  long long correct(const float* x, const int* y, long long n) override {
    return mlp_.correct(x, y, n);
  }

 private:
  Mlp mlp_;
};

/// Factory for the trainer: a CpuReplica for every worker.
ReplicaFactory cpu_replica_factory();

}  // namespace tauplan::exec
