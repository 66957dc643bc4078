// nccl_communicator.cu: one NCCL rank per GPU. Mean: each rank scales its buffer by
// K w_k / sum w (sum from a one-element all-reduce of the weights) and ncclAllReduce with
// ncclAvg. Adasum: ncclAllGather of all K vectors, then the same pairwise tree on every GPU.
// Several GPUs driven by one process use grouped calls (ncclGroupStart/End).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <stdexcept>
#include <string>

#include "exec/cuda/cuda_backend.hpp"
#include "exec/cuda/device_ops.hpp"

namespace tauplan::exec::cuda {
namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw std::runtime_error(std::string("NCCL error in ") + what + ": " + ncclGetErrorString(r));
}

void check(cudaError_t code, const char* what) {
  ops::check_cuda(static_cast<int>(code), what);
}

}  // namespace

bool nccl_compiled() {
  return true;
}

int nccl_version() {
  int v = 0;
  ncclGetVersion(&v);
  return v;
}

NcclId nccl_unique_id() {
  static_assert(sizeof(ncclUniqueId) == sizeof(NcclId), "ncclUniqueId is 128 bytes");
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  NcclId out{};
  std::memcpy(out.data(), &id, sizeof id);
  return out;
}

struct NcclCommunicator::Impl {
  struct Local {
    int device = 0;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    double* scalar = nullptr;   // one double for weight sums and max_all
    float* gathered = nullptr;  // K x n floats for Adasum
    double* weights = nullptr;  // K weights for Adasum
    std::size_t gathered_capacity = 0;
    ops::Combiner combiner;
  };
  std::vector<Local> locals;
};

NcclCommunicator::NcclCommunicator(const NcclId& id, int workers, int first_worker,
                                   std::vector<int> devices, int process_rank, int process_count)
    : workers_(workers),
      first_worker_(first_worker),
      devices_(std::move(devices)),
      process_rank_(process_rank),
      process_count_(process_count),
      impl_(std::make_unique<Impl>()) {
  ncclUniqueId uid;
  std::memcpy(&uid, id.data(), sizeof uid);
  impl_->locals = std::vector<Impl::Local>(devices_.size());  // default-constructed in place
  for (std::size_t l = 0; l < devices_.size(); ++l) {
    Impl::Local& local = impl_->locals[l];
    local.device = devices_[l];
    check(cudaSetDevice(local.device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&local.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    void* p = nullptr;
    check(cudaMalloc(&p, sizeof(double)), "cudaMalloc");
    local.scalar = static_cast<double*>(p);
  }
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t l = 0; l < devices_.size(); ++l) {
    check(cudaSetDevice(impl_->locals[l].device), "cudaSetDevice");
    check_nccl(ncclCommInitRank(&impl_->locals[l].comm, workers_, uid,
                                first_worker_ + static_cast<int>(l)),
               "ncclCommInitRank");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd (init)");
}

NcclCommunicator::~NcclCommunicator() {
  for (Impl::Local& local : impl_->locals) {
    cudaSetDevice(local.device);
    cudaStreamSynchronize(local.stream);
    if (local.comm) ncclCommDestroy(local.comm);
    cudaFree(local.scalar);
    cudaFree(local.gathered);
    cudaFree(local.weights);
    cudaStreamDestroy(local.stream);
  }
}

void NcclCommunicator::combine(const std::vector<float*>& local_buffers,
                               const std::vector<double>& local_weights, std::size_t n,
                               CombineRule rule) {
  auto& locals = impl_->locals;
  assert(local_buffers.size() == locals.size() && local_weights.size() == locals.size());
  // Sum of all weights (one double all-reduce).
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t l = 0; l < locals.size(); ++l) {
    check(cudaSetDevice(locals[l].device), "cudaSetDevice");
    check(cudaMemcpyAsync(locals[l].scalar, &local_weights[l], sizeof(double),
                          cudaMemcpyHostToDevice, locals[l].stream),
          "upload weight");
    check_nccl(ncclAllReduce(locals[l].scalar, locals[l].scalar, 1, ncclDouble, ncclSum,
                             locals[l].comm, locals[l].stream),
               "ncclAllReduce (weights)");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  double total = 0;
  check(cudaSetDevice(locals[0].device), "cudaSetDevice");
  check(cudaMemcpyAsync(&total, locals[0].scalar, sizeof(double), cudaMemcpyDeviceToHost,
                        locals[0].stream),
        "download weight sum");
  check(cudaStreamSynchronize(locals[0].stream), "cudaStreamSynchronize");

  if (rule == CombineRule::Mean) {
    for (std::size_t l = 0; l < locals.size(); ++l) {
      const double s = static_cast<double>(workers_) * local_weights[l] / total;
      if (s != 1.0) {
        check(cudaSetDevice(locals[l].device), "cudaSetDevice");
        ops::scale(local_buffers[l], s, n, local_buffers[l], locals[l].stream);
      }
    }
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (std::size_t l = 0; l < locals.size(); ++l) {
      check(cudaSetDevice(locals[l].device), "cudaSetDevice");
      check_nccl(ncclAllReduce(local_buffers[l], local_buffers[l], n, ncclFloat, ncclAvg,
                               locals[l].comm, locals[l].stream),
                 "ncclAllReduce (avg)");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  } else {
    // Adasum: every GPU gathers all K vectors and all K weights, then runs the same tree.
    const auto k = static_cast<std::size_t>(workers_);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (std::size_t l = 0; l < locals.size(); ++l) {
      Impl::Local& local = locals[l];
      check(cudaSetDevice(local.device), "cudaSetDevice");
      if (local.gathered_capacity < k * n) {
        cudaFree(local.gathered);
        cudaFree(local.weights);
        void* p = nullptr;
        check(cudaMalloc(&p, std::max<std::size_t>(k * n, 1) * sizeof(float)), "cudaMalloc");
        local.gathered = static_cast<float*>(p);
        check(cudaMalloc(&p, k * sizeof(double)), "cudaMalloc");
        local.weights = static_cast<double*>(p);
        local.gathered_capacity = k * n;
      }
      check(cudaMemcpyAsync(local.scalar, &local_weights[l], sizeof(double), cudaMemcpyHostToDevice,
                            local.stream),
            "upload weight");
      check_nccl(
          ncclAllGather(local.scalar, local.weights, 1, ncclDouble, local.comm, local.stream),
          "ncclAllGather (weights)");
      check_nccl(
          ncclAllGather(local_buffers[l], local.gathered, n, ncclFloat, local.comm, local.stream),
          "ncclAllGather");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    std::vector<double> weights(k, 0.0);
    check(cudaSetDevice(locals[0].device), "cudaSetDevice");
    check(cudaMemcpyAsync(weights.data(), locals[0].weights, k * sizeof(double),
                          cudaMemcpyDeviceToHost, locals[0].stream),
          "download weights");
    check(cudaStreamSynchronize(locals[0].stream), "cudaStreamSynchronize");
    for (std::size_t l = 0; l < locals.size(); ++l) {
      Impl::Local& local = locals[l];
      check(cudaSetDevice(local.device), "cudaSetDevice");
      std::vector<const float*> inputs;
      for (std::size_t j = 0; j < k; ++j)
        inputs.push_back(local.gathered + j * n);
      local.combiner.adasum(inputs, weights, n, local_buffers[l], local.stream);
    }
  }
  for (Impl::Local& local : locals) {
    check(cudaSetDevice(local.device), "cudaSetDevice");
    check(cudaStreamSynchronize(local.stream), "cudaStreamSynchronize");
  }
}

double NcclCommunicator::max_all(double value) {
  auto& locals = impl_->locals;
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (Impl::Local& local : locals) {
    check(cudaSetDevice(local.device), "cudaSetDevice");
    check(
        cudaMemcpyAsync(local.scalar, &value, sizeof(double), cudaMemcpyHostToDevice, local.stream),
        "upload value");
    check_nccl(
        ncclAllReduce(local.scalar, local.scalar, 1, ncclDouble, ncclMax, local.comm, local.stream),
        "ncclAllReduce (max)");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  double out = value;
  check(cudaSetDevice(locals[0].device), "cudaSetDevice");
  check(cudaMemcpyAsync(&out, locals[0].scalar, sizeof(double), cudaMemcpyDeviceToHost,
                        locals[0].stream),
        "download value");
  for (Impl::Local& local : locals) {
    check(cudaSetDevice(local.device), "cudaSetDevice");
    check(cudaStreamSynchronize(local.stream), "cudaStreamSynchronize");
  }
  return out;
}

void NcclCommunicator::barrier() {
  max_all(0.0);
}

}  // namespace tauplan::exec::cuda
