// device_transformer.cu: the decoder block stack on one GPU (device_transformer.hpp): cuBLAS
// bf16 GEMMs with fp32 accumulation, fp32 row-reduction kernels (norms, softmax,
// cross-entropy), element-wise kernels, AdamW.
//
// Row-major GEMMs through column-major cuBLAS: a row-major C [M x N] = op(A) [M x K] op(B)
// [K x N] is, read column-major, C^T = op(B)^T op(A)^T, i.e. cublasGemmEx(opB, opA, N, M, K,
// B, ldb, A, lda, C, ldc) with the row-major leading dimensions (row strides) and the same
// transpose flags (a row-major stored matrix read column-major is its transpose). With that,
// for X [T x in], W [in x out] (row-major, y = x W):
//   forward        Y  [T x out] = X W        gemm(N, N, T, out, in)
//   input grad     dX [T x in]  = dY W^T     gemm(N, T, T, in, out)
//   weight grad    dW [in x out] = X^T dY    gemm(T, N, in, out, T)
// Buffers, all row-major, T = micro_batch * sequence tokens (row b * s + t), qw / kvw the local
// query / key-value widths, f the local feed-forward width, BH = micro_batch * local_heads:
//   resid[l]     fp32 [T x h]  input of layer l (resid[L]: output of the stack)
//   x1           fp32 [T x h]  after the attention residual
//   xn1, xn2     bf16 [T x h]  norm outputs (GEMM inputs), with per-row mean and 1/std (fp32)
//   q, attn      bf16 [T x qw] (head j: columns j d .. j d + d - 1); k, v bf16 [T x kvw]
//   p            bf16 [BH x s x s] scores, then probabilities (in place), then dS (in place)
//   gate, up, act bf16 [T x f]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cuda/device_transformer.hpp"

namespace tauplan::exec::cuda {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 256;          // every kernel's block size (a multiple of 32)
constexpr int kNormRowsPerBlock = 64;  // rows per block of the gain-gradient column sums

void check(cudaError_t code, const char* what) {
  if (code != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " +
                             cudaGetErrorString(code));
}

void check_blas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error ") +
                             std::to_string(static_cast<int>(status)) + " in " + what);
}

unsigned blocks_for(std::size_t count) {
  const std::size_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(b, 1), 65535u * 8u));
}

unsigned row_blocks(std::size_t rows, const char* what) {
  if (rows < 1 || rows > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error(std::string(what) + ": row count out of range");
  return static_cast<unsigned>(rows);
}

// ------------------------------------------------------------------------ device helpers

__device__ __forceinline__ float to_f(bf16 v) {
  return __bfloat162float(v);
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the block, returned to every thread. Safe to call repeatedly in one kernel (the
// leading barrier keeps a call's writes from overtaking the previous call's reads).
__device__ float block_sum(float v) {
  __shared__ float shared[32];
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? shared[lane] : 0.f;
    v = warp_sum(v);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

// block_sum of two values at once (one pair of barriers instead of two): the same sums.
__device__ float2 block_sum2(float a, float b) {
  __shared__ float2 shared2[32];
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  a = warp_sum(a);
  b = warp_sum(b);
  __syncthreads();
  if (lane == 0) shared2[warp] = make_float2(a, b);
  __syncthreads();
  if (warp == 0) {
    float2 v = lane < static_cast<int>(blockDim.x >> 5) ? shared2[lane] : make_float2(0.f, 0.f);
    v.x = warp_sum(v.x);
    v.y = warp_sum(v.y);
    if (lane == 0) shared2[0] = v;
  }
  __syncthreads();
  return shared2[0];
}

__device__ float block_max(float v) {
  __shared__ float shared[32];
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? shared[lane] : -INFINITY;
    v = warp_max(v);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

#define GRID_STRIDE(i, n)                                                                        \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

// ------------------------------------------------------------------------ element-wise

__global__ void to_bf16_kernel(const float* in, bf16* out, std::size_t n) {
  GRID_STRIDE(i, n) out[i] = __float2bfloat16(in[i]);
}

__global__ void fill_kernel(float* x, float value, std::size_t n) {
  GRID_STRIDE(i, n) x[i] = value;
}

// Uniform in [-a, a) from a hash of (seed, index): no state, any grid.
__global__ void fill_uniform_kernel(float* x, std::size_t n, unsigned long long seed, float a) {
  GRID_STRIDE(i, n) {
    unsigned long long z =
        seed + (static_cast<unsigned long long>(i) + 1ull) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    x[i] = (2.f * u - 1.f) * a;
  }
}

// x[r, c] = token_embedding[inputs[r], c] + position_embedding[r % s, c].
__global__ void embedding_forward_kernel(const float* tok, const float* pos, const int* inputs,
                                         float* x, std::size_t count, int s, int h) {
  GRID_STRIDE(i, count) {
    const std::size_t r = i / static_cast<std::size_t>(h);
    const std::size_t c = i % static_cast<std::size_t>(h);
    const std::size_t t = r % static_cast<std::size_t>(s);
    x[i] = tok[static_cast<std::size_t>(inputs[r]) * h + c] + pos[t * h + c];
  }
}

// Scatter-add of the input gradient into the embedding gradients (fp32 atomics: a token
// appears in many rows, a position in micro_batch rows).
__global__ void embedding_backward_kernel(const float* dx, const int* inputs, float* dtok,
                                          float* dpos, std::size_t count, int s, int h) {
  GRID_STRIDE(i, count) {
    const std::size_t r = i / static_cast<std::size_t>(h);
    const std::size_t c = i % static_cast<std::size_t>(h);
    const std::size_t t = r % static_cast<std::size_t>(s);
    const float g = dx[i];
    atomicAdd(dtok + static_cast<std::size_t>(inputs[r]) * h + c, g);
    atomicAdd(dpos + t * h + c, g);
  }
}

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

// GELU, tanh approximation: a = u/2 (1 + tanh(c (u + 0.044715 u^3))).
__global__ void gelu_forward_kernel(const bf16* u, bf16* a, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float x = to_f(u[i]);
    const float th = tanhf(kGeluC * (x + kGeluA * x * x * x));
    a[i] = __float2bfloat16(0.5f * x * (1.f + th));
  }
}

// da/du = (1 + th)/2 + u/2 (1 - th^2) c (1 + 3 * 0.044715 u^2).
__global__ void gelu_backward_kernel(const bf16* u, const bf16* da, bf16* du, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float x = to_f(u[i]);
    const float th = tanhf(kGeluC * (x + kGeluA * x * x * x));
    const float d =
        0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * kGeluC * (1.f + 3.f * kGeluA * x * x);
    du[i] = __float2bfloat16(to_f(da[i]) * d);
  }
}

__device__ __forceinline__ float sigmoid(float x) {
  return 1.f / (1.f + expf(-x));
}

// SwiGLU: a = silu(g) u, silu(g) = g sigmoid(g).
__global__ void swiglu_forward_kernel(const bf16* g, const bf16* u, bf16* a, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float x = to_f(g[i]);
    a[i] = __float2bfloat16(x * sigmoid(x) * to_f(u[i]));
  }
}

// du = da silu(g); dg = da u silu'(g), silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g))).
__global__ void swiglu_backward_kernel(const bf16* g, const bf16* u, const bf16* da, bf16* dg,
                                       bf16* du, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float x = to_f(g[i]);
    const float sg = sigmoid(x);
    const float d = to_f(da[i]);
    du[i] = __float2bfloat16(d * x * sg);
    dg[i] = __float2bfloat16(d * to_f(u[i]) * sg * (1.f + x * (1.f - sg)));
  }
}

// ------------------------------------------------------------------------ row reductions

// One block per row of h: LayerNorm y = (x - mean) / sqrt(var + eps) * gain + bias, or RMSNorm
// y = x / sqrt(mean(x^2) + eps) * gain (mean taken as 0). var is the biased (1/h) variance.
__global__ void norm_forward_kernel(const float* x, const float* gain, const float* bias, bf16* y,
                                    float* mean_out, float* rstd_out, int h, float eps,
                                    bool layer_norm) {
  const std::size_t row = blockIdx.x;
  const float* xr = x + row * h;
  bf16* yr = y + row * h;
  float mean = 0.f;
  if (layer_norm) {
    float sum = 0.f;
    for (int c = static_cast<int>(threadIdx.x); c < h; c += blockDim.x)
      sum += xr[c];
    mean = block_sum(sum) / static_cast<float>(h);
  }
  float sq = 0.f;
  for (int c = static_cast<int>(threadIdx.x); c < h; c += blockDim.x) {
    const float d = xr[c] - mean;
    sq += d * d;
  }
  const float rstd = 1.f / sqrtf(block_sum(sq) / static_cast<float>(h) + eps);
  for (int c = static_cast<int>(threadIdx.x); c < h; c += blockDim.x) {
    float v = (xr[c] - mean) * rstd * gain[c];
    if (bias) v += bias[c];
    yr[c] = __float2bfloat16(v);
  }
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// One block per row: the input gradient of the norm, plus the residual gradient `res` (may be
// null = 0; may alias `dx`). With xhat = (x - mean) rstd and dyg = dy * gain:
//   LayerNorm dx = rstd (dyg - mean(dyg) - xhat mean(dyg xhat))
//   RMSNorm   dx = rstd (dyg - xhat mean(dyg xhat))
__global__ void norm_backward_kernel(const float* x, const float* gain, const float* mean,
                                     const float* rstd, const float* dy, const float* res,
                                     float* dx, int h, bool layer_norm) {
  const std::size_t row = blockIdx.x;
  const float* xr = x + row * h;
  const float* dyr = dy + row * h;
  const float mu = mean[row];
  const float rs = rstd[row];
  float s1 = 0.f, s2 = 0.f;
  for (int c = static_cast<int>(threadIdx.x); c < h; c += blockDim.x) {
    const float dyg = dyr[c] * gain[c];
    s1 += dyg;
    s2 += dyg * (xr[c] - mu) * rs;
  }
  const float m1 = layer_norm ? block_sum(s1) / static_cast<float>(h) : 0.f;
  const float m2 = block_sum(s2) / static_cast<float>(h);
  const float* resr = res ? res + row * h : nullptr;
  float* dxr = dx + row * h;
  for (int c = static_cast<int>(threadIdx.x); c < h; c += blockDim.x) {
    const float xhat = (xr[c] - mu) * rs;
    const float g = rs * (dyr[c] * gain[c] - m1 - xhat * m2);
    dxr[c] = (resr ? resr[c] : 0.f) + g;
  }
}

// Gain (and bias) gradients: column sums of dy * xhat (and dy) over the rows. Block (cx, ry)
// sums column cx * 256 + tid over kNormRowsPerBlock rows and adds it atomically.
__global__ void norm_params_kernel(const float* x, const float* mean, const float* rstd,
                                   const float* dy, float* dgain, float* dbias, int rows, int h) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= h) return;
  const int r0 = static_cast<int>(blockIdx.y) * kNormRowsPerBlock;
  const int r1 = min(rows, r0 + kNormRowsPerBlock);
  float sg = 0.f, sb = 0.f;
  for (int r = r0; r < r1; ++r) {
    const std::size_t i = static_cast<std::size_t>(r) * h + c;
    sg += dy[i] * (x[i] - mean[r]) * rstd[r];
    sb += dy[i];
  }
  atomicAdd(dgain + c, sg);
  if (dbias) atomicAdd(dbias + c, sb);
}

// One block per score row (head bh, query t = row % s), in place: scores (already scaled) ->
// causal softmax probabilities; keys c > t get exactly 0.
__global__ void causal_softmax_kernel(bf16* sp, int s) {
  const std::size_t row = blockIdx.x;
  const int t = static_cast<int>(row % static_cast<std::size_t>(s));
  bf16* r = sp + row * static_cast<std::size_t>(s);
  float m = -INFINITY;
  for (int c = static_cast<int>(threadIdx.x); c <= t; c += blockDim.x)
    m = fmaxf(m, to_f(r[c]));
  m = block_max(m);
  float sum = 0.f;
  for (int c = static_cast<int>(threadIdx.x); c <= t; c += blockDim.x)
    sum += expf(to_f(r[c]) - m);
  const float inv = 1.f / block_sum(sum);
  for (int c = static_cast<int>(threadIdx.x); c < s; c += blockDim.x)
    r[c] = __float2bfloat16(c <= t ? expf(to_f(r[c]) - m) * inv : 0.f);
}

// One block per row, in place over P: dS = P (dP - sum_c P dP) (the softmax Jacobian); the
// masked keys have P = 0, hence dS = 0.
__global__ void softmax_backward_kernel(bf16* p_ds, const float* dp, int s) {
  const std::size_t row = blockIdx.x;
  const int t = static_cast<int>(row % static_cast<std::size_t>(s));
  bf16* pr = p_ds + row * static_cast<std::size_t>(s);
  const float* dr = dp + row * static_cast<std::size_t>(s);
  float dot = 0.f;
  for (int c = static_cast<int>(threadIdx.x); c <= t; c += blockDim.x)
    dot += to_f(pr[c]) * dr[c];
  dot = block_sum(dot);
  for (int c = static_cast<int>(threadIdx.x); c < s; c += blockDim.x)
    pr[c] = __float2bfloat16(c <= t ? to_f(pr[c]) * (dr[c] - dot) : 0.f);
}

// One block per token row of fp32 logits: loss = logsumexp - logit[target]; dlogits =
// (softmax - onehot) * scale in bf16 (the head GEMMs' input).
__global__ void cross_entropy_kernel(const float* logits, const int* targets, bf16* dlogits,
                                     float* losses, int v, float scale) {
  const std::size_t row = blockIdx.x;
  const float* z = logits + row * v;
  bf16* d = dlogits + row * v;
  float m = -INFINITY;
  for (int c = static_cast<int>(threadIdx.x); c < v; c += blockDim.x)
    m = fmaxf(m, z[c]);
  m = block_max(m);
  float sum = 0.f;
  for (int c = static_cast<int>(threadIdx.x); c < v; c += blockDim.x)
    sum += expf(z[c] - m);
  sum = block_sum(sum);
  const int target = targets[row];
  // A lone tensor shard (no reductions) holds the first v columns: a target beyond them adds no
  // logit, as the CPU block and the reference compute it.
  const float target_logit = target < v ? z[target] : 0.f;
  if (threadIdx.x == 0) losses[row] = logf(sum) + m - target_logit;
  const float inv = 1.f / sum;
  for (int c = static_cast<int>(threadIdx.x); c < v; c += blockDim.x)
    d[c] = __float2bfloat16((expf(z[c] - m) * inv - (c == target ? 1.f : 0.f)) * scale);
}

// AdamW, PyTorch's order: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr (m / bc1) / (sqrt(v / bc2) + eps); the bf16 copy follows.
__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, bf16* p16, std::size_t n,
                             float lr, float b1, float b2, float eps, float wd, float bc1,
                             float bc2) {
  GRID_STRIDE(i, n) {
    const float gi = g[i];
    const float mi = b1 * m[i] + (1.f - b1) * gi;
    const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float pi = p[i] * (1.f - lr * wd);
    pi -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    p[i] = pi;
    p16[i] = __float2bfloat16(pi);
  }
}

// ------------------------------------------------------------------------ vectorised kernels
//
// The same arithmetic as the scalar kernels above (fp32 math, the same formulas, bf16 rounded
// to nearest), with 16-byte loads and stores and each row held in registers, so that every
// input byte is read from memory once. The host uses them where the shapes allow (widths a
// multiple of 4 or 8, rows short enough for the register arrays) and the scalar kernels
// otherwise.

constexpr int kMaxNormVec = 16;  // float4 per thread: rows up to 16 * 4 * kThreads = 16384

__device__ __forceinline__ void unpack8(const uint4& u, float* f) {
  const auto* p = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 t = __bfloat1622float2(p[j]);
    f[2 * j] = t.x;
    f[2 * j + 1] = t.y;
  }
}

__device__ __forceinline__ uint4 pack8(const float* f) {
  uint4 u;
  auto* p = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    p[j] = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);
  return u;
}

__device__ __forceinline__ uint2 pack4(float a, float b, float c, float e) {
  uint2 u;
  auto* p = reinterpret_cast<__nv_bfloat162*>(&u);
  p[0] = __floats2bfloat162_rn(a, b);
  p[1] = __floats2bfloat162_rn(c, e);
  return u;
}

__device__ __forceinline__ float gelu_value(float x) {
  const float th = tanhf(kGeluC * (x + kGeluA * x * x * x));
  return 0.5f * x * (1.f + th);
}

__device__ __forceinline__ float gelu_slope(float x) {
  const float th = tanhf(kGeluC * (x + kGeluA * x * x * x));
  return 0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * kGeluC * (1.f + 3.f * kGeluA * x * x);
}

// out = bf16(in), 4 per step (in 16-byte and out 8-byte aligned), the tail one by one.
__global__ void to_bf16_vec_kernel(const float* in, bf16* out, std::size_t n) {
  const std::size_t n4 = n / 4;
  const auto* in4 = reinterpret_cast<const float4*>(in);
  auto* out4 = reinterpret_cast<uint2*>(out);
  GRID_STRIDE(i, n4) {
    const float4 v = in4[i];
    out4[i] = pack4(v.x, v.y, v.z, v.w);
  }
  GRID_STRIDE(i, n - n4 * 4) out[n4 * 4 + i] = __float2bfloat16(in[n4 * 4 + i]);
}

// Element-wise kernels, 8 bf16 per step (every pointer 16-byte aligned), the tail one by one.
__global__ void gelu_forward_vec_kernel(const bf16* u, bf16* a, std::size_t n) {
  const std::size_t n8 = n / 8;
  GRID_STRIDE(i, n8) {
    float x[8];
    unpack8(reinterpret_cast<const uint4*>(u)[i], x);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      x[j] = gelu_value(x[j]);
    reinterpret_cast<uint4*>(a)[i] = pack8(x);
  }
  GRID_STRIDE(i, n - n8 * 8) {
    const std::size_t k = n8 * 8 + i;
    a[k] = __float2bfloat16(gelu_value(to_f(u[k])));
  }
}

__global__ void gelu_backward_vec_kernel(const bf16* u, const bf16* da, bf16* du, std::size_t n) {
  const std::size_t n8 = n / 8;
  GRID_STRIDE(i, n8) {
    float x[8], g[8];
    unpack8(reinterpret_cast<const uint4*>(u)[i], x);
    unpack8(reinterpret_cast<const uint4*>(da)[i], g);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      x[j] = g[j] * gelu_slope(x[j]);
    reinterpret_cast<uint4*>(du)[i] = pack8(x);
  }
  GRID_STRIDE(i, n - n8 * 8) {
    const std::size_t k = n8 * 8 + i;
    du[k] = __float2bfloat16(to_f(da[k]) * gelu_slope(to_f(u[k])));
  }
}

__global__ void swiglu_forward_vec_kernel(const bf16* g, const bf16* u, bf16* a, std::size_t n) {
  const std::size_t n8 = n / 8;
  GRID_STRIDE(i, n8) {
    float x[8], y[8];
    unpack8(reinterpret_cast<const uint4*>(g)[i], x);
    unpack8(reinterpret_cast<const uint4*>(u)[i], y);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      x[j] = x[j] * sigmoid(x[j]) * y[j];
    reinterpret_cast<uint4*>(a)[i] = pack8(x);
  }
  GRID_STRIDE(i, n - n8 * 8) {
    const std::size_t k = n8 * 8 + i;
    const float x = to_f(g[k]);
    a[k] = __float2bfloat16(x * sigmoid(x) * to_f(u[k]));
  }
}

__global__ void swiglu_backward_vec_kernel(const bf16* g, const bf16* u, const bf16* da, bf16* dg,
                                           bf16* du, std::size_t n) {
  const std::size_t n8 = n / 8;
  GRID_STRIDE(i, n8) {
    float x[8], y[8], d[8], og[8], ou[8];
    unpack8(reinterpret_cast<const uint4*>(g)[i], x);
    unpack8(reinterpret_cast<const uint4*>(u)[i], y);
    unpack8(reinterpret_cast<const uint4*>(da)[i], d);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float sg = sigmoid(x[j]);
      ou[j] = d[j] * x[j] * sg;
      og[j] = d[j] * y[j] * sg * (1.f + x[j] * (1.f - sg));
    }
    reinterpret_cast<uint4*>(du)[i] = pack8(ou);
    reinterpret_cast<uint4*>(dg)[i] = pack8(og);
  }
  GRID_STRIDE(i, n - n8 * 8) {
    const std::size_t k = n8 * 8 + i;
    const float x = to_f(g[k]);
    const float sg = sigmoid(x);
    const float d = to_f(da[k]);
    du[k] = __float2bfloat16(d * x * sg);
    dg[k] = __float2bfloat16(d * to_f(u[k]) * sg * (1.f + x * (1.f - sg)));
  }
}

// norm_forward_kernel with the row in registers: thread i holds float4 number i + k kThreads
// (k < V) of the row; h % 4 == 0 and h / 4 <= V kThreads. Launched with kThreads threads.
template <int V>
__global__ void __launch_bounds__(kThreads, V <= 12 ? 4 : 1)
    norm_forward_vec_kernel(const float* x, const float* gain, const float* bias, bf16* y,
                            float* mean_out, float* rstd_out, int h, float eps, bool layer_norm) {
  const std::size_t row = blockIdx.x;
  const int n4 = h / 4;
  const auto* xr = reinterpret_cast<const float4*>(x + row * h);
  auto* yr = reinterpret_cast<uint2*>(y + row * h);
  const int tid = static_cast<int>(threadIdx.x);
  float4 v[V];
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * kThreads;
    v[k] = i < n4 ? xr[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  float mean = 0.f;
  if (layer_norm) mean = block_sum(sum) / static_cast<float>(h);
  float sq = 0.f;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * kThreads;
    if (i < n4) {
      const float a = v[k].x - mean, b = v[k].y - mean, c = v[k].z - mean, e = v[k].w - mean;
      sq += (a * a + b * b) + (c * c + e * e);
    }
  }
  const float rstd = 1.f / sqrtf(block_sum(sq) / static_cast<float>(h) + eps);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * kThreads;
    if (i < n4) {
      const int c = 4 * i;
      float o0 = (v[k].x - mean) * rstd * gain[c];
      float o1 = (v[k].y - mean) * rstd * gain[c + 1];
      float o2 = (v[k].z - mean) * rstd * gain[c + 2];
      float o3 = (v[k].w - mean) * rstd * gain[c + 3];
      if (bias) {
        o0 += bias[c];
        o1 += bias[c + 1];
        o2 += bias[c + 2];
        o3 += bias[c + 3];
      }
      yr[i] = pack4(o0, o1, o2, o3);
    }
  }
  if (tid == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// norm_backward_kernel + norm_params_kernel (+ the bf16 copy of dx when dx16 is not null) in
// one pass, the row in registers as in norm_forward_vec_kernel. Each block takes rows
// blockIdx.x, blockIdx.x + gridDim.x, ...; every thread sums the gain (and bias) gradient of
// its own columns over those rows in dynamic shared memory (float4 [n4], then [n4] for the
// bias: no other thread touches them, so no barrier) and adds them to dgain / dbias with one
// atomic per column and block at the end. `res` may alias `dx` (each element is read before it
// is written, by the same thread).
template <int V>
__global__ void __launch_bounds__(kThreads)
    norm_backward_vec_kernel(const float* x, const float* gain, const float* mean,
                             const float* rstd, const float* dy, const float* res, float* dx,
                             bf16* dx16, float* dgain, float* dbias, int rows, int h,
                             bool layer_norm) {
  extern __shared__ float4 part[];
  const int n4 = h / 4;
  const int tid = static_cast<int>(threadIdx.x);
  float4* pg = part;
  float4* pb = dbias ? part + n4 : nullptr;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * kThreads;
    if (i < n4) {
      pg[i] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (pb) pb[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  for (int row = static_cast<int>(blockIdx.x); row < rows; row += static_cast<int>(gridDim.x)) {
    const std::size_t off = static_cast<std::size_t>(row) * h;
    const auto* xr = reinterpret_cast<const float4*>(x + off);
    const auto* dyr = reinterpret_cast<const float4*>(dy + off);
    const float mu = mean[row];
    const float rs = rstd[row];
    float4 xv[V], dv[V];
    float s1 = 0.f, s2 = 0.f;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = tid + k * kThreads;
      if (i < n4) {
        xv[k] = xr[i];
        dv[k] = dyr[i];
      } else {
        xv[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        dv[k] = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = tid + k * kThreads;
      if (i < n4) {
        const int c = 4 * i;
        // xhat in xv from here on.
        xv[k].x = (xv[k].x - mu) * rs;
        xv[k].y = (xv[k].y - mu) * rs;
        xv[k].z = (xv[k].z - mu) * rs;
        xv[k].w = (xv[k].w - mu) * rs;
        const float g0 = dv[k].x * gain[c], g1 = dv[k].y * gain[c + 1];
        const float g2 = dv[k].z * gain[c + 2], g3 = dv[k].w * gain[c + 3];
        s1 += (g0 + g1) + (g2 + g3);
        s2 += (g0 * xv[k].x + g1 * xv[k].y) + (g2 * xv[k].z + g3 * xv[k].w);
        float4 a = pg[i];
        a.x += dv[k].x * xv[k].x;
        a.y += dv[k].y * xv[k].y;
        a.z += dv[k].z * xv[k].z;
        a.w += dv[k].w * xv[k].w;
        pg[i] = a;
        if (pb) {
          float4 bb = pb[i];
          bb.x += dv[k].x;
          bb.y += dv[k].y;
          bb.z += dv[k].z;
          bb.w += dv[k].w;
          pb[i] = bb;
        }
      }
    }
    float m1 = 0.f, m2 = 0.f;
    if (layer_norm) {
      const float2 sums = block_sum2(s1, s2);
      m1 = sums.x / static_cast<float>(h);
      m2 = sums.y / static_cast<float>(h);
    } else {
      m2 = block_sum(s2) / static_cast<float>(h);
    }
    const auto* resr = res ? reinterpret_cast<const float4*>(res + off) : nullptr;
    auto* dxr = reinterpret_cast<float4*>(dx + off);
    auto* d16r = dx16 ? reinterpret_cast<uint2*>(dx16 + off) : nullptr;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = tid + k * kThreads;
      if (i < n4) {
        const int c = 4 * i;
        float4 o = resr ? resr[i] : make_float4(0.f, 0.f, 0.f, 0.f);
        o.x += rs * (dv[k].x * gain[c] - m1 - xv[k].x * m2);
        o.y += rs * (dv[k].y * gain[c + 1] - m1 - xv[k].y * m2);
        o.z += rs * (dv[k].z * gain[c + 2] - m1 - xv[k].z * m2);
        o.w += rs * (dv[k].w * gain[c + 3] - m1 - xv[k].w * m2);
        dxr[i] = o;
        if (d16r) d16r[i] = pack4(o.x, o.y, o.z, o.w);
      }
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * kThreads;
    if (i < n4) {
      const float4 a = pg[i];
      atomicAdd(dgain + 4 * i, a.x);
      atomicAdd(dgain + 4 * i + 1, a.y);
      atomicAdd(dgain + 4 * i + 2, a.z);
      atomicAdd(dgain + 4 * i + 3, a.w);
      if (pb) {
        const float4 bb = pb[i];
        atomicAdd(dbias + 4 * i, bb.x);
        atomicAdd(dbias + 4 * i + 1, bb.y);
        atomicAdd(dbias + 4 * i + 2, bb.z);
        atomicAdd(dbias + 4 * i + 3, bb.w);
      }
    }
  }
}

// causal_softmax_kernel with the row in registers: thread i holds the 8 scores of chunk
// i + k NT (k < V), NT threads a block; s % 8 == 0 and s / 8 <= V NT. Only the chunks holding a key
// c <= t are read; the rest are written as zeros.
template <int V, int NT>
__global__ void __launch_bounds__(NT) causal_softmax_vec_kernel(bf16* sp, int s) {
  const std::size_t row = blockIdx.x;
  const int t = static_cast<int>(row % static_cast<std::size_t>(s));
  auto* r = reinterpret_cast<uint4*>(sp + row * static_cast<std::size_t>(s));
  const int n8 = s / 8;
  const int live = t / 8 + 1;  // chunks 0 .. t / 8 hold keys c <= t
  const int tid = static_cast<int>(threadIdx.x);
  float v[V][8];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * NT;
    if (i < live) {
      unpack8(r[i], v[k]);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (8 * i + j <= t) m = fmaxf(m, v[k][j]);
    }
  }
  m = block_max(m);
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * NT;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (i < live && 8 * i + j <= t) {
        v[k][j] = expf(v[k][j] - m);
        sum += v[k][j];
      } else {
        v[k][j] = 0.f;
      }
    }
  }
  const float inv = 1.f / block_sum(sum);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * NT;
    if (i < n8) {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v[k][j] *= inv;  // masked: 0 * inv = 0
      r[i] = pack8(v[k]);
    }
  }
}

// softmax_backward_kernel with the row in registers (layout as causal_softmax_vec_kernel).
template <int V, int NT>
__global__ void __launch_bounds__(NT)
    softmax_backward_vec_kernel(bf16* p_ds, const float* dp, int s) {
  const std::size_t row = blockIdx.x;
  const int t = static_cast<int>(row % static_cast<std::size_t>(s));
  auto* pr = reinterpret_cast<uint4*>(p_ds + row * static_cast<std::size_t>(s));
  const auto* dr = reinterpret_cast<const float4*>(dp + row * static_cast<std::size_t>(s));
  const int n8 = s / 8;
  const int live = t / 8 + 1;
  const int tid = static_cast<int>(threadIdx.x);
  float pv[V][8], dv[V][8];
  float dot = 0.f;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * NT;
    if (i < live) {
      unpack8(pr[i], pv[k]);
      const float4 a = dr[2 * i];
      const float4 b = dr[2 * i + 1];
      dv[k][0] = a.x;
      dv[k][1] = a.y;
      dv[k][2] = a.z;
      dv[k][3] = a.w;
      dv[k][4] = b.x;
      dv[k][5] = b.y;
      dv[k][6] = b.z;
      dv[k][7] = b.w;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (8 * i + j <= t) dot += pv[k][j] * dv[k][j];
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        pv[k][j] = dv[k][j] = 0.f;
    }
  }
  dot = block_sum(dot);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int i = tid + k * NT;
    if (i < n8) {
      float o[8];
#pragma unroll
      for (int j = 0; j < 8; ++j)
        o[j] = (i < live && 8 * i + j <= t) ? pv[k][j] * (dv[k][j] - dot) : 0.f;
      pr[i] = pack8(o);
    }
  }
}

bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace

std::size_t free_device_memory(int device, std::size_t* total) {
  check(cudaSetDevice(device), "cudaSetDevice");
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (total) *total = total_bytes;
  return free_bytes;
}

// ======================================================================== the block

struct DeviceTransformerBlock::Impl {
  struct Layer {
    float* x1 = nullptr;
    bf16 *xn1 = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *p = nullptr;
    bf16 *attn = nullptr, *xn2 = nullptr, *gate = nullptr, *up = nullptr, *act = nullptr;
    float *mean1 = nullptr, *rstd1 = nullptr, *mean2 = nullptr, *rstd2 = nullptr;
  };

  BlockConfig c;
  BlockParameters slots;
  int device = 0;
  std::size_t count = 0;  // parameters
  AdamConfig adam;
  long adam_steps = 0;
  bool debug_sync = false;
  int sm_count = 1;            // multiprocessors of `device`
  std::size_t smem_optin = 0;  // opt-in dynamic shared memory per block, bytes

  // Shapes.
  int T = 0, h = 0, s = 0, b = 0, d = 0, lh = 0, lkv = 0, group = 0, qw = 0, kvw = 0, f = 0;
  int V = 0;           // the head's columns on this rank
  int vocabulary = 0;  // the token embedding's rows (never split)
  std::size_t BH = 0;
  bool swiglu = false, layer_norm = false;
  float eps = 1e-5f;

  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudaEvent_t ev_start = nullptr, ev_stop = nullptr;
  // Per-op timing (time_layer_stack_ops): off except inside it; events created on first use.
  bool op_timing = false;
  std::size_t op_next = 0;
  std::vector<cudaEvent_t> op_events;
  std::vector<const char*> op_names;

  float* params = nullptr;
  bf16* params16 = nullptr;
  float* grads = nullptr;
  float* adam_m = nullptr;
  float* adam_v = nullptr;
  int* inputs = nullptr;
  int* targets = nullptr;
  float* losses = nullptr;
  std::vector<float*> resid;  // layers + 1
  std::vector<Layer> acts;
  bf16* xnf = nullptr;
  float *meanf = nullptr, *rstdf = nullptr, *logits = nullptr;
  bf16* dlogits = nullptr;
  float* dtop = nullptr;  // upstream gradient of the stack's output (layer timing)
  float* dres = nullptr;  // running residual-stream gradient
  bf16* d16 = nullptr;
  float* dxn = nullptr;
  bf16 *dact = nullptr, *dup = nullptr, *dgate = nullptr, *dattn = nullptr;
  float* dprob = nullptr;
  float *dq32 = nullptr, *dk32 = nullptr, *dv32 = nullptr;
  bf16 *dq16 = nullptr, *dk16 = nullptr, *dv16 = nullptr;
  std::vector<void*> owned;

  explicit Impl(const BlockConfig& config) : c(config) {
    const std::string problem = c.problem();
    if (!problem.empty())
      throw std::invalid_argument("DeviceTransformerBlock: invalid config: " + problem);
    slots = block_parameters(c);
    count = slots.total;
    T = c.tokens();
    h = c.hidden;
    s = c.sequence;
    b = c.micro_batch;
    d = c.head_dim();
    lh = c.local_heads();
    lkv = c.local_kv_heads();
    group = lh / lkv;
    qw = c.local_width();
    kvw = c.local_kv_width();
    f = c.local_ffn();
    // The head's columns on this rank (block_parameters sizes the head slot so): the whole
    // vocabulary at tensor 1, which is how this block trains; a lone tensor shard (the gradient
    // check's, the layer timings') holds the first V / t columns and no reductions, as the CPU
    // block without a TensorReduce.
    V = c.local_vocabulary();
    vocabulary = c.vocabulary;
    BH = static_cast<std::size_t>(b) * static_cast<std::size_t>(lh);
    swiglu = c.feed_forward == BlockFeedForward::SwiGlu;
    layer_norm = c.norm == BlockNorm::LayerNorm;
    eps = static_cast<float>(c.norm_epsilon);
    resid.assign(static_cast<std::size_t>(c.layers) + 1, nullptr);
    acts.assign(static_cast<std::size_t>(c.layers), Layer{});
  }

  // Calls fn(pointer, bytes) for every device buffer (allocation and the size estimate share
  // this list).
  template <class Fn>
  void layout(Fn&& fn) {
    const auto Ts = static_cast<std::size_t>(T);
    const auto th = Ts * static_cast<std::size_t>(h);
    const auto tq = Ts * static_cast<std::size_t>(qw);
    const auto tkv = Ts * static_cast<std::size_t>(kvw);
    const auto tf = Ts * static_cast<std::size_t>(f);
    const auto tv = Ts * static_cast<std::size_t>(V);
    const auto ss = BH * static_cast<std::size_t>(s) * static_cast<std::size_t>(s);
    const std::size_t F = sizeof(float), H = sizeof(bf16), I = sizeof(int);
    fn(params, count * F);
    fn(params16, count * H);
    fn(grads, count * F);
    fn(inputs, Ts * I);
    fn(targets, Ts * I);
    fn(losses, Ts * F);
    for (float*& r : resid)
      fn(r, th * F);
    for (Layer& l : acts) {
      fn(l.x1, th * F);
      fn(l.xn1, th * H);
      fn(l.q, tq * H);
      fn(l.k, tkv * H);
      fn(l.v, tkv * H);
      fn(l.p, ss * H);
      fn(l.attn, tq * H);
      fn(l.xn2, th * H);
      if (swiglu) fn(l.gate, tf * H);
      fn(l.up, tf * H);
      fn(l.act, tf * H);
      fn(l.mean1, Ts * F);
      fn(l.rstd1, Ts * F);
      fn(l.mean2, Ts * F);
      fn(l.rstd2, Ts * F);
    }
    fn(xnf, th * H);
    fn(meanf, Ts * F);
    fn(rstdf, Ts * F);
    fn(logits, tv * F);
    fn(dlogits, tv * H);
    fn(dtop, th * F);
    fn(dres, th * F);
    fn(d16, th * H);
    fn(dxn, th * F);
    fn(dact, tf * H);
    fn(dup, tf * H);
    if (swiglu) fn(dgate, tf * H);
    fn(dattn, tq * H);
    fn(dprob, ss * F);
    fn(dq32, tq * F);
    fn(dk32, tkv * F);
    fn(dv32, tkv * F);
    fn(dq16, tq * H);
    fn(dk16, tkv * H);
    fn(dv16, tkv * H);
  }

  void allocate() {
    layout([this](auto*& p, std::size_t bytes) {
      void* raw = nullptr;
      check(cudaMalloc(&raw, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
      owned.push_back(raw);
      p = static_cast<std::remove_reference_t<decltype(p)>>(raw);
    });
  }

  void release() {
    for (void* p : owned)
      cudaFree(p);
    owned.clear();
    cudaFree(adam_m);
    cudaFree(adam_v);
    adam_m = adam_v = nullptr;
  }

  void use_device() const { check(cudaSetDevice(device), "cudaSetDevice"); }

  void launched(const char* what) {
    check(cudaGetLastError(), what);
    if (debug_sync) check(cudaStreamSynchronize(stream), what);
    if (op_timing) mark(what);
  }

  // Records the next per-op event after `what` (op_timing only).
  void mark(const char* what) {
    if (!op_timing) return;
    if (op_next == op_events.size()) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate (per-op timing)");
      op_events.push_back(e);
      op_names.push_back(what);
    }
    op_names[op_next] = what;
    check(cudaEventRecord(op_events[op_next], stream), "cudaEventRecord (per-op timing)");
    ++op_next;
  }

  void destroy_op_events() {
    for (cudaEvent_t e : op_events)
      cudaEventDestroy(e);
    op_events.clear();
    op_names.clear();
  }

  // ---------------------------------------------------------------- GEMMs

  // Row-major C [M x N] = alpha op(A) [M x K] op(B) [K x N] + beta C, `batch` times with the
  // given element strides (see the top of the file for the column-major translation).
  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const void* A, cudaDataType at,
            int lda, long long sa, const void* B, cudaDataType bt, int ldb, long long sb,
            float beta, void* C, cudaDataType ct, int ldc, long long sc, int batch,
            const char* what) {
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch == 1) {
      check_blas(cublasGemmEx(blas, opb, opa, N, M, K, &alpha, B, bt, ldb, A, at, lda, &beta, C, ct,
                              ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 what);
    } else {
      check_blas(cublasGemmStridedBatchedEx(blas, opb, opa, N, M, K, &alpha, B, bt, ldb, sb, A, at,
                                            lda, sa, &beta, C, ct, ldc, sc, batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 what);
    }
    launched(what);
  }

  // Y [T x out] = X [T x in] W [in x out] (+ beta Y); Y bf16 or fp32.
  void linear(const bf16* x, const bf16* w, void* y, cudaDataType yt, int in, int out, float beta,
              const char* what) {
    gemm(false, false, T, out, in, 1.f, x, CUDA_R_16BF, in, 0, w, CUDA_R_16BF, out, 0, beta, y, yt,
         out, 0, 1, what);
  }
  // dX [T x in] = dY [T x out] W^T (+ beta dX).
  void linear_dx(const bf16* dy, const bf16* w, void* dx, cudaDataType xt, int in, int out,
                 float beta, const char* what) {
    gemm(false, true, T, in, out, 1.f, dy, CUDA_R_16BF, out, 0, w, CUDA_R_16BF, out, 0, beta, dx,
         xt, in, 0, 1, what);
  }
  // dW [in x out] = X^T dY, fp32, written over the gradient slot.
  void linear_dw(const bf16* x, const bf16* dy, float* dw, int in, int out, const char* what) {
    gemm(true, false, in, out, T, 1.f, x, CUDA_R_16BF, in, 0, dy, CUDA_R_16BF, out, 0, 0.f, dw,
         CUDA_R_32F, out, 0, 1, what);
  }

  const bf16* w16(const ParameterSlot& slot) const { return params16 + slot.offset; }
  const float* w32(const ParameterSlot& slot) const {
    return slot.size() > 0 ? params + slot.offset : nullptr;
  }
  float* g32(const ParameterSlot& slot) const {
    return slot.size() > 0 ? grads + slot.offset : nullptr;
  }

  // ---------------------------------------------------------------- kernels (host side)

  void to_bf16(const float* in, bf16* out, std::size_t n, const char* what) {
    if (aligned(in, 16) && aligned(out, 8))
      to_bf16_vec_kernel<<<blocks_for(n / 4), kThreads, 0, stream>>>(in, out, n);
    else
      to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, out, n);
    launched(what);
  }

  // Float4 per thread of the register-row norm kernels for width h, 0 where they do not apply.
  int norm_vec() const {
    if (h % 4 != 0) return 0;
    const int need = (h / 4 + kThreads - 1) / kThreads;
    for (int v : {1, 2, 4, 8, 12, kMaxNormVec})
      if (need <= v) return v;
    return 0;
  }

  // Register-row softmax kernels: configuration k launches <V, NT> = <1, 128> (s <= 1024),
  // <2, 128> (s <= 2048), <4, 128> (s <= 4096), <4, 256> (s <= 8192); 0 where they do not apply.
  // 128-thread blocks with 2 or 4 chunks per thread keep more loads in flight per SM than 256
  // threads with one each.
  int softmax_vec() const {
    if (s % 8 != 0) return 0;
    const int n8 = s / 8;
    if (n8 <= 128) return 1;
    if (n8 <= 256) return 2;
    if (n8 <= 512) return 3;
    if (n8 <= 1024) return 4;
    return 0;
  }

  template <int V>
  void norm_forward_vec(const float* x, const float* gain, const float* bias, bf16* y, float* mean,
                        float* rstd) {
    norm_forward_vec_kernel<V>
        <<<row_blocks(static_cast<std::size_t>(T), "norm"), kThreads, 0, stream>>>(
            x, gain, bias, y, mean, rstd, h, eps, layer_norm);
  }

  // False (nothing launched) where the shared memory or occupancy does not allow it.
  template <int V>
  bool norm_backward_vec(const float* x, const float* gain, const float* mean, const float* rstd,
                         const float* dy, const float* res, float* dx, bf16* dx16, float* dgain,
                         float* dbias) {
    const std::size_t smem = static_cast<std::size_t>(h / 4) * sizeof(float4) * (dbias ? 2u : 1u);
    if (smem > smem_optin) return false;
    auto kernel = norm_backward_vec_kernel<V>;
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(smem)),
          "cudaFuncSetAttribute (norm backward)");
    int per_sm = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor (norm backward)");
    if (per_sm < 1) return false;
    const int grid = std::min(T, sm_count * per_sm);
    kernel<<<static_cast<unsigned>(grid), kThreads, smem, stream>>>(
        x, gain, mean, rstd, dy, res, dx, dx16, dgain, dbias, T, h, layer_norm);
    return true;
  }

  void norm_forward(const float* x, const ParameterSlot& gain, const ParameterSlot& bias, bf16* y,
                    float* mean, float* rstd) {
    const float* g = w32(gain);
    const float* bi = w32(bias);
    switch (aligned(x, 16) && aligned(y, 8) ? norm_vec() : 0) {
      case 1:
        norm_forward_vec<1>(x, g, bi, y, mean, rstd);
        break;
      case 2:
        norm_forward_vec<2>(x, g, bi, y, mean, rstd);
        break;
      case 4:
        norm_forward_vec<4>(x, g, bi, y, mean, rstd);
        break;
      case 8:
        norm_forward_vec<8>(x, g, bi, y, mean, rstd);
        break;
      case 12:
        norm_forward_vec<12>(x, g, bi, y, mean, rstd);
        break;
      case kMaxNormVec:
        norm_forward_vec<kMaxNormVec>(x, g, bi, y, mean, rstd);
        break;
      default:
        norm_forward_kernel<<<row_blocks(static_cast<std::size_t>(T), "norm"), kThreads, 0,
                              stream>>>(x, g, bi, y, mean, rstd, h, eps, layer_norm);
    }
    launched("norm forward");
  }

  // dx_out = res + norm_backward(dy); gain (and bias) gradients accumulated; when dx16 is not
  // null, also dx16 = bf16(dx_out) (one pass; the scalar fallback casts in a second kernel
  // labelled cast_what).
  void norm_backward(const float* x, const ParameterSlot& gain, const ParameterSlot& bias,
                     const float* mean, const float* rstd, const float* dy, const float* res,
                     float* dx_out, bf16* dx16 = nullptr, const char* cast_what = "") {
    const float* g = w32(gain);
    float* dg = g32(gain);
    float* db = g32(bias);
    bool done = false;
    const bool ok = aligned(x, 16) && aligned(dy, 16) && aligned(res, 16) && aligned(dx_out, 16) &&
                    aligned(dx16, 8);
    switch (ok ? norm_vec() : 0) {
      case 1:
        done = norm_backward_vec<1>(x, g, mean, rstd, dy, res, dx_out, dx16, dg, db);
        break;
      case 2:
        done = norm_backward_vec<2>(x, g, mean, rstd, dy, res, dx_out, dx16, dg, db);
        break;
      case 4:
        done = norm_backward_vec<4>(x, g, mean, rstd, dy, res, dx_out, dx16, dg, db);
        break;
      case 8:
        done = norm_backward_vec<8>(x, g, mean, rstd, dy, res, dx_out, dx16, dg, db);
        break;
      case 12:
        done = norm_backward_vec<12>(x, g, mean, rstd, dy, res, dx_out, dx16, dg, db);
        break;
      case kMaxNormVec:
        done = norm_backward_vec<kMaxNormVec>(x, g, mean, rstd, dy, res, dx_out, dx16, dg, db);
        break;
      default:
        break;
    }
    if (done) {
      launched("norm backward");
      return;
    }
    norm_backward_kernel<<<row_blocks(static_cast<std::size_t>(T), "norm"), kThreads, 0, stream>>>(
        x, g, mean, rstd, dy, res, dx_out, h, layer_norm);
    launched("norm backward");
    const dim3 grid(static_cast<unsigned>((h + kThreads - 1) / kThreads),
                    static_cast<unsigned>((T + kNormRowsPerBlock - 1) / kNormRowsPerBlock));
    norm_params_kernel<<<grid, kThreads, 0, stream>>>(x, mean, rstd, dy, dg, db, T, h);
    launched("norm gain gradient");
    if (dx16)
      to_bf16(dx_out, dx16, static_cast<std::size_t>(T) * static_cast<std::size_t>(h), cast_what);
  }

  // ---------------------------------------------------------------- attention (math path)

  // Per sample bi and position r within a group, one strided batched GEMM over the K/V heads
  // g: query head j = g * group + r. Element offsets of the operands of (bi, r):
  std::size_t q_off(int bi, int r) const {
    return static_cast<std::size_t>(bi) * s * qw + static_cast<std::size_t>(r) * d;
  }
  std::size_t kv_off(int bi) const { return static_cast<std::size_t>(bi) * s * kvw; }
  std::size_t p_off(int bi, int r) const {
    return (static_cast<std::size_t>(bi) * lh + static_cast<std::size_t>(r)) * s * s;
  }
  long long q_stride() const { return static_cast<long long>(group) * d; }
  long long kv_stride() const { return d; }
  long long p_stride() const { return static_cast<long long>(group) * s * s; }

  void attention_forward(Layer& L) {
    const float scale = 1.f / std::sqrt(static_cast<float>(d));
    for (int bi = 0; bi < b; ++bi)
      for (int r = 0; r < group; ++r)  // S = Q K^T / sqrt(d)  [s x s], bf16
        gemm(false, true, s, s, d, scale, L.q + q_off(bi, r), CUDA_R_16BF, qw, q_stride(),
             L.k + kv_off(bi), CUDA_R_16BF, kvw, kv_stride(), 0.f, L.p + p_off(bi, r), CUDA_R_16BF,
             s, p_stride(), lkv, "attention scores Q K^T");
    const unsigned rows = row_blocks(BH * static_cast<std::size_t>(s), "softmax");
    switch (aligned(L.p, 16) ? softmax_vec() : 0) {
      case 1:
        causal_softmax_vec_kernel<1, 128><<<rows, 128, 0, stream>>>(L.p, s);
        break;
      case 2:
        causal_softmax_vec_kernel<2, 128><<<rows, 128, 0, stream>>>(L.p, s);
        break;
      case 3:
        causal_softmax_vec_kernel<4, 128><<<rows, 128, 0, stream>>>(L.p, s);
        break;
      case 4:
        causal_softmax_vec_kernel<4, 256><<<rows, 256, 0, stream>>>(L.p, s);
        break;
      default:
        causal_softmax_kernel<<<rows, kThreads, 0, stream>>>(L.p, s);
    }
    launched("causal softmax");
    for (int bi = 0; bi < b; ++bi)
      for (int r = 0; r < group; ++r)  // O = P V  [s x d] into attn, bf16
        gemm(false, false, s, d, s, 1.f, L.p + p_off(bi, r), CUDA_R_16BF, s, p_stride(),
             L.v + kv_off(bi), CUDA_R_16BF, kvw, kv_stride(), 0.f, L.attn + q_off(bi, r),
             CUDA_R_16BF, qw, q_stride(), lkv, "attention P V");
  }

  // From dattn (bf16 [T x qw]) to dq16, dk16, dv16; destroys L.p (dS is written over it).
  // dQ, and dK and dV where no two query heads share a K/V head (group 1), are written in
  // bf16 by their GEMM (fp32 accumulation, one rounding: the same values as an fp32 GEMM
  // output cast afterwards); with group > 1 dK and dV accumulate over the group in fp32 and are
  // cast afterwards.
  void attention_backward(Layer& L) {
    const float scale = 1.f / std::sqrt(static_cast<float>(d));
    const bool kv16 = group == 1;
    void* dk_out = kv16 ? static_cast<void*>(dk16) : static_cast<void*>(dk32);
    void* dv_out = kv16 ? static_cast<void*>(dv16) : static_cast<void*>(dv32);
    const cudaDataType kv_type = kv16 ? CUDA_R_16BF : CUDA_R_32F;
    const std::size_t kv_size = kv16 ? sizeof(bf16) : sizeof(float);
    auto kv_at = [kv_size](void* base, std::size_t off) {
      return static_cast<void*>(static_cast<char*>(base) + off * kv_size);
    };
    for (int bi = 0; bi < b; ++bi)
      for (int r = 0; r < group; ++r) {
        const float beta = r > 0 ? 1.f : 0.f;  // the group's query heads share K/V head g
        // dV [s x d] (+)= P^T dO, fp32 (bf16 with group 1).
        gemm(true, false, s, d, s, 1.f, L.p + p_off(bi, r), CUDA_R_16BF, s, p_stride(),
             dattn + q_off(bi, r), CUDA_R_16BF, qw, q_stride(), beta, kv_at(dv_out, kv_off(bi)),
             kv_type, kvw, kv_stride(), lkv, "attention dV = P^T dO");
        // dP [s x s] = dO V^T, fp32.
        gemm(false, true, s, s, d, 1.f, dattn + q_off(bi, r), CUDA_R_16BF, qw, q_stride(),
             L.v + kv_off(bi), CUDA_R_16BF, kvw, kv_stride(), 0.f, dprob + p_off(bi, r), CUDA_R_32F,
             s, p_stride(), lkv, "attention dP = dO V^T");
      }
    const unsigned rows = row_blocks(BH * static_cast<std::size_t>(s), "softmax backward");
    switch (aligned(L.p, 16) && aligned(dprob, 16) ? softmax_vec() : 0) {
      case 1:
        softmax_backward_vec_kernel<1, 128><<<rows, 128, 0, stream>>>(L.p, dprob, s);
        break;
      case 2:
        softmax_backward_vec_kernel<2, 128><<<rows, 128, 0, stream>>>(L.p, dprob, s);
        break;
      case 3:
        softmax_backward_vec_kernel<4, 128><<<rows, 128, 0, stream>>>(L.p, dprob, s);
        break;
      case 4:
        softmax_backward_vec_kernel<4, 256><<<rows, 256, 0, stream>>>(L.p, dprob, s);
        break;
      default:
        softmax_backward_kernel<<<rows, kThreads, 0, stream>>>(L.p, dprob, s);
    }
    launched("softmax backward");
    for (int bi = 0; bi < b; ++bi)
      for (int r = 0; r < group; ++r) {
        const float beta = r > 0 ? 1.f : 0.f;
        // dQ [s x d] = dS K / sqrt(d), bf16 (every query head written once: beta 0).
        gemm(false, false, s, d, s, scale, L.p + p_off(bi, r), CUDA_R_16BF, s, p_stride(),
             L.k + kv_off(bi), CUDA_R_16BF, kvw, kv_stride(), 0.f, dq16 + q_off(bi, r), CUDA_R_16BF,
             qw, q_stride(), lkv, "attention dQ = dS K");
        // dK [s x d] (+)= dS^T Q / sqrt(d), fp32 (bf16 with group 1).
        gemm(true, false, s, d, s, scale, L.p + p_off(bi, r), CUDA_R_16BF, s, p_stride(),
             L.q + q_off(bi, r), CUDA_R_16BF, qw, q_stride(), beta, kv_at(dk_out, kv_off(bi)),
             kv_type, kvw, kv_stride(), lkv, "attention dK = dS^T Q");
      }
    if (!kv16) {
      const auto Ts = static_cast<std::size_t>(T);
      to_bf16(dk32, dk16, Ts * static_cast<std::size_t>(kvw), "dK to bf16");
      to_bf16(dv32, dv16, Ts * static_cast<std::size_t>(kvw), "dV to bf16");
    }
  }

  // ---------------------------------------------------------------- one layer

  void layer_forward(int l) {
    const LayerSlots& W = slots.layers[static_cast<std::size_t>(l)];
    Layer& L = acts[static_cast<std::size_t>(l)];
    const float* x = resid[static_cast<std::size_t>(l)];
    float* out = resid[static_cast<std::size_t>(l) + 1];
    const std::size_t th = static_cast<std::size_t>(T) * static_cast<std::size_t>(h);
    const std::size_t tf = static_cast<std::size_t>(T) * static_cast<std::size_t>(f);

    norm_forward(x, W.norm1_gain, W.norm1_bias, L.xn1, L.mean1, L.rstd1);
    linear(L.xn1, w16(W.wq), L.q, CUDA_R_16BF, h, qw, 0.f, "Q = xn1 Wq");
    linear(L.xn1, w16(W.wk), L.k, CUDA_R_16BF, h, kvw, 0.f, "K = xn1 Wk");
    linear(L.xn1, w16(W.wv), L.v, CUDA_R_16BF, h, kvw, 0.f, "V = xn1 Wv");
    attention_forward(L);
    check(cudaMemcpyAsync(L.x1, x, th * sizeof(float), cudaMemcpyDeviceToDevice, stream),
          "residual copy");
    mark("x1 = x (residual copy)");
    linear(L.attn, w16(W.wo), L.x1, CUDA_R_32F, qw, h, 1.f, "x1 = x + attn Wo");

    norm_forward(L.x1, W.norm2_gain, W.norm2_bias, L.xn2, L.mean2, L.rstd2);
    if (swiglu) {
      linear(L.xn2, w16(W.w_gate), L.gate, CUDA_R_16BF, h, f, 0.f, "gate = xn2 Wgate");
      linear(L.xn2, w16(W.w_up), L.up, CUDA_R_16BF, h, f, 0.f, "up = xn2 Wup");
      if (aligned(L.gate, 16) && aligned(L.up, 16) && aligned(L.act, 16))
        swiglu_forward_vec_kernel<<<blocks_for(tf / 8), kThreads, 0, stream>>>(L.gate, L.up, L.act,
                                                                               tf);
      else
        swiglu_forward_kernel<<<blocks_for(tf), kThreads, 0, stream>>>(L.gate, L.up, L.act, tf);
      launched("swiglu forward");
    } else {
      linear(L.xn2, w16(W.w_up), L.up, CUDA_R_16BF, h, f, 0.f, "up = xn2 Wup");
      if (aligned(L.up, 16) && aligned(L.act, 16))
        gelu_forward_vec_kernel<<<blocks_for(tf / 8), kThreads, 0, stream>>>(L.up, L.act, tf);
      else
        gelu_forward_kernel<<<blocks_for(tf), kThreads, 0, stream>>>(L.up, L.act, tf);
      launched("gelu forward");
    }
    check(cudaMemcpyAsync(out, L.x1, th * sizeof(float), cudaMemcpyDeviceToDevice, stream),
          "residual copy");
    mark("x2 = x1 (residual copy)");
    linear(L.act, w16(W.w2), out, CUDA_R_32F, f, h, 1.f, "x2 = x1 + act W2");
  }

  // dout: gradient of the layer's output (fp32 [T x h]); leaves the gradient of its input in
  // dres (dout may be dres), and its bf16 copy in d16 when `input16` (for the layer below).
  // dout16: d16 already holds bf16(dout) (the layer above left it there).
  void layer_backward(int l, const float* dout, bool dout16, bool input16) {
    const LayerSlots& W = slots.layers[static_cast<std::size_t>(l)];
    Layer& L = acts[static_cast<std::size_t>(l)];
    const float* x = resid[static_cast<std::size_t>(l)];
    const std::size_t th = static_cast<std::size_t>(T) * static_cast<std::size_t>(h);
    const std::size_t tf = static_cast<std::size_t>(T) * static_cast<std::size_t>(f);

    // Feed-forward: out = x1 + act W2.
    if (!dout16) to_bf16(dout, d16, th, "dx2 to bf16");
    linear_dw(L.act, d16, g32(W.w2), f, h, "dW2 = act^T dx2");
    linear_dx(d16, w16(W.w2), dact, CUDA_R_16BF, f, h, 0.f, "dact = dx2 W2^T");
    if (swiglu) {
      if (aligned(L.gate, 16) && aligned(L.up, 16) && aligned(dact, 16) && aligned(dgate, 16) &&
          aligned(dup, 16))
        swiglu_backward_vec_kernel<<<blocks_for(tf / 8), kThreads, 0, stream>>>(L.gate, L.up, dact,
                                                                                dgate, dup, tf);
      else
        swiglu_backward_kernel<<<blocks_for(tf), kThreads, 0, stream>>>(L.gate, L.up, dact, dgate,
                                                                        dup, tf);
      launched("swiglu backward");
      linear_dw(L.xn2, dgate, g32(W.w_gate), h, f, "dWgate = xn2^T dgate");
      linear_dw(L.xn2, dup, g32(W.w_up), h, f, "dWup = xn2^T dup");
      linear_dx(dup, w16(W.w_up), dxn, CUDA_R_32F, h, f, 0.f, "dxn2 = dup Wup^T");
      linear_dx(dgate, w16(W.w_gate), dxn, CUDA_R_32F, h, f, 1.f, "dxn2 += dgate Wgate^T");
    } else {
      if (aligned(L.up, 16) && aligned(dact, 16) && aligned(dup, 16))
        gelu_backward_vec_kernel<<<blocks_for(tf / 8), kThreads, 0, stream>>>(L.up, dact, dup, tf);
      else
        gelu_backward_kernel<<<blocks_for(tf), kThreads, 0, stream>>>(L.up, dact, dup, tf);
      launched("gelu backward");
      linear_dw(L.xn2, dup, g32(W.w_up), h, f, "dWup = xn2^T dup");
      linear_dx(dup, w16(W.w_up), dxn, CUDA_R_32F, h, f, 0.f, "dxn2 = dup Wup^T");
    }
    // dres and d16 = bf16(dres) (the dWo, dattn GEMMs' input) in one pass.
    norm_backward(L.x1, W.norm2_gain, W.norm2_bias, L.mean2, L.rstd2, dxn, dout, dres, d16,
                  "dx1 to bf16");

    // Attention: x1 = x + attn Wo.
    linear_dw(L.attn, d16, g32(W.wo), qw, h, "dWo = attn^T dx1");
    linear_dx(d16, w16(W.wo), dattn, CUDA_R_16BF, qw, h, 0.f, "dattn = dx1 Wo^T");
    attention_backward(L);
    linear_dw(L.xn1, dq16, g32(W.wq), h, qw, "dWq = xn1^T dQ");
    linear_dw(L.xn1, dk16, g32(W.wk), h, kvw, "dWk = xn1^T dK");
    linear_dw(L.xn1, dv16, g32(W.wv), h, kvw, "dWv = xn1^T dV");
    linear_dx(dq16, w16(W.wq), dxn, CUDA_R_32F, h, qw, 0.f, "dxn1 = dQ Wq^T");
    linear_dx(dk16, w16(W.wk), dxn, CUDA_R_32F, h, kvw, 1.f, "dxn1 += dK Wk^T");
    linear_dx(dv16, w16(W.wv), dxn, CUDA_R_32F, h, kvw, 1.f, "dxn1 += dV Wv^T");
    norm_backward(x, W.norm1_gain, W.norm1_bias, L.mean1, L.rstd1, dxn, dres, dres,
                  input16 ? d16 : nullptr, "dx2 to bf16");
  }

  void layers_forward() {
    for (int l = 0; l < c.layers; ++l)
      layer_forward(l);
  }

  // From the gradient `dtop_in` of the stack's output to that of its input (in dres).
  void layers_backward(const float* dtop_in) {
    for (int l = c.layers - 1; l >= 0; --l) {
      const bool top = l == c.layers - 1;
      layer_backward(l, top ? dtop_in : dres, !top, l > 0);
    }
  }

  // ---------------------------------------------------------------- the whole model

  void forward_backward() {
    const auto Ts = static_cast<std::size_t>(T);
    const std::size_t th = Ts * static_cast<std::size_t>(h);
    check(cudaMemsetAsync(grads, 0, count * sizeof(float), stream), "zero gradients");
    embedding_forward_kernel<<<blocks_for(th), kThreads, 0, stream>>>(
        params + slots.token_embedding.offset, params + slots.position_embedding.offset, inputs,
        resid[0], th, s, h);
    launched("embedding forward");
    layers_forward();
    float* top = resid[static_cast<std::size_t>(c.layers)];
    norm_forward(top, slots.final_gain, slots.final_bias, xnf, meanf, rstdf);
    linear(xnf, w16(slots.head), logits, CUDA_R_32F, h, V, 0.f, "logits = xnf Whead");
    cross_entropy_kernel<<<row_blocks(Ts, "cross-entropy"), kThreads, 0, stream>>>(
        logits, targets, dlogits, losses, V, 1.f / static_cast<float>(T));
    launched("cross-entropy");
    linear_dw(xnf, dlogits, g32(slots.head), h, V, "dWhead = xnf^T dlogits");
    linear_dx(dlogits, w16(slots.head), dxn, CUDA_R_32F, h, V, 0.f, "dxnf = dlogits Whead^T");
    norm_backward(top, slots.final_gain, slots.final_bias, meanf, rstdf, dxn, nullptr, dtop);
    layers_backward(dtop);
    embedding_backward_kernel<<<blocks_for(th), kThreads, 0, stream>>>(
        dres, inputs, grads + slots.token_embedding.offset, grads + slots.position_embedding.offset,
        th, s, h);
    launched("embedding backward");
  }

  void refresh_bf16() { to_bf16(params, params16, count, "parameters to bf16"); }

  void adam_step(float lr) {
    if (!adam_m) {
      void* m = nullptr;
      void* v = nullptr;
      check(cudaMalloc(&m, count * sizeof(float)), "cudaMalloc (Adam m)");
      adam_m = static_cast<float*>(m);
      check(cudaMalloc(&v, count * sizeof(float)), "cudaMalloc (Adam v)");
      adam_v = static_cast<float*>(v);
      check(cudaMemsetAsync(adam_m, 0, count * sizeof(float), stream), "zero Adam m");
      check(cudaMemsetAsync(adam_v, 0, count * sizeof(float), stream), "zero Adam v");
    }
    ++adam_steps;
    const double t = static_cast<double>(adam_steps);
    const auto bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(adam.beta1), t));
    const auto bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(adam.beta2), t));
    adamw_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        params, grads, adam_m, adam_v, params16, count, lr, adam.beta1, adam.beta2, adam.epsilon,
        adam.weight_decay, bc1, bc2);
    launched("AdamW");
  }

  void upload_tokens(const int* host_tokens) {
    std::vector<int> in(static_cast<std::size_t>(T)), out(static_cast<std::size_t>(T));
    for (int bi = 0; bi < b; ++bi)
      for (int t = 0; t < s; ++t) {
        const std::size_t src = static_cast<std::size_t>(bi) * (s + 1) + t;
        const std::size_t dst = static_cast<std::size_t>(bi) * s + t;
        in[dst] = host_tokens[src];
        out[dst] = host_tokens[src + 1];
        if (in[dst] < 0 || in[dst] >= vocabulary || out[dst] < 0 || out[dst] >= vocabulary)
          throw std::invalid_argument("DeviceTransformerBlock: token outside [0, vocabulary)");
      }
    check(
        cudaMemcpyAsync(inputs, in.data(), in.size() * sizeof(int), cudaMemcpyHostToDevice, stream),
        "upload inputs");
    check(cudaMemcpyAsync(targets, out.data(), out.size() * sizeof(int), cudaMemcpyHostToDevice,
                          stream),
          "upload targets");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");  // host vectors go away
  }

  void fill_uniform(float* x, std::size_t n, uint64_t seed, float stddev) {
    fill_uniform_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        x, n, static_cast<unsigned long long>(seed), stddev * std::sqrt(3.f));
    launched("fill uniform");
  }

  std::vector<float> time(int warmup, int reps, bool layers_only, float lr) {
    auto once = [&]() {
      if (layers_only) {
        layers_forward();
        layers_backward(dtop);
      } else {
        forward_backward();
        adam_step(lr);
      }
    };
    for (int i = 0; i < warmup; ++i)
      once();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (warm-up)");
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) {
      check(cudaEventRecord(ev_start, stream), "cudaEventRecord");
      once();
      check(cudaEventRecord(ev_stop, stream), "cudaEventRecord");
      check(cudaEventSynchronize(ev_stop), "cudaEventSynchronize");
      float elapsed = 0.f;
      check(cudaEventElapsedTime(&elapsed, ev_start, ev_stop), "cudaEventElapsedTime");
      ms.push_back(elapsed);
    }
    return ms;
  }

  std::vector<std::vector<OpTime>> time_ops(int warmup, int reps) {
    for (int i = 0; i < warmup; ++i) {
      layers_forward();
      layers_backward(dtop);
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (warm-up)");
    std::vector<std::vector<OpTime>> out;
    for (int i = 0; i < reps; ++i) {
      op_next = 0;
      op_timing = true;
      try {
        mark("start");
        layers_forward();
        layers_backward(dtop);
      } catch (...) {
        op_timing = false;
        throw;
      }
      op_timing = false;
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (per-op timing)");
      std::vector<OpTime> pass;
      for (std::size_t k = 1; k < op_next; ++k) {
        float elapsed = 0.f;
        check(cudaEventElapsedTime(&elapsed, op_events[k - 1], op_events[k]),
              "cudaEventElapsedTime (per-op timing)");
        pass.push_back(OpTime{op_names[k], elapsed});
      }
      out.push_back(std::move(pass));
    }
    return out;
  }
};

DeviceTransformerBlock::DeviceTransformerBlock(const BlockConfig& config, int device)
    : impl_(std::make_unique<Impl>(config)) {
  Impl& m = *impl_;
  m.device = device;
  m.use_device();
  if (const char* e = std::getenv("TAUPLAN_CUDA_SYNC_CHECK")) m.debug_sync = e[0] == '1';
  try {
    check(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_blas(cublasCreate(&m.blas), "cublasCreate");
    check_blas(cublasSetStream(m.blas, m.stream), "cublasSetStream");
    check_blas(cublasSetMathMode(m.blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(cudaEventCreate(&m.ev_start), "cudaEventCreate");
    check(cudaEventCreate(&m.ev_stop), "cudaEventCreate");
    check(cudaDeviceGetAttribute(&m.sm_count, cudaDevAttrMultiProcessorCount, device),
          "cudaDeviceGetAttribute (multiprocessors)");
    int optin = 0;
    check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
          "cudaDeviceGetAttribute (shared memory)");
    // Leave room for block_sum's static shared memory.
    m.smem_optin = optin > 1024 ? static_cast<std::size_t>(optin - 1024) : 0;
    m.sm_count = std::max(m.sm_count, 1);
    m.allocate();
  } catch (...) {
    m.release();
    m.destroy_op_events();
    if (m.ev_start) cudaEventDestroy(m.ev_start);
    if (m.ev_stop) cudaEventDestroy(m.ev_stop);
    if (m.blas) cublasDestroy(m.blas);
    if (m.stream) cudaStreamDestroy(m.stream);
    throw;
  }
}

DeviceTransformerBlock::~DeviceTransformerBlock() {
  if (!impl_) return;
  Impl& m = *impl_;
  cudaSetDevice(m.device);
  cudaStreamSynchronize(m.stream);
  m.release();
  m.destroy_op_events();
  cudaEventDestroy(m.ev_start);
  cudaEventDestroy(m.ev_stop);
  cublasDestroy(m.blas);
  cudaStreamDestroy(m.stream);
}

std::size_t DeviceTransformerBlock::device_bytes(const BlockConfig& config, bool adam) {
  Impl plan(config);
  std::size_t total = 0;
  plan.layout([&total](auto*&, std::size_t bytes) { total += (bytes + 511) / 512 * 512; });
  if (adam) total += 2 * plan.count * sizeof(float);
  return total + (64u << 20);  // cuBLAS workspace and the context's own allocations
}

const BlockConfig& DeviceTransformerBlock::config() const {
  return impl_->c;
}

std::size_t DeviceTransformerBlock::parameter_count() const {
  return impl_->count;
}

void DeviceTransformerBlock::set_adam(const AdamConfig& adam) {
  impl_->adam = adam;
}

void DeviceTransformerBlock::set_debug_sync(bool on) {
  impl_->debug_sync = on;
}

void DeviceTransformerBlock::set_parameters(const std::vector<float>& host) {
  Impl& m = *impl_;
  if (host.size() != m.count)
    throw std::invalid_argument("DeviceTransformerBlock::set_parameters: expected " +
                                std::to_string(m.count) + " values, got " +
                                std::to_string(host.size()));
  m.use_device();
  check(cudaMemcpyAsync(m.params, host.data(), m.count * sizeof(float), cudaMemcpyHostToDevice,
                        m.stream),
        "upload parameters");
  m.refresh_bf16();
  synchronize();
}

void DeviceTransformerBlock::randomize_parameters(uint64_t seed, float scale) {
  Impl& m = *impl_;
  m.use_device();
  uint64_t k = 0;
  for (const ParameterSlot& slot : m.slots.all()) {
    const bool gain = slot.name.find("gain") != std::string::npos;
    const bool bias = slot.name.find("bias") != std::string::npos;
    if (gain || bias) {
      fill_kernel<<<blocks_for(slot.size()), kThreads, 0, m.stream>>>(
          m.params + slot.offset, gain ? 1.f : 0.f, slot.size());
      m.launched("fill");
    } else {
      m.fill_uniform(m.params + slot.offset, slot.size(), seed * 1000003ull + ++k, scale);
    }
  }
  m.refresh_bf16();
  synchronize();
}

std::vector<float> DeviceTransformerBlock::parameters() const {
  Impl& m = *impl_;
  m.use_device();
  std::vector<float> out(m.count);
  check(cudaMemcpyAsync(out.data(), m.params, m.count * sizeof(float), cudaMemcpyDeviceToHost,
                        m.stream),
        "download parameters");
  synchronize();
  return out;
}

std::vector<float> DeviceTransformerBlock::gradients() const {
  Impl& m = *impl_;
  m.use_device();
  std::vector<float> out(m.count);
  check(cudaMemcpyAsync(out.data(), m.grads, m.count * sizeof(float), cudaMemcpyDeviceToHost,
                        m.stream),
        "download gradients");
  synchronize();
  return out;
}

float DeviceTransformerBlock::loss_and_gradients(const int* host_tokens) {
  Impl& m = *impl_;
  m.use_device();
  m.upload_tokens(host_tokens);
  m.forward_backward();
  std::vector<float> losses(static_cast<std::size_t>(m.T));
  check(cudaMemcpyAsync(losses.data(), m.losses, losses.size() * sizeof(float),
                        cudaMemcpyDeviceToHost, m.stream),
        "download losses");
  synchronize();
  double sum = 0;
  for (float v : losses)
    sum += static_cast<double>(v);
  return static_cast<float>(sum / static_cast<double>(losses.size()));
}

void DeviceTransformerBlock::step(float lr) {
  impl_->use_device();
  impl_->adam_step(lr);
}

void DeviceTransformerBlock::upload_tokens(const int* host_tokens) {
  impl_->use_device();
  impl_->upload_tokens(host_tokens);
}

std::vector<float> DeviceTransformerBlock::time_training_steps(int warmup, int reps, float lr) {
  impl_->use_device();
  return impl_->time(warmup, reps, false, lr);
}

void DeviceTransformerBlock::randomize_layer_io(uint64_t seed) {
  Impl& m = *impl_;
  m.use_device();
  const std::size_t th = static_cast<std::size_t>(m.T) * static_cast<std::size_t>(m.h);
  m.fill_uniform(m.resid[0], th, seed * 2 + 1, 1.f);
  m.fill_uniform(m.dtop, th, seed * 2 + 2, 1.f);
  synchronize();
}

void DeviceTransformerBlock::layer_stack_forward_backward() {
  impl_->use_device();
  impl_->layers_forward();
  impl_->layers_backward(impl_->dtop);
}

std::vector<float> DeviceTransformerBlock::time_layer_stack(int warmup, int reps) {
  impl_->use_device();
  return impl_->time(warmup, reps, true, 0.f);
}

std::vector<std::vector<OpTime>> DeviceTransformerBlock::time_layer_stack_ops(int warmup,
                                                                              int reps) {
  impl_->use_device();
  return impl_->time_ops(warmup, reps);
}

void DeviceTransformerBlock::synchronize() const {
  impl_->use_device();
  check(cudaStreamSynchronize(impl_->stream), "cudaStreamSynchronize");
}

}  // namespace tauplan::exec::cuda
