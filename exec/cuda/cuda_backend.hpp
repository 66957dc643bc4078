// cuda_backend.hpp: the CUDA backend's plain C++ interface (no CUDA header needed to use it).
//
// DeviceMlp is the MLP of mlp.hpp on a GPU: the same flat parameter and gradient layout, cuBLAS
// SGEMMs in fp32 (default math mode, no TF32) with the row-major trick (notes §3.1), kernels for
// bias+ReLU, the ReLU mask, a fused softmax cross-entropy, bias gradients by a GEMV with a ones
// vector, and SGD as one cublasSaxpy over the whole vector. Every op runs on the model's own
// stream with its own cuBLAS handle. CudaReplica wraps it as a trainer Replica.
// DeviceCommunicator: K logical workers on one GPU, combined on the device (weighted mean in a
// fixed order, or Adasum with deterministic two-pass dot products). NcclCommunicator: one GPU
// per worker, all-reduce with ncclAvg (one process per GPU under MPI, or one process driving
// several GPUs); NCCL refuses two ranks on one GPU (notes §1.1), hence the device communicator.
// A whole training step (forward, backward, SGD on the uploaded batch) can be captured once as
// a CUDA graph and replayed (capture_step, replay_step): one launch instead of ~20, the same
// kernels with the same arguments and cuBLAS workspace, so the same parameters (bench_step
// --graph checks N replays against N plain steps).
// What it leaves out: mixed precision, green-context SM partitioning (slower GPUs are
// emulated by delay injection in the trainer), overlap of NCCL with compute.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "exec/communicator.hpp"
#include "exec/mlp.hpp"
#include "exec/replica.hpp"

namespace tauplan::exec::cuda {

/// Usable CUDA devices: 0 when there is no driver or no device (`why` then says which).
int usable_devices(std::string* why = nullptr);
/// "NVIDIA H200 (sm_90, 132 SMs)".
std::string device_description(int device);

class DeviceMlp {
 public:
  /// Allocates parameters, gradients and workspace on `device`; initialises nothing.
  DeviceMlp(const MlpShape& shape, int device);
  ~DeviceMlp();
  DeviceMlp(const DeviceMlp&) = delete;
  DeviceMlp& operator=(const DeviceMlp&) = delete;

  const MlpShape& shape() const;
  int device() const;
  std::size_t parameter_count() const;
  float* device_parameters();
  float* device_gradients();
  void set_parameters(const float* host);
  void get_parameters(float* host) const;
  void get_gradients(float* host) const;

  /// Copies a host batch to the device (workspace grows as needed).
  void upload(const float* host_x, const int* host_y, int n);
  /// Forward and backward on the uploaded batch; asynchronous unless `want_loss`, in which
  /// case it waits and returns the mean loss (else returns 0).
  double forward_backward(int n, bool want_loss);
  /// Forward and backward on device-resident x and y (for benchmarks).
  void forward_backward_device(const float* device_x, const int* device_y, int n);
  /// parameters -= lr * gradients (asynchronous).
  void sgd_step(float lr);
  /// Correct predictions over host samples (chunks of `chunk`); waits.
  long long correct(const float* host_x, const int* host_y, long long n, int chunk = 4096);
  /// Waits for the model's stream.
  void synchronize() const;

  /// Captures one training step on the uploaded batch (forward and backward of n samples read
  /// from the upload buffer, then parameters -= lr * gradients) as a CUDA graph on the model's
  /// stream. Call after at least one plain step at this n (kernels loaded, cuBLAS heuristics
  /// settled); waits. The graph holds the workspace's addresses: a later upload of more than
  /// the current capacity reallocates it and drops the graph (replay_step then throws).
  void capture_step(int n, float lr);
  /// True while a captured step is valid.
  bool has_captured_step() const;
  /// Replays the captured step (asynchronous): reads whatever batch the upload buffer holds.
  void replay_step();
  /// The model's cudaStream_t, as a void*.
  void* stream() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class CudaReplica final : public Replica {
 public:
  CudaReplica(const MlpShape& shape, int device) : mlp_(shape, device) {}
  MemorySpace memory() const override { return MemorySpace::Device; }
  std::size_t parameter_count() const override { return mlp_.parameter_count(); }
  float* parameters() override { return mlp_.device_parameters(); }
  float* gradients() override { return mlp_.device_gradients(); }
  void set_parameters_from_host(const float* host) override { mlp_.set_parameters(host); }
  void get_parameters_to_host(float* host) const override { mlp_.get_parameters(host); }
  void get_gradients_to_host(float* host) const override { mlp_.get_gradients(host); }
  /// Uploads, computes and waits (so the caller's clock measures the step).
  double compute(const float* x, const int* y, int n) override;
  /// SGD step, waited for.
  void sgd_step(float lr) override;
  long long correct(const float* x, const int* y, long long n) override {
    return mlp_.correct(x, y, n);
  }
  DeviceMlp& mlp() { return mlp_; }

 private:
  DeviceMlp mlp_;
};

/// Replicas for the trainer: worker k on device device_of[k] (device_of empty: device 0).
ReplicaFactory cuda_replica_factory(std::vector<int> device_of);

/// K logical workers on one GPU, combined on that GPU.
class DeviceCommunicator final : public Communicator {
 public:
  DeviceCommunicator(int workers, int device);
  ~DeviceCommunicator() override;
  std::string name() const override { return "device"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int workers() const override { return workers_; }
  int local_workers() const override { return workers_; }
  int first_local_worker() const override { return 0; }
  MemorySpace memory() const override { return MemorySpace::Device; }
  void combine(const std::vector<float*>& local_buffers, const std::vector<double>& local_weights,
               std::size_t n, CombineRule rule) override;
  void barrier() override;
  double max_all(double value) override { return value; }

 private:
  struct Impl;
  int workers_;
  std::unique_ptr<Impl> impl_;
};

/// 128 bytes naming an NCCL communicator (ncclUniqueId), made by one process and shared.
using NcclId = std::array<char, 128>;
/// True when built with NCCL.
bool nccl_compiled();
/// A fresh id (rank 0 makes it, MPI broadcasts it).
NcclId nccl_unique_id();
/// NCCL's version code (e.g. 22809), 0 without NCCL.
int nccl_version();

/// One NCCL rank per GPU. This process drives `devices.size()` of them: global workers
/// first_worker .. first_worker + devices.size() - 1 of `workers`. rank/size are the
/// process's (MPI) rank and process count, used only to pick the reporting process.
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const NcclId& id, int workers, int first_worker, std::vector<int> devices,
                   int process_rank, int process_count);
  ~NcclCommunicator() override;
  std::string name() const override { return "nccl"; }
  int rank() const override { return process_rank_; }
  int size() const override { return process_count_; }
  int workers() const override { return workers_; }
  int local_workers() const override { return static_cast<int>(devices_.size()); }
  int first_local_worker() const override { return first_worker_; }
  MemorySpace memory() const override { return MemorySpace::Device; }
  void combine(const std::vector<float*>& local_buffers, const std::vector<double>& local_weights,
               std::size_t n, CombineRule rule) override;
  void barrier() override;
  double max_all(double value) override;

 private:
  struct Impl;
  int workers_;
  int first_worker_;
  std::vector<int> devices_;
  int process_rank_;
  int process_count_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tauplan::exec::cuda
