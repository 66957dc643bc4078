// nccl_stub.cpp: the NCCL communicator's entry points in a CUDA build without NCCL.
//
// Asking for NCCL is then a clear error rather than a link error. What it leaves out:
// everything NCCL does (the device communicator still serves K workers on one GPU).
#include <stdexcept>

#include "exec/cuda/cuda_backend.hpp"

namespace tauplan::exec::cuda {

bool nccl_compiled() {
  return false;
}
int nccl_version() {
  return 0;
}
NcclId nccl_unique_id() {
  throw std::runtime_error("tauplan was built without NCCL");
}

struct NcclCommunicator::Impl {};

NcclCommunicator::NcclCommunicator(const NcclId& /*id*/, int workers, int first_worker,
                                   std::vector<int> devices, int process_rank, int process_count)
    : workers_(workers),
      first_worker_(first_worker),
      devices_(std::move(devices)),
      process_rank_(process_rank),
      process_count_(process_count) {
  throw std::runtime_error("tauplan was built without NCCL");
}
NcclCommunicator::~NcclCommunicator() = default;
void NcclCommunicator::combine(const std::vector<float*>& /*local_buffers*/,
                               const std::vector<double>& /*local_weights*/, std::size_t /*n*/,
                               CombineRule /*rule*/) {}
void NcclCommunicator::barrier() {}
double NcclCommunicator::max_all(double value) {
  return value;
}

}  // namespace tauplan::exec::cuda
