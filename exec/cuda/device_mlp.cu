// device_mlp.cu: the MLP on a GPU with cuBLAS (row-major tensors through column-major GEMMs).
//
// For row-major X (n x in) and W (out x in): Z = X W^T is, column-major, Z^T = W X^T, i.e.
// Sgemm(T, N, out, n, in, W, in, X, in, Z, out); dW = dZ^T X is Sgemm(N, T, in, out, n, X, in,
// dZ, out, dW, in); dX = dZ W is Sgemm(N, N, in, n, out, W, in, dZ, out, dX, in) (notes §3.1).
//
// CUDA graph: cuBLAS is bound to the model's stream and given a fixed workspace
// (cublasSetWorkspace, after cublasSetStream, which resets it), in plain and graph mode alike so
// that both pick the same algorithms; capture_step records run() and the SGD axpy with no host
// synchronisation or allocation inside (ensure() runs before the capture starts).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "exec/cuda/cuda_backend.hpp"
#include "exec/cuda/device_ops.hpp"

namespace tauplan::exec::cuda {
namespace {

void check_blas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error ") +
                             std::to_string(static_cast<int>(status)) + " in " + what);
}

void check(cudaError_t code, const char* what) {
  ops::check_cuda(static_cast<int>(code), what);
}

template <typename T>
T* device_alloc(std::size_t count) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)), "cudaMalloc");
  return static_cast<T*>(p);
}

// cuBLAS's recommended workspace on Hopper (32 MiB; 4 MiB suffices before it).
constexpr std::size_t kBlasWorkspaceBytes = std::size_t{32} << 20;

int as_int(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error(std::string(what) + " too large");
  return static_cast<int>(n);
}

}  // namespace

struct DeviceMlp::Impl {
  MlpShape shape;
  int device = 0;
  std::size_t parameters = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  float* params = nullptr;
  float* grads = nullptr;
  std::vector<std::size_t> weight_offsets, bias_offsets;
  // Workspace for up to `capacity` samples.
  int capacity = 0;
  float* x = nullptr;
  int* y = nullptr;
  std::vector<float*> z, a;  // per layer: pre-activation, activation (hidden layers)
  float* delta = nullptr;
  float* delta_prev = nullptr;
  float* losses = nullptr;
  float* ones = nullptr;
  int* hits = nullptr;
  std::vector<float> host_losses;
  void* blas_workspace = nullptr;
  // The captured step (capture_step), valid for graph_n samples of the current workspace.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
  int graph_n = 0;

  void destroy_graph() {
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (graph) cudaGraphDestroy(graph);
    graph_exec = nullptr;
    graph = nullptr;
    graph_n = 0;
  }

  void use_device() const { check(cudaSetDevice(device), "cudaSetDevice"); }

  void free_workspace() {
    for (float* p : z)
      cudaFree(p);
    for (float* p : a)
      cudaFree(p);
    z.clear();
    a.clear();
    for (void* p :
         {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(delta),
          static_cast<void*>(delta_prev), static_cast<void*>(losses), static_cast<void*>(ones)})
      cudaFree(p);
    x = nullptr;
    y = nullptr;
    delta = delta_prev = losses = ones = nullptr;
    capacity = 0;
  }

  void ensure(int n) {
    if (n <= capacity) return;
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    destroy_graph();  // it holds the old workspace's addresses
    free_workspace();
    const auto rows = static_cast<std::size_t>(n);
    int widest = 0;
    for (std::size_t l = 1; l < shape.widths.size(); ++l)
      widest = std::max(widest, shape.widths[l]);
    x = device_alloc<float>(rows * static_cast<std::size_t>(shape.inputs()));
    y = device_alloc<int>(rows);
    for (int l = 0; l < shape.layers(); ++l) {
      const auto width = static_cast<std::size_t>(shape.widths[static_cast<std::size_t>(l) + 1]);
      z.push_back(device_alloc<float>(rows * width));
      a.push_back(l + 1 < shape.layers() ? device_alloc<float>(rows * width) : nullptr);
    }
    delta = device_alloc<float>(rows * static_cast<std::size_t>(widest));
    delta_prev = device_alloc<float>(rows * static_cast<std::size_t>(widest));
    losses = device_alloc<float>(rows);
    ones = device_alloc<float>(rows);
    ops::fill(ones, 1.f, rows, stream);
    capacity = n;
  }

  // Forward (and backward when `backward`) on device x, y of n samples.
  void run(const float* dx, const int* dy, int n, bool backward) {
    const float one = 1.f, zero = 0.f;
    const int layers = shape.layers();
    const float* input = dx;
    for (int l = 0; l < layers; ++l) {
      const auto li = static_cast<std::size_t>(l);
      const int in_w = shape.widths[li];
      const int out_w = shape.widths[li + 1];
      check_blas(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, out_w, n, in_w, &one,
                             params + weight_offsets[li], in_w, input, in_w, &zero, z[li], out_w),
                 "forward GEMM");
      ops::bias_activation(z[li], a[li], params + bias_offsets[li], n, out_w, stream);
      input = a[li];
    }
    const int classes = shape.classes();
    ops::softmax_cross_entropy(z.back(), dy, backward ? delta : nullptr, losses, n, classes,
                               1.f / static_cast<float>(n), stream);
    if (!backward) return;
    for (int l = layers - 1; l >= 0; --l) {
      const auto li = static_cast<std::size_t>(l);
      const int in_w = shape.widths[li];
      const int out_w = shape.widths[li + 1];
      const float* in = l == 0 ? dx : a[li - 1];
      check_blas(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, in_w, out_w, n, &one, in, in_w, delta,
                             out_w, &zero, grads + weight_offsets[li], in_w),
                 "weight-gradient GEMM");
      check_blas(cublasSgemv(blas, CUBLAS_OP_N, out_w, n, &one, delta, out_w, ones, 1, &zero,
                             grads + bias_offsets[li], 1),
                 "bias-gradient GEMV");
      if (l > 0) {
        check_blas(
            cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, in_w, n, out_w, &one,
                        params + weight_offsets[li], in_w, delta, out_w, &zero, delta_prev, in_w),
            "input-gradient GEMM");
        ops::relu_mask(delta_prev, z[li - 1],
                       static_cast<std::size_t>(n) * static_cast<std::size_t>(in_w), stream);
        std::swap(delta, delta_prev);
      }
    }
  }

  void sgd(float lr) {
    const float alpha = -lr;  // host pointer mode: read now (captured by value in a graph)
    check_blas(cublasSaxpy(blas, static_cast<int>(parameters), &alpha, grads, 1, params, 1),
               "SGD axpy");
  }
};

DeviceMlp::DeviceMlp(const MlpShape& shape, int device) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.shape = shape;
  m.device = device;
  m.parameters = shape.parameters();
  as_int(m.parameters, "parameter count");
  m.use_device();
  check(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_blas(cublasCreate(&m.blas), "cublasCreate");
  check_blas(cublasSetStream(m.blas, m.stream), "cublasSetStream");
  // After cublasSetStream (which resets the workspace to the default pool): a fixed workspace
  // makes the step capturable in a CUDA graph (no allocation inside the capture).
  check(cudaMalloc(&m.blas_workspace, kBlasWorkspaceBytes), "cudaMalloc (cuBLAS workspace)");
  check_blas(cublasSetWorkspace(m.blas, m.blas_workspace, kBlasWorkspaceBytes),
             "cublasSetWorkspace");
  // Plain fp32 (no TF32), so that results compare with the CPU reference.
  check_blas(cublasSetMathMode(m.blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  m.params = device_alloc<float>(m.parameters);
  m.grads = device_alloc<float>(m.parameters);
  check(cudaMemsetAsync(m.grads, 0, m.parameters * sizeof(float), m.stream), "cudaMemset");
  for (int l = 0; l < shape.layers(); ++l) {
    m.weight_offsets.push_back(weight_offset(shape, l));
    m.bias_offsets.push_back(bias_offset(shape, l));
  }
  m.hits = device_alloc<int>(1);
}

DeviceMlp::~DeviceMlp() {
  if (!impl_) return;
  Impl& m = *impl_;
  cudaSetDevice(m.device);
  cudaStreamSynchronize(m.stream);
  m.destroy_graph();
  m.free_workspace();
  cudaFree(m.params);
  cudaFree(m.grads);
  cudaFree(m.hits);
  cublasDestroy(m.blas);
  cudaFree(m.blas_workspace);
  cudaStreamDestroy(m.stream);
}

const MlpShape& DeviceMlp::shape() const {
  return impl_->shape;
}
int DeviceMlp::device() const {
  return impl_->device;
}
std::size_t DeviceMlp::parameter_count() const {
  return impl_->parameters;
}
float* DeviceMlp::device_parameters() {
  return impl_->params;
}
float* DeviceMlp::device_gradients() {
  return impl_->grads;
}
void* DeviceMlp::stream() const {
  return impl_->stream;
}

void DeviceMlp::set_parameters(const float* host) {
  impl_->use_device();
  check(cudaMemcpyAsync(impl_->params, host, impl_->parameters * sizeof(float),
                        cudaMemcpyHostToDevice, impl_->stream),
        "upload parameters");
  synchronize();
}

void DeviceMlp::get_parameters(float* host) const {
  impl_->use_device();
  check(cudaMemcpyAsync(host, impl_->params, impl_->parameters * sizeof(float),
                        cudaMemcpyDeviceToHost, impl_->stream),
        "download parameters");
  synchronize();
}

void DeviceMlp::get_gradients(float* host) const {
  impl_->use_device();
  check(cudaMemcpyAsync(host, impl_->grads, impl_->parameters * sizeof(float),
                        cudaMemcpyDeviceToHost, impl_->stream),
        "download gradients");
  synchronize();
}

void DeviceMlp::upload(const float* host_x, const int* host_y, int n) {
  Impl& m = *impl_;
  m.use_device();
  m.ensure(n);
  const auto rows = static_cast<std::size_t>(n);
  check(cudaMemcpyAsync(m.x, host_x,
                        rows * static_cast<std::size_t>(m.shape.inputs()) * sizeof(float),
                        cudaMemcpyHostToDevice, m.stream),
        "upload batch");
  check(cudaMemcpyAsync(m.y, host_y, rows * sizeof(int), cudaMemcpyHostToDevice, m.stream),
        "upload labels");
}

double DeviceMlp::forward_backward(int n, bool want_loss) {
  Impl& m = *impl_;
  m.use_device();
  m.run(m.x, m.y, n, true);
  if (!want_loss) return 0;
  m.host_losses.resize(static_cast<std::size_t>(n));
  check(cudaMemcpyAsync(m.host_losses.data(), m.losses, static_cast<std::size_t>(n) * sizeof(float),
                        cudaMemcpyDeviceToHost, m.stream),
        "download losses");
  synchronize();
  double sum = 0;
  for (float v : m.host_losses)
    sum += static_cast<double>(v);
  return sum / n;
}

void DeviceMlp::forward_backward_device(const float* device_x, const int* device_y, int n) {
  Impl& m = *impl_;
  m.use_device();
  m.ensure(n);
  m.run(device_x, device_y, n, true);
}

void DeviceMlp::sgd_step(float lr) {
  Impl& m = *impl_;
  m.use_device();
  m.sgd(lr);
}

long long DeviceMlp::correct(const float* host_x, const int* host_y, long long n, int chunk) {
  Impl& m = *impl_;
  m.use_device();
  check(cudaMemsetAsync(m.hits, 0, sizeof(int), m.stream), "cudaMemset");
  const auto stride = static_cast<std::size_t>(m.shape.inputs());
  for (long long start = 0; start < n; start += chunk) {
    const int count = static_cast<int>(std::min<long long>(chunk, n - start));
    const auto offset = static_cast<std::size_t>(start);
    upload(host_x + offset * stride, host_y + offset, count);
    m.run(m.x, m.y, count, false);
    ops::count_hits(m.z.back(), m.y, count, m.shape.classes(), m.hits, m.stream);
  }
  int hits = 0;
  check(cudaMemcpyAsync(&hits, m.hits, sizeof(int), cudaMemcpyDeviceToHost, m.stream),
        "download hits");
  synchronize();
  return hits;
}

void DeviceMlp::synchronize() const {
  impl_->use_device();
  check(cudaStreamSynchronize(impl_->stream), "cudaStreamSynchronize");
}

void DeviceMlp::capture_step(int n, float lr) {
  Impl& m = *impl_;
  if (n < 1) throw std::runtime_error("capture_step: n must be >= 1");
  m.use_device();
  m.ensure(n);  // may allocate: before the capture
  synchronize();
  m.destroy_graph();
  // Global mode: an unsafe call (an allocation, a synchronisation) from any thread during the
  // capture fails instead of being silently left out of the graph.
  check(cudaStreamBeginCapture(m.stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  try {
    m.run(m.x, m.y, n, true);
    m.sgd(lr);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(m.stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    cudaGetLastError();  // clear the capture's error; the exception says what failed
    throw;
  }
  check(cudaStreamEndCapture(m.stream, &m.graph), "cudaStreamEndCapture");
  try {
    check(cudaGraphInstantiate(&m.graph_exec, m.graph, 0), "cudaGraphInstantiate");
    check(cudaGraphUpload(m.graph_exec, m.stream), "cudaGraphUpload");
  } catch (...) {
    m.destroy_graph();
    throw;
  }
  m.graph_n = n;
  synchronize();
}

bool DeviceMlp::has_captured_step() const {
  return impl_->graph_exec != nullptr;
}

void DeviceMlp::replay_step() {
  Impl& m = *impl_;
  if (!m.graph_exec) throw std::runtime_error("replay_step: no captured step (capture_step)");
  m.use_device();
  check(cudaGraphLaunch(m.graph_exec, m.stream), "cudaGraphLaunch");
}

}  // namespace tauplan::exec::cuda
