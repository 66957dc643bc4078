// kernels.cu: element-wise kernels, the fused softmax cross-entropy, hit counting, the K-way
// weighted sum and Adasum's deterministic dot products.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>

#include "exec/cuda/device_ops.hpp"

namespace tauplan::exec::cuda::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxDotBlocks = 1024;

cudaStream_t as_stream(void* s) {
  return static_cast<cudaStream_t>(s);
}

unsigned blocks_for(std::size_t count) {
  const std::size_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(b, 1), 65535u * 8u));
}

__global__ void bias_activation_kernel(float* z, float* a, const float* b, std::size_t count,
                                       int width) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = z[i] + b[i % static_cast<std::size_t>(width)];
    z[i] = v;
    if (a) a[i] = v > 0.f ? v : 0.f;
  }
}

__global__ void relu_mask_kernel(float* da, const float* z, std::size_t count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (!(z[i] > 0.f)) da[i] = 0.f;
}

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp per row.
__global__ void softmax_xent_kernel(const float* logits, const int* labels, float* dlogits,
                                    float* losses, int n, int classes, float scale) {
  const int warps_per_block = blockDim.x / 32;
  const int row = blockIdx.x * warps_per_block + static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= n) return;
  const float* z = logits + static_cast<std::size_t>(row) * classes;
  float m = -FLT_MAX;
  for (int c = lane; c < classes; c += 32)
    m = fmaxf(m, z[c]);
  m = warp_max(m);
  float sum = 0.f;
  for (int c = lane; c < classes; c += 32)
    sum += expf(z[c] - m);
  sum = warp_sum(sum);
  const int label = labels[row];
  if (lane == 0) losses[row] = logf(sum) - (z[label] - m);
  if (dlogits) {
    float* d = dlogits + static_cast<std::size_t>(row) * classes;
    const float inv = 1.f / sum;
    for (int c = lane; c < classes; c += 32)
      d[c] = (expf(z[c] - m) * inv - (c == label ? 1.f : 0.f)) * scale;
  }
}

__global__ void count_hits_kernel(const float* logits, const int* labels, int n, int classes,
                                  int* hits) {
  const int row = blockIdx.x * blockDim.x + static_cast<int>(threadIdx.x);
  if (row >= n) return;
  const float* z = logits + static_cast<std::size_t>(row) * classes;
  int best = 0;
  for (int c = 1; c < classes; ++c)
    if (z[c] > z[best]) best = c;
  if (best == labels[row]) atomicAdd(hits, 1);  // integer: order does not matter
}

__global__ void fill_kernel(float* x, float value, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    x[i] = value;
}

__global__ void weighted_sum_kernel(const float* const* inputs, const double* scales, int k,
                                    std::size_t n, float* out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double acc = 0.0;
    for (int j = 0; j < k; ++j)
      acc += scales[j] * static_cast<double>(inputs[j][i]);
    out[i] = static_cast<float>(acc);
  }
}

__global__ void scale_kernel(const float* in, double s, std::size_t n, float* out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(s * static_cast<double>(in[i]));
}

// Pass 1: each block reduces a fixed slice of (a.b, a.a, b.b) into partial[3 * block].
__global__ void dot3_partial_kernel(const float* a, const float* b, std::size_t n,
                                    double* partial) {
  __shared__ double sab[kThreads], saa[kThreads], sbb[kThreads];
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double x = a[i], y = b[i];
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  sab[threadIdx.x] = ab;
  saa[threadIdx.x] = aa;
  sbb[threadIdx.x] = bb;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      sab[threadIdx.x] += sab[threadIdx.x + stride];
      saa[threadIdx.x] += saa[threadIdx.x + stride];
      sbb[threadIdx.x] += sbb[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[3 * blockIdx.x] = sab[0];
    partial[3 * blockIdx.x + 1] = saa[0];
    partial[3 * blockIdx.x + 2] = sbb[0];
  }
}

// Pass 2: one thread sums the partials in block order (at most kMaxDotBlocks of them).
__global__ void dot3_final_kernel(double* partial, int blocks, double* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < blocks; ++i) {
    ab += partial[3 * i];
    aa += partial[3 * i + 1];
    bb += partial[3 * i + 2];
  }
  out[0] = ab;
  out[1] = aa;
  out[2] = bb;
}

__global__ void adasum_apply_kernel(const float* a, const float* b, std::size_t n,
                                    const double* dots, float* out) {
  const double ab = dots[0], aa = dots[1], bb = dots[2];
  const double ca = aa > 0 ? 1.0 - ab / (2.0 * aa) : 1.0;
  const double cb = bb > 0 ? 1.0 - ab / (2.0 * bb) : 1.0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(ca * static_cast<double>(a[i]) + cb * static_cast<double>(b[i]));
}

int dot_blocks(std::size_t n) {
  return static_cast<int>(std::min<std::size_t>(
      kMaxDotBlocks, std::max<std::size_t>(1, (n + kThreads - 1) / kThreads)));
}

void check_launch(const char* what) {
  check_cuda(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace

void check_cuda(int code, const char* what) {
  if (code != static_cast<int>(cudaSuccess))
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " +
                             cudaGetErrorString(static_cast<cudaError_t>(code)));
}

void bias_activation(float* z, float* a, const float* b, int n, int width, void* stream) {
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(width);
  bias_activation_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(z, a, b, count,
                                                                                width);
  check_launch("bias_activation");
}

void relu_mask(float* da, const float* z, std::size_t count, void* stream) {
  relu_mask_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(da, z, count);
  check_launch("relu_mask");
}

void softmax_cross_entropy(const float* logits, const int* labels, float* dlogits, float* losses,
                           int n, int classes, float scale, void* stream) {
  const int warps = kThreads / 32;
  const auto blocks = static_cast<unsigned>((n + warps - 1) / warps);
  softmax_xent_kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(logits, labels, dlogits, losses,
                                                                  n, classes, scale);
  check_launch("softmax_cross_entropy");
}

void count_hits(const float* logits, const int* labels, int n, int classes, int* hits,
                void* stream) {
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  count_hits_kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(logits, labels, n, classes, hits);
  check_launch("count_hits");
}

void fill(float* x, float value, std::size_t n, void* stream) {
  fill_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(x, value, n);
  check_launch("fill");
}

void weighted_sum(const float* const* inputs, const double* scales, int k, std::size_t n,
                  float* out, void* stream) {
  weighted_sum_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(inputs, scales, k, n, out);
  check_launch("weighted_sum");
}

void scale(const float* in, double s, std::size_t n, float* out, void* stream) {
  scale_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(in, s, n, out);
  check_launch("scale");
}

std::size_t adasum_scratch_doubles(std::size_t n) {
  return 3 * static_cast<std::size_t>(dot_blocks(n)) + 3;
}

void adasum_pair(const float* a, const float* b, std::size_t n, float* out, double* scratch,
                 void* stream) {
  const int blocks = dot_blocks(n);
  double* dots = scratch + 3 * static_cast<std::size_t>(blocks);
  dot3_partial_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, as_stream(stream)>>>(a, b, n,
                                                                                         scratch);
  check_launch("adasum dot products");
  dot3_final_kernel<<<1, 1, 0, as_stream(stream)>>>(scratch, blocks, dots);
  check_launch("adasum dot products (final)");
  adasum_apply_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(a, b, n, dots, out);
  check_launch("adasum apply");
}

}  // namespace tauplan::exec::cuda::ops
