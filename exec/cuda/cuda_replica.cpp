// cuda_replica.cpp: the GPU model as a trainer Replica, and its factory.
//
// compute() uploads the host batch, runs forward and backward and waits, so the trainer's
// clock measures the whole step (copy included, like a data loader's); the loss is read back
// for the accuracy curve's training loss. What it leaves out: pinned staging buffers and
// prefetching the next batch during the current step.
#include "exec/cuda/cuda_backend.hpp"

namespace tauplan::exec::cuda {

double CudaReplica::compute(const float* x, const int* y, int n) {
  mlp_.upload(x, y, n);
  return mlp_.forward_backward(n, true);  // waits
}

void CudaReplica::sgd_step(float lr) {
  mlp_.sgd_step(lr);
  mlp_.synchronize();
}

ReplicaFactory cuda_replica_factory(std::vector<int> device_of) {
  return [device_of](const MlpShape& shape, int worker) -> std::unique_ptr<Replica> {
    const int device = worker >= 0 && static_cast<std::size_t>(worker) < device_of.size()
                           ? device_of[static_cast<std::size_t>(worker)]
                           : 0;
    return std::make_unique<CudaReplica>(shape, device);
  };
}

}  // namespace tauplan::exec::cuda
