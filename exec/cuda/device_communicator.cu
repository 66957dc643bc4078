// device_communicator.cu: K logical workers on one GPU, combined by kernels on that GPU, and the
// Combiner both GPU communicators use.
#include <cuda_runtime.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <utility>

#include "exec/cuda/cuda_backend.hpp"
#include "exec/cuda/device_ops.hpp"

namespace tauplan::exec::cuda {
namespace ops {
namespace {

void check(cudaError_t code, const char* what) {
  check_cuda(static_cast<int>(code), what);
}

double weight_total(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights)
    total += w;  // index order, as combine.cpp
  if (!(total > 0)) throw std::runtime_error("combine: weights must have a positive sum");
  return total;
}

}  // namespace

Combiner::~Combiner() {
  cudaFree(pointers_);
  cudaFree(scales_);
  cudaFree(work_);
  cudaFree(scratch_);
}

void Combiner::reserve(std::size_t k, std::size_t n) {
  if (k > k_capacity_) {
    cudaFree(pointers_);
    cudaFree(scales_);
    void* p = nullptr;
    check(cudaMalloc(&p, k * sizeof(float*)), "cudaMalloc");
    pointers_ = static_cast<const float**>(p);
    check(cudaMalloc(&p, k * sizeof(double)), "cudaMalloc");
    scales_ = static_cast<double*>(p);
    k_capacity_ = k;
  }
  const std::size_t scratch = adasum_scratch_doubles(n);
  if (scratch > scratch_capacity_) {
    cudaFree(scratch_);
    void* p = nullptr;
    check(cudaMalloc(&p, scratch * sizeof(double)), "cudaMalloc");
    scratch_ = static_cast<double*>(p);
    scratch_capacity_ = scratch;
  }
}

void Combiner::mean(const std::vector<const float*>& inputs, const std::vector<double>& weights,
                    std::size_t n, float* out, void* stream) {
  assert(!inputs.empty() && inputs.size() == weights.size());
  reserve(inputs.size(), n);
  const double total = weight_total(weights);
  std::vector<double> scales(weights.size());
  for (std::size_t k = 0; k < weights.size(); ++k)
    scales[k] = weights[k] / total;
  const auto s = static_cast<cudaStream_t>(stream);
  check(cudaMemcpyAsync(pointers_, inputs.data(), inputs.size() * sizeof(float*),
                        cudaMemcpyHostToDevice, s),
        "upload pointers");
  check(cudaMemcpyAsync(scales_, scales.data(), scales.size() * sizeof(double),
                        cudaMemcpyHostToDevice, s),
        "upload scales");
  weighted_sum(pointers_, scales_, static_cast<int>(inputs.size()), n, out, stream);
  // The host vectors above must outlive the copies.
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

void Combiner::adasum(const std::vector<const float*>& inputs, const std::vector<double>& weights,
                      std::size_t n, float* out, void* stream) {
  assert(!inputs.empty() && inputs.size() == weights.size());
  const std::size_t k = inputs.size();
  reserve(k, n);
  if (k * n > work_capacity_) {
    cudaFree(work_);
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<std::size_t>(k * n, 1) * sizeof(float)), "cudaMalloc");
    work_ = static_cast<float*>(p);
    work_capacity_ = k * n;
  }
  const double total = weight_total(weights);
  std::vector<float*> level;
  for (std::size_t j = 0; j < k; ++j) {
    float* copy = work_ + j * n;
    scale(inputs[j], static_cast<double>(k) * weights[j] / total, n, copy, stream);
    level.push_back(copy);
  }
  while (level.size() > 1) {
    std::vector<float*> next;
    for (std::size_t j = 0; j + 1 < level.size(); j += 2) {
      adasum_pair(level[j], level[j + 1], n, level[j], scratch_, stream);
      next.push_back(level[j]);
    }
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = std::move(next);
  }
  check(cudaMemcpyAsync(out, level.front(), n * sizeof(float), cudaMemcpyDeviceToDevice,
                        static_cast<cudaStream_t>(stream)),
        "copy result");
}

}  // namespace ops

struct DeviceCommunicator::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;
  ops::Combiner combiner;
};

DeviceCommunicator::DeviceCommunicator(int workers, int device)
    : workers_(workers), impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  ops::check_cuda(static_cast<int>(cudaSetDevice(device)), "cudaSetDevice");
  ops::check_cuda(
      static_cast<int>(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking)),
      "cudaStreamCreate");
}

DeviceCommunicator::~DeviceCommunicator() {
  cudaSetDevice(impl_->device);
  cudaStreamSynchronize(impl_->stream);
  cudaStreamDestroy(impl_->stream);  // the combiner's memory is freed with impl_ (same device)
}

void DeviceCommunicator::combine(const std::vector<float*>& local_buffers,
                                 const std::vector<double>& local_weights, std::size_t n,
                                 CombineRule rule) {
  assert(static_cast<int>(local_buffers.size()) == workers_);
  Impl& m = *impl_;
  ops::check_cuda(static_cast<int>(cudaSetDevice(m.device)), "cudaSetDevice");
  if (workers_ == 1 && rule == CombineRule::Mean) return;
  const std::vector<const float*> inputs(local_buffers.begin(), local_buffers.end());
  if (rule == CombineRule::Mean)
    m.combiner.mean(inputs, local_weights, n, local_buffers.front(), m.stream);
  else
    m.combiner.adasum(inputs, local_weights, n, local_buffers.front(), m.stream);
  for (std::size_t k = 1; k < local_buffers.size(); ++k)
    ops::check_cuda(
        static_cast<int>(cudaMemcpyAsync(local_buffers[k], local_buffers.front(), n * sizeof(float),
                                         cudaMemcpyDeviceToDevice, m.stream)),
        "broadcast result");
  ops::check_cuda(static_cast<int>(cudaStreamSynchronize(m.stream)), "cudaStreamSynchronize");
}

void DeviceCommunicator::barrier() {
  ops::check_cuda(static_cast<int>(cudaSetDevice(impl_->device)), "cudaSetDevice");
  ops::check_cuda(static_cast<int>(cudaDeviceSynchronize()), "cudaDeviceSynchronize");
}

}  // namespace tauplan::exec::cuda
