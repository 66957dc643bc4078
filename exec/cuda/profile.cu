// profile.cu: tauplan_cuda_profile, the GPU's compute profile (model/compute/profile_file.hpp):
// bf16 GEMMs at the shapes the compute model asks for, the math path's attention products as
// the CUDA block runs them (batched_gemms), the memory bandwidth memory-bound kernels reach (a
// streaming pass, and the block's own kernels of each kind: memory_kernels), the per-kernel
// launch overhead, and attention samples measured by exec/cuda/pytorch_attention.py.
//
//   tauplan_cuda_profile --shapes FILE --out PROFILE.json --peak-flops F --peak-source TEXT
//                        --source TEXT [--attention ATTN.jsonl] [--reps R] [--budget-s S]
//                        [--batched-budget-s S]
//   tauplan_cuda_profile --device-name          (prints the device's name)
//   ... --synthetic: no GPU; made-up timings (60% of peak, 50% for batched products, made-up
//       kernel bandwidths) through the same writing and reading-back path, to test the file on
//       a machine without a GPU (never a profile)
//
// FILE: one shape a line, `gemm M N K` (one bf16 GEMM C[M x N] = A[M x K] B[K x N], row-major)
// or `attention HEADS SEQ HEAD_DIM [causal|full]` (timed by pytorch_attention.py; skipped
// here); `#` starts a comment; identical GEMM shapes are measured once.
//
// GEMMs: cublasGemmEx, A, B and C in CUDA_R_16BF, CUBLAS_COMPUTE_32F, default algorithm, a
// 32 MiB cuBLAS workspace. Row-major C = A B is column-major C^T = B^T A^T: GemmEx(N, N, n=N,
// m=M, k=K, B, ldb=N, A, lda=K, C, ldc=N). Operands hold random values in [-1, 1) (never
// zeros: a GEMM on zeros runs faster). Each shape: two warm-up GEMMs, one timed to size the
// repetitions (R, fewer when R of them would exceed ~50 ms, at least 3), then a spin kernel
// that holds the stream while the host enqueues every repetition between its own pair of
// CUDA events; the median is the shape's time. Where one set of operands (A, B, C) is smaller
// than three times L2, the repetitions rotate over enough sets (2 to 64) to span three times
// L2, so the cache is not what is measured (the smallest shapes stay L2-resident even so). After
// timing, 8 entries of C (corners and random) are checked against a double-precision dot product on
// the device: |C - ref| <= 2^-7 |ref| + 2^-12 sum |a b| (bf16 output rounding and fp32
// accumulation; a wrong layout misses by O(|ref|)). The sweep stops after --budget-s seconds
// (default 80), the rest named on stderr.
//
// Batched GEMMs (the math path's attention products, which the compute model looks up in
// batched_gemms instead of as one stacked GEMM once the profile has them): the shapes file
// holds only their stacked form, so the cases come from the catalog's transformers (kCatalog
// below: one layer at t = 1, 2, 4, 8 and micro-batch 1, 2, 4, as model/ir/compute_shapes.cpp
// enumerates them), and each case's (count, m, n, k) is taken from layer_ops' op of that name
// (attention.scores, .context, .context.dvalues, .context.dprobs, .scores.dqueries,
// .scores.dkeys), checked against the product the block runs; a case is measured when its stacked
// GEMM [count m x k] x [k x n] is a line of the shapes file (so a smaller shapes file measures
// fewer). Each product is run exactly as exec/cuda/device_transformer.cu runs it: per sample and
// position within a K/V group one cublasGemmStridedBatchedEx over the K/V heads (cublasGemmEx when
// there is one), the block's transposes, leading dimensions, strides, scale, output type (bf16;
// fp32 for dP and, with grouped heads, dK and dV, which accumulate over the group with beta = 1).
// A sample's seconds are the mean over the layer's products of that shape (scores and dP share
// [s x s x d]; P V, dV, dQ and dK share [s x d x s]), each product timed over all its calls as
// the GEMMs above are (reps, L2 rotation, median). Every product is checked first: C poisoned,
// the first call run, 8 entries of its batch members checked as above. Shapes that several cases
// share are measured once (the first case: micro-batch 1 first, GPT-3 175B and Llama-3-70B
// first). The sweep stops after --batched-budget-s seconds (default 40).
//
// Memory: a copy kernel (16-byte loads and stores, 1 GiB to 1 GiB) and a read-2-write-1 kernel
// (c = a + 1.5 b over three 1 GiB arrays of float4), bytes read plus written over the median time
// of 10; memory_bandwidth_Bps is the lower of the two (cudaMemcpy D2D's figure is reported in
// `source` only). memory_kernels: the block's own memory-bound launches (norm forward and
// backward, causal softmax and its backward, GELU or SwiGLU and its backward, the residual
// copies), timed inside its layer pass (DeviceTransformerBlock::time_layer_stack_ops: CUDA events
// between consecutive launches, median of 5 passes after 2) in one layer of GPT-3 175B and of
// Llama-3-70B at t = 1 and 8, micro-batch 1. Each launch's bytes are those layer_ops counts for
// the op it runs (found by name), its kind the MemoryKernel layer_ops tags that op with (the
// variants: layer_norm and gelu in GPT-3's layer, rms_norm and swiglu in Llama's; the families
// norm and activation are not written); a kind's figure is its bytes over its seconds in a
// layer, the median over the layers that run it. The norm backward also adds the residual
// gradient (layer_ops' residualN.backward, an elementwise op with no launch of its own): that op
// is charged at the elementwise rate the residual copies reached in the same layer, as the
// compute model will charge it, and the rest of the launch is the norm's (not subtracted where
// the charge would exceed 3/4 of the launch, said so on stdout). The same passes' attention
// products are printed beside the batched sweep's (a check, not written to the profile).
// Launch overhead: empty kernels launched back to back, 1000 per trial, host clock from the first
// launch to the stream's completion, median of 11 trials over 1000 (the host submit time alone
// is reported in `source`).
// Attention: the JSON lines of --attention with kernel, phase, heads, sequence, head_dim,
// causal and seconds; other lines (notes, skips) are ignored. Without flash samples forward and
// backward, default_attention_efficiency is written too: the median efficiency of the measured
// GEMMs with M, N, K >= 1024, an assumption that `source` states.
// The profile is written with exactly the keys of profile_file.hpp and read back with
// read_compute_profile, which must accept it. Prints one JSON line per measurement on stdout.
// What it leaves out: the in-block cache state of the GEMMs (operands rotate past L2 instead),
// the block's interleaving of dV with dP and of dQ with dK (each product is timed in a loop of
// its own), memory-bound kernels outside those two models' layers (the median is carried to
// every shape), launches the compute model has no op for (bf16 casts: not counted).
// Exit 0 on success, 77 without a GPU, 2 on a bad argument or shapes file, 1 on a CUDA or
// cuBLAS error, a failed GEMM or batched GEMM check, a memory-kernel layer that fails, a
// kCatalog case layer_ops disagrees with, or a profile that does not read back (as written).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "exec/cuda/cuda_backend.hpp"
#include "exec/cuda/device_transformer.hpp"
#include "exec/transformer_config.hpp"
#include "model/compute/compute_profile.hpp"
#include "model/compute/layer_ops.hpp"
#include "model/compute/profile_file.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kAlign = 256;
constexpr std::size_t kBlasWorkspaceBytes = std::size_t{32} << 20;
constexpr int kMaxSets = 64;
constexpr int kChecks = 8;
constexpr double kShapeBudgetS = 0.05;
constexpr int kThreads = 256;

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr, "tauplan_cuda_profile: error: %s\n", message.c_str());
  std::exit(2);
}

void check(cudaError_t code, const char* what) {
  if (code != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " +
                             cudaGetErrorString(code));
}

void check_launch(const char* what) {
  check(cudaGetLastError(), what);
}

void check_blas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error ") +
                             std::to_string(static_cast<int>(status)) + " (" +
                             cublasGetStatusString(status) + ") in " + what);
}

std::size_t align_up(std::size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// ------------------------------------------------------------------------------- kernels

__device__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1), a different value for every index.
__global__ void fill_random_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const auto bits = static_cast<std::uint32_t>(splitmix64(seed ^ (i * 0x2545f4914f6cdd1dull)));
    const float u = static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);  // [0, 1)
    p[i] = __float2bfloat16(2.f * u - 1.f);
  }
}

__global__ void fill_random_f32(float* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const auto bits = static_cast<std::uint32_t>(splitmix64(seed ^ (i * 0x2545f4914f6cdd1dull)));
    p[i] = static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
  }
}

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void triad_kernel(const float4* __restrict__ a, const float4* __restrict__ b,
                             float4* __restrict__ c, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + 1.5f * y.x, x.y + 1.5f * y.y, x.z + 1.5f * y.z, x.w + 1.5f * y.w);
  }
}

__global__ void empty_kernel() {}

// Holds the stream for `ns` nanoseconds (the global timer), so that the host can enqueue a
// whole sequence of timed work before the device reaches it.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// Sums each thread's `dot` and `abs` over the block (a power-of-two number of threads) into
// s_dot[0] and s_abs[0].
__device__ void block_sums(double dot, double abs, double* s_dot, double* s_abs) {
  s_dot[threadIdx.x] = dot;
  s_abs[threadIdx.x] = abs;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      s_dot[threadIdx.x] += s_dot[threadIdx.x + stride];
      s_abs[threadIdx.x] += s_abs[threadIdx.x + stride];
    }
    __syncthreads();
  }
}

// One block per checked entry (i, j) of row-major C = A B: the double-precision dot product
// of A's row i and B's column j, and the sum of |a b| (the error bound's scale).
__global__ void reference_entries(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                  const __nv_bfloat16* c, int n, int k, const int* rows,
                                  const int* cols, double* ref, double* abs_sum, float* got) {
  __shared__ double s_dot[kThreads], s_abs[kThreads];
  const std::size_t i = static_cast<std::size_t>(rows[blockIdx.x]);
  const std::size_t j = static_cast<std::size_t>(cols[blockIdx.x]);
  double dot = 0, abs = 0;
  for (int p = static_cast<int>(threadIdx.x); p < k; p += blockDim.x) {
    const double x = __bfloat162float(a[i * static_cast<std::size_t>(k) + p]);
    const double y = __bfloat162float(b[static_cast<std::size_t>(p) * n + j]);
    dot += x * y;
    abs += fabs(x * y);
  }
  block_sums(dot, abs, s_dot, s_abs);
  if (threadIdx.x == 0) {
    ref[blockIdx.x] = s_dot[0];
    abs_sum[blockIdx.x] = s_abs[0];
    got[blockIdx.x] = __bfloat162float(c[i * static_cast<std::size_t>(n) + j]);
  }
}

// The same check for one call of a (strided batched) product as device_transformer.cu writes
// them: row-major C_g [M x N] = alpha op(A_g) op(B_g), member g at A + g sa (B, C likewise),
// op(A)(i, p) = ta ? A[p lda + i] : A[i lda + p], op(B)(p, j) = tb ? B[j ldb + p] : B[p ldb + j];
// C in bf16 or fp32. One block per checked entry (member, row, col).
struct StridedOperand {
  const __nv_bfloat16* base;
  long long ld, stride;
  bool trans;
};

__global__ void reference_strided_entries(StridedOperand a, StridedOperand b, const void* c,
                                          bool c_fp32, long long ldc, long long sc, int k,
                                          double alpha, const int* members, const int* rows,
                                          const int* cols, double* ref, double* abs_sum,
                                          float* got) {
  __shared__ double s_dot[kThreads], s_abs[kThreads];
  const long long g = members[blockIdx.x], i = rows[blockIdx.x], j = cols[blockIdx.x];
  const __nv_bfloat16* ag = a.base + g * a.stride;
  const __nv_bfloat16* bg = b.base + g * b.stride;
  double dot = 0, abs = 0;
  for (long long p = threadIdx.x; p < k; p += blockDim.x) {
    const double x = __bfloat162float(a.trans ? ag[p * a.ld + i] : ag[i * a.ld + p]);
    const double y = __bfloat162float(b.trans ? bg[j * b.ld + p] : bg[p * b.ld + j]);
    dot += x * y;
    abs += fabs(x * y);
  }
  block_sums(dot, abs, s_dot, s_abs);
  if (threadIdx.x == 0) {
    ref[blockIdx.x] = alpha * s_dot[0];
    abs_sum[blockIdx.x] = fabs(alpha) * s_abs[0];
    const long long at = g * sc + i * ldc + j;
    got[blockIdx.x] = c_fp32 ? static_cast<const float*>(c)[at]
                             : __bfloat162float(static_cast<const __nv_bfloat16*>(c)[at]);
  }
}

unsigned grid_for(std::size_t count, int sms) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(
      std::max<std::size_t>(1, std::min<std::size_t>(blocks, static_cast<std::size_t>(sms) * 32)));
}

// ------------------------------------------------------------------------------- input

struct Gemm {
  int m = 0, n = 0, k = 0;
};

struct Shapes {
  std::vector<Gemm> gemms;  ///< deduplicated, in first-seen order
  std::set<std::tuple<int, int, int>> gemm_set;
  int gemm_lines = 0;
  int attention_lines = 0;
  /// The models the header of a generated shapes file names (`... of the catalog's
  /// transformers: a, b, c.`); empty for a file without that header.
  std::vector<std::string> catalog_models;
};

/// The comma-separated names after `transformers:` up to the closing full stop.
std::vector<std::string> header_models(const std::string& comment) {
  const std::string tag = "catalog's transformers:";
  std::vector<std::string> names;
  const auto at = comment.find(tag);
  if (at == std::string::npos) return names;
  std::string list = comment.substr(at + tag.size());
  const auto stop = list.rfind('.');
  if (stop != std::string::npos) list.resize(stop);
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t\r");
    if (first != std::string::npos) names.push_back(item.substr(first, last - first + 1));
  }
  return names;
}

Shapes read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage("--shapes: cannot read " + path);
  Shapes shapes;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) {
      if (shapes.catalog_models.empty()) shapes.catalog_models = header_models(line.substr(hash));
      line.resize(hash);
    }
    std::istringstream words(line);
    std::string kind;
    if (!(words >> kind)) continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (kind == "attention") {
      ++shapes.attention_lines;
      continue;
    }
    if (kind != "gemm") usage(where + "expected `gemm M N K` or `attention ...`, got " + kind);
    long long m = 0, n = 0, k = 0;
    std::string extra;
    if (!(words >> m >> n >> k) || (words >> extra) || m < 1 || n < 1 || k < 1 || m > INT_MAX ||
        n > INT_MAX || k > INT_MAX)
      usage(where + "expected `gemm M N K` with three positive integers");
    ++shapes.gemm_lines;
    const auto key = std::make_tuple(static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
    if (shapes.gemm_set.insert(key).second)
      shapes.gemms.push_back({static_cast<int>(m), static_cast<int>(n), static_cast<int>(k)});
  }
  return shapes;
}

struct AttentionLines {
  nlohmann::ordered_json samples = nlohmann::ordered_json::array();
  int ignored = 0;
};

AttentionLines read_attention(const std::string& path) {
  AttentionLines out;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "tauplan_cuda_profile: warning: cannot read --attention %s\n",
                 path.c_str());
    return out;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    const bool usable =
        !j.is_discarded() && j.is_object() && j.contains("seconds") && j.contains("kernel") &&
        j.contains("phase") && j.contains("heads") && j.contains("sequence") &&
        j.contains("head_dim") && j.contains("causal") && j["seconds"].is_number() &&
        j["heads"].is_number() && j["sequence"].is_number() && j["head_dim"].is_number() &&
        j["causal"].is_boolean() && j["kernel"].is_string() && j["phase"].is_string() &&
        (j["kernel"] == "flash" || j["kernel"] == "math") &&
        (j["phase"] == "forward" || j["phase"] == "backward") && j["seconds"].get<double>() > 0;
    if (!usable) {
      ++out.ignored;
      continue;
    }
    nlohmann::ordered_json s;
    s["kernel"] = j["kernel"];
    s["phase"] = j["phase"];
    s["heads"] = j["heads"];
    s["sequence"] = j["sequence"];
    s["head_dim"] = j["head_dim"];
    s["causal"] = j["causal"];
    s["seconds"] = j["seconds"];
    out.samples.push_back(s);
  }
  return out;
}

// ------------------------------------------------------------------------------- timing

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

struct Device {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  int sms = 1;
  std::size_t l2_bytes = 50u << 20;
  std::string name;

  Device() {
    check(cudaSetDevice(0), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    name = prop.name;
    sms = std::max(1, prop.multiProcessorCount);
    if (prop.l2CacheSize > 0) l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_blas(cublasCreate(&blas), "cublasCreate");
    check_blas(cublasSetStream(blas, stream), "cublasSetStream");
    check(cudaMalloc(&workspace, kBlasWorkspaceBytes), "cudaMalloc (cuBLAS workspace)");
    check_blas(cublasSetWorkspace(blas, workspace, kBlasWorkspaceBytes), "cublasSetWorkspace");
  }
  ~Device() {
    cudaStreamSynchronize(stream);
    cublasDestroy(blas);
    cudaFree(workspace);
    cudaStreamDestroy(stream);
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  void sync() const { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }
  void spin(double seconds) const {
    spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(seconds * 1e9));
    check_launch("spin kernel");
  }
};

template <typename T>
T* device_alloc(std::size_t bytes, const char* what) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), what);
  return static_cast<T*>(p);
}

/// The device memory an arena of operand sets may take: the free memory less 2 GiB.
std::size_t arena_limit() {
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const std::size_t margin = std::size_t{2} << 30;
  return free_bytes > margin ? free_bytes - margin : 0;
}

/// The kChecks checked entries' buffers on the device (rows and columns, reference, sum of
/// |a b|, result), shared by the GEMM and the batched GEMM benchmarks.
void alloc_check_buffers(int*& rows, int*& cols, double*& ref, double*& abs_sum, float*& got) {
  rows = device_alloc<int>(kChecks * sizeof(int), "cudaMalloc (check rows)");
  cols = device_alloc<int>(kChecks * sizeof(int), "cudaMalloc (check cols)");
  ref = device_alloc<double>(kChecks * sizeof(double), "cudaMalloc (check ref)");
  abs_sum = device_alloc<double>(kChecks * sizeof(double), "cudaMalloc (check abs)");
  got = device_alloc<float>(kChecks * sizeof(float), "cudaMalloc (check got)");
}

/// Events around each of `reps` calls of `work(rep)`, enqueued behind a spin kernel; the
/// median time of one call, in seconds.
template <typename Work>
double time_events(const Device& dev, int reps, double spin_s, Work&& work) {
  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(reps));
  for (cudaEvent_t& e : events)
    check(cudaEventCreate(&e), "cudaEventCreate");
  std::vector<double> times;
  try {
    dev.spin(spin_s);
    for (int r = 0; r < reps; ++r) {
      check(cudaEventRecord(events[2 * static_cast<std::size_t>(r)], dev.stream),
            "cudaEventRecord");
      work(r);
      check(cudaEventRecord(events[2 * static_cast<std::size_t>(r) + 1], dev.stream),
            "cudaEventRecord");
    }
    dev.sync();
    for (int r = 0; r < reps; ++r) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events[2 * static_cast<std::size_t>(r)],
                                 events[2 * static_cast<std::size_t>(r) + 1]),
            "cudaEventElapsedTime");
      times.push_back(static_cast<double>(ms) * 1e-3);
    }
  } catch (...) {
    for (cudaEvent_t e : events)
      cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events)
    cudaEventDestroy(e);
  return median(times);
}

struct Bandwidth {
  double copy_Bps = 0, triad_Bps = 0, memcpy_Bps = 0;
};

Bandwidth measure_bandwidth(const Device& dev) {
  const std::size_t bytes = std::size_t{1} << 30;
  Bandwidth bw;
  float* a = device_alloc<float>(bytes, "cudaMalloc (bandwidth a)");
  float* b = nullptr;
  float* c = nullptr;
  try {
    b = device_alloc<float>(bytes, "cudaMalloc (bandwidth b)");
    c = device_alloc<float>(bytes, "cudaMalloc (bandwidth c)");
    const std::size_t floats = bytes / sizeof(float);
    fill_random_f32<<<grid_for(floats, dev.sms), kThreads, 0, dev.stream>>>(a, floats, 11);
    check_launch("fill (bandwidth a)");
    fill_random_f32<<<grid_for(floats, dev.sms), kThreads, 0, dev.stream>>>(b, floats, 12);
    check_launch("fill (bandwidth b)");
    const std::size_t n16 = bytes / 16;
    const unsigned grid = static_cast<unsigned>(dev.sms) * 8;
    auto copy = [&](int) {
      copy_kernel<<<grid, kThreads, 0, dev.stream>>>(reinterpret_cast<const uint4*>(a),
                                                     reinterpret_cast<uint4*>(c), n16);
      check_launch("copy kernel");
    };
    auto triad = [&](int) {
      triad_kernel<<<grid, kThreads, 0, dev.stream>>>(reinterpret_cast<const float4*>(a),
                                                      reinterpret_cast<const float4*>(b),
                                                      reinterpret_cast<float4*>(c), n16);
      check_launch("read-2-write-1 kernel");
    };
    auto memcpy_d2d = [&](int) {
      check(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice, dev.stream),
            "cudaMemcpyAsync D2D");
    };
    for (int w = 0; w < 2; ++w) {
      copy(0);
      triad(0);
      memcpy_d2d(0);
    }
    dev.sync();
    bw.copy_Bps = 2.0 * static_cast<double>(bytes) / time_events(dev, 10, 1e-4, copy);
    bw.triad_Bps = 3.0 * static_cast<double>(bytes) / time_events(dev, 10, 1e-4, triad);
    bw.memcpy_Bps = 2.0 * static_cast<double>(bytes) / time_events(dev, 10, 1e-4, memcpy_d2d);
  } catch (...) {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    throw;
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return bw;
}

struct Launch {
  double per_kernel_s = 0;  ///< back to back, to the stream's completion
  double submit_s = 0;      ///< host submit alone
};

Launch measure_launch(const Device& dev) {
  constexpr int kPerTrial = 1000, kTrials = 11;
  for (int i = 0; i < 100; ++i) {
    empty_kernel<<<1, 1, 0, dev.stream>>>();
    check_launch("empty kernel");
  }
  dev.sync();
  std::vector<double> total, submit;
  for (int t = 0; t < kTrials; ++t) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kPerTrial; ++i) {
      empty_kernel<<<1, 1, 0, dev.stream>>>();
      check_launch("empty kernel");
    }
    const auto t1 = Clock::now();
    dev.sync();
    const auto t2 = Clock::now();
    submit.push_back(std::chrono::duration<double>(t1 - t0).count() / kPerTrial);
    total.push_back(std::chrono::duration<double>(t2 - t0).count() / kPerTrial);
  }
  return {median(total), median(submit)};
}

// The kChecks checked entries downloaded (reference, sum of |a b|, result): the largest
// |C - ref| / bound over them (infinite once one is not finite).
double worst_error_ratio(const Device& dev, const double* ref_d, const double* abs_d,
                         const float* got_d) {
  double ref[kChecks], abs_sum[kChecks];
  float got[kChecks];
  check(cudaMemcpyAsync(ref, ref_d, sizeof ref, cudaMemcpyDeviceToHost, dev.stream),
        "download ref");
  check(cudaMemcpyAsync(abs_sum, abs_d, sizeof abs_sum, cudaMemcpyDeviceToHost, dev.stream),
        "download abs");
  check(cudaMemcpyAsync(got, got_d, sizeof got, cudaMemcpyDeviceToHost, dev.stream),
        "download got");
  dev.sync();
  double worst = 0;
  for (int i = 0; i < kChecks; ++i) {
    const double bound = std::ldexp(std::fabs(ref[i]), -7) + std::ldexp(abs_sum[i], -12) + 1e-6;
    const double error = std::fabs(static_cast<double>(got[i]) - ref[i]);
    worst = std::isfinite(error) ? std::max(worst, error / bound)
                                 : std::numeric_limits<double>::infinity();
  }
  return worst;
}

struct GemmResult {
  Gemm shape;
  double seconds = 0;
  int reps = 0, sets = 0;
  double max_error_ratio = 0;  ///< max over the checked entries of |C - ref| / bound
};

class GemmBench {
 public:
  GemmBench(const Device& dev, const std::vector<Gemm>& shapes) : dev_(dev) {
    // One arena for every shape's operand sets, as large as the largest shape needs, within
    // the free memory less 2 GiB (fewer sets, or no measurement, for shapes beyond it).
    const std::size_t limit = arena_limit();
    for (const Gemm& g : shapes)
      arena_bytes_ = std::max(arena_bytes_, set_bytes(g) * static_cast<std::size_t>(ideal_sets(g)));
    arena_bytes_ = std::min(arena_bytes_, limit);
    arena_ = device_alloc<__nv_bfloat16>(arena_bytes_, "cudaMalloc (GEMM operands)");
    alloc_check_buffers(rows_, cols_, ref_, abs_, got_);
    dev.sync();
  }
  ~GemmBench() {
    cudaStreamSynchronize(dev_.stream);
    for (void* p :
         {static_cast<void*>(arena_), static_cast<void*>(rows_), static_cast<void*>(cols_),
          static_cast<void*>(ref_), static_cast<void*>(abs_), static_cast<void*>(got_)})
      cudaFree(p);
  }
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;

  std::size_t arena_bytes() const { return arena_bytes_; }

  /// False when one set of the shape's operands does not fit the arena.
  bool fits(const Gemm& g) const { return set_bytes(g) <= arena_bytes_; }

  /// Fresh random operands; one warm-up GEMM, its C checked (poisoned before); one GEMM timed to
  /// size the repetitions; the timed repetitions.
  GemmResult run(const Gemm& g, int max_reps, std::uint64_t seed) {
    GemmResult r;
    r.shape = g;
    r.sets = sets_for(g);
    const std::size_t elements = set_bytes(g) * static_cast<std::size_t>(r.sets) / 2;
    fill_random_bf16<<<grid_for(elements, dev_.sms), kThreads, 0, dev_.stream>>>(arena_, elements,
                                                                                 seed);
    check_launch("fill (GEMM operands)");
    r.max_error_ratio = warm_up_and_verify(g);
    auto gemm = [&](int rep) { enqueue(g, rep % r.sets); };
    const double estimate = time_events(dev_, 1, 1e-5, [&](int) { enqueue(g, 1 % r.sets); });
    r.reps = static_cast<int>(std::clamp(std::floor(kShapeBudgetS / std::max(estimate, 1e-7)), 3.0,
                                         static_cast<double>(std::max(3, max_reps))));
    // Long enough for the host to enqueue every repetition (~10 us each) before the device
    // reaches the first.
    const double spin_s = std::min(5e-3, 2e-4 + 1.5e-5 * r.reps);
    r.seconds = time_events(dev_, r.reps, spin_s, gemm);
    return r;
  }

 private:
  static std::size_t set_bytes(const Gemm& g) {
    const auto m = static_cast<std::size_t>(g.m), n = static_cast<std::size_t>(g.n),
               k = static_cast<std::size_t>(g.k);
    return align_up(m * k * 2) + align_up(k * n * 2) + align_up(m * n * 2);
  }
  // Sets spanning 3 x L2 (2 to kMaxSets), or 1 for a set larger than that.
  int ideal_sets(const Gemm& g) const {
    const std::size_t bytes = set_bytes(g);
    const std::size_t span = 3 * dev_.l2_bytes;
    if (bytes >= span) return 1;
    return static_cast<int>(std::clamp<std::size_t>((span + bytes - 1) / bytes, 2, kMaxSets));
  }
  int sets_for(const Gemm& g) const {
    const std::size_t room = arena_bytes_ / set_bytes(g);
    return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(room, ideal_sets(g))));
  }
  struct Operands {
    __nv_bfloat16 *a, *b, *c;
  };
  Operands operands(const Gemm& g, int set) const {
    const auto m = static_cast<std::size_t>(g.m), n = static_cast<std::size_t>(g.n),
               k = static_cast<std::size_t>(g.k);
    char* base = reinterpret_cast<char*>(arena_) + set_bytes(g) * static_cast<std::size_t>(set);
    Operands o{};
    o.a = reinterpret_cast<__nv_bfloat16*>(base);
    o.b = reinterpret_cast<__nv_bfloat16*>(base + align_up(m * k * 2));
    o.c = reinterpret_cast<__nv_bfloat16*>(base + align_up(m * k * 2) + align_up(k * n * 2));
    return o;
  }
  void enqueue(const Gemm& g, int set) const {
    const Operands o = operands(g, set);
    const float one = 1.f, zero = 0.f;
    // Row-major C[M x N] = A[M x K] B[K x N] is column-major C^T = B^T A^T.
    check_blas(cublasGemmEx(dev_.blas, CUBLAS_OP_N, CUBLAS_OP_N, g.n, g.m, g.k, &one, o.b,
                            CUDA_R_16BF, g.n, o.a, CUDA_R_16BF, g.k, &zero, o.c, CUDA_R_16BF, g.n,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (bf16)");
  }
  // One GEMM on set 0 (C poisoned first), then the largest |C - ref| / bound over kChecks
  // entries of its C.
  double warm_up_and_verify(const Gemm& g) {
    std::vector<int> rows{0, g.m - 1, 0, g.m - 1}, cols{0, 0, g.n - 1, g.n - 1};
    std::mt19937 rng(static_cast<unsigned>(g.m * 31 + g.n * 17 + g.k));
    while (rows.size() < kChecks) {
      rows.push_back(static_cast<int>(rng() % static_cast<unsigned>(g.m)));
      cols.push_back(static_cast<int>(rng() % static_cast<unsigned>(g.n)));
    }
    const Operands o = operands(g, 0);
    check(cudaMemsetAsync(o.c, 0xff, static_cast<std::size_t>(g.m) * g.n * 2, dev_.stream),
          "cudaMemset (poison C)");  // 0xffff is a bf16 NaN: an unwritten entry fails
    enqueue(g, 0);  // overwrites the poison: no NaN is left for the next shape's operands
    check(cudaMemcpyAsync(rows_, rows.data(), kChecks * sizeof(int), cudaMemcpyHostToDevice,
                          dev_.stream),
          "upload check rows");
    check(cudaMemcpyAsync(cols_, cols.data(), kChecks * sizeof(int), cudaMemcpyHostToDevice,
                          dev_.stream),
          "upload check cols");
    reference_entries<<<kChecks, kThreads, 0, dev_.stream>>>(o.a, o.b, o.c, g.n, g.k, rows_, cols_,
                                                             ref_, abs_, got_);
    check_launch("reference entries");
    return worst_error_ratio(dev_, ref_, abs_, got_);
  }

  const Device& dev_;
  std::size_t arena_bytes_ = 0;
  __nv_bfloat16* arena_ = nullptr;
  int *rows_ = nullptr, *cols_ = nullptr;
  double *ref_ = nullptr, *abs_ = nullptr;
  float* got_ = nullptr;
};

// ------------------------------------------------------------------------------- catalog

namespace tm = tauplan::model;
using tauplan::exec::BlockConfig;

// The catalog's transformers (model/catalog/workloads/*.yaml: the models whose shapes
// exec/cuda/profile_shapes.txt lists, its header names them), as far as their attention core and
// memory-bound kernels go. The GPU machine builds no YAML reader, hence this copy; it is checked
// against the shapes file at run time (the header's names, and every derived case's stacked
// GEMM being a line of the file). GPT-3 175B and Llama-3-70B first: the layers the block's
// timings are compared on.
struct CatalogModel {
  const char* name;
  int hidden, heads, kv_heads, ffn_hidden, sequence;
  bool swiglu, layer_norm;
};

constexpr CatalogModel kCatalog[] = {
    {"gpt3-175b", 12288, 96, 96, 49152, 2048, false, true},
    {"llama3-70b", 8192, 64, 8, 28672, 8192, true, false},
    {"bert-large", 1024, 16, 16, 4096, 128, false, true},
    {"gpt2-large", 1280, 20, 20, 5120, 1024, false, true},
    {"gpt2-medium", 1024, 16, 16, 4096, 1024, false, true},
    {"gpt2-small", 768, 12, 12, 3072, 1024, false, true},
    {"gpt2-xl", 1600, 25, 25, 6400, 1024, false, true},
    {"llama2-70b", 8192, 64, 8, 28672, 4096, true, false},
    {"llama2-7b", 4096, 32, 32, 11008, 4096, true, false},
};

const CatalogModel& catalog_model(const std::string& name) {
  for (const CatalogModel& m : kCatalog)
    if (name == m.name) return m;
  throw std::logic_error("profile.cu: no catalog model " + name);
}

/// One layer of `model` on one of `tensor` ranks, `micro_batch` sequences (no head: vocabulary 8).
BlockConfig block_config(const CatalogModel& model, int tensor, int micro_batch) {
  BlockConfig c;
  c.vocabulary = 8;
  c.hidden = model.hidden;
  c.heads = model.heads;
  c.kv_heads = model.kv_heads;
  c.ffn_hidden = model.ffn_hidden;
  c.layers = 1;
  c.sequence = model.sequence;
  c.micro_batch = micro_batch;
  c.tensor = tensor;
  c.norm =
      model.layer_norm ? tauplan::exec::BlockNorm::LayerNorm : tauplan::exec::BlockNorm::RmsNorm;
  c.feed_forward = model.swiglu ? tauplan::exec::BlockFeedForward::SwiGlu
                                : tauplan::exec::BlockFeedForward::Gelu;
  return c;
}

/// The compute model's shape of that layer (math attention, bf16 activations).
tm::LayerShape layer_shape(const BlockConfig& c) {
  tm::LayerShape s;
  s.hidden = c.hidden;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.ffn_hidden = c.ffn_hidden;
  s.swiglu = c.feed_forward == tauplan::exec::BlockFeedForward::SwiGlu;
  s.layer_norm = c.norm == tauplan::exec::BlockNorm::LayerNorm;
  s.sequence = c.sequence;
  s.micro_batch = c.micro_batch;
  s.tensor = c.tensor;
  s.sequence_parallel = false;
  s.attention = tm::AttentionKernel::Math;
  s.element_bytes = 2;
  return s;
}

/// The op of layer_ops (Recompute::None: every name once) called `name`, or null.
const tm::ComputeOp* find_op(const std::vector<tm::ComputeOp>& ops, const std::string& name) {
  for (const tm::ComputeOp& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

// ------------------------------------------------------------------------------- batched GEMMs

// The math path's six attention products, each with the layer_ops op it is and the label
// device_transformer.cu gives its launches.
enum class Form { Scores, Context, DValues, DProbs, DQueries, DKeys };

struct FormInfo {
  Form form;
  const char* model_op;
  const char* block_label;
};

constexpr FormInfo kForms[] = {
    {Form::Scores, "attention.scores", "attention scores Q K^T"},
    {Form::Context, "attention.context", "attention P V"},
    {Form::DValues, "attention.context.dvalues", "attention dV = P^T dO"},
    {Form::DProbs, "attention.context.dprobs", "attention dP = dO V^T"},
    {Form::DQueries, "attention.scores.dqueries", "attention dQ = dS K"},
    {Form::DKeys, "attention.scores.dkeys", "attention dK = dS^T Q"},
};

const FormInfo& form_info(Form f) {
  for (const FormInfo& info : kForms)
    if (info.form == f) return info;
  return kForms[0];
}

// The block's buffers the products read and write (device_transformer.cu's names): Q, K, V,
// G = dO (its dattn), P (scores, probabilities, dS: bf16 [b lh x s x s]), D = dP (fp32, same
// shape), O (attention output, and dQ), KV (dV or dK: bf16 with one query head per K/V head,
// else fp32).
enum Buffer { kQ, kK, kV, kG, kP, kD, kO, kKV, kBuffers };

/// One product in the block's row-major terms: C [M x N] = alpha op(A) [M x K] op(B) [K x N]
/// (+ C for the group's later query heads where `accumulate`); M = s, and N = s, K = d
/// (`square`) or N = d, K = s.
struct FormSpec {
  bool ta, tb;
  Buffer a, b, c;
  bool scaled;      ///< alpha = 1 / sqrt(d), else 1
  bool accumulate;  ///< beta = 1 for r > 0 (dV, dK over a K/V group)
  bool square;
};

FormSpec spec(Form f) {
  switch (f) {
    case Form::Scores:  // S = Q K^T / sqrt(d)
      return {false, true, kQ, kK, kP, true, false, true};
    case Form::Context:  // O = P V
      return {false, false, kP, kV, kO, false, false, false};
    case Form::DValues:  // dV (+)= P^T dO
      return {true, false, kP, kG, kKV, false, true, false};
    case Form::DProbs:  // dP = dO V^T, fp32
      return {false, true, kG, kV, kD, false, false, true};
    case Form::DQueries:  // dQ = dS K / sqrt(d)
      return {false, false, kP, kK, kO, true, false, false};
    case Form::DKeys:  // dK (+)= dS^T Q / sqrt(d)
      return {true, false, kP, kQ, kKV, true, true, false};
  }
  return {};
}

/// One rank's attention core as the block holds it: b samples, lh query heads, lkv K/V heads,
/// sequence s, head width d.
struct AttentionCore {
  int b = 0, lh = 0, lkv = 0, s = 0, d = 0;
  int group() const { return lh / lkv; }
  long long qw() const { return static_cast<long long>(lh) * d; }
  long long kvw() const { return static_cast<long long>(lkv) * d; }

  // device_transformer.cu's layout: leading dimension, member stride and the element offset
  // of call (sample bi, position r within the group) of each buffer.
  long long ld(Buffer x) const {
    switch (x) {
      case kQ:
      case kG:
      case kO:
        return qw();
      case kK:
      case kV:
      case kKV:
        return kvw();
      default:
        return s;
    }
  }
  long long stride(Buffer x) const {
    switch (x) {
      case kQ:
      case kG:
      case kO:
        return static_cast<long long>(group()) * d;
      case kK:
      case kV:
      case kKV:
        return d;
      default:
        return static_cast<long long>(group()) * s * s;
    }
  }
  std::size_t offset(Buffer x, int bi, int r) const {
    const auto S = static_cast<std::size_t>(s);
    switch (x) {
      case kQ:
      case kG:
      case kO:
        return static_cast<std::size_t>(bi) * S * static_cast<std::size_t>(qw()) +
               static_cast<std::size_t>(r) * static_cast<std::size_t>(d);
      case kK:
      case kV:
      case kKV:
        return static_cast<std::size_t>(bi) * S * static_cast<std::size_t>(kvw());
      default:
        return (static_cast<std::size_t>(bi) * static_cast<std::size_t>(lh) +
                static_cast<std::size_t>(r)) *
               S * S;
    }
  }
  std::size_t elements(Buffer x) const {
    const auto S = static_cast<std::size_t>(s), B = static_cast<std::size_t>(b);
    switch (x) {
      case kQ:
      case kG:
      case kO:
        return B * S * static_cast<std::size_t>(qw());
      case kK:
      case kV:
      case kKV:
        return B * S * static_cast<std::size_t>(kvw());
      default:
        return B * static_cast<std::size_t>(lh) * S * S;
    }
  }
  bool fp32(Buffer x) const { return x == kD || (x == kKV && group() > 1); }
  std::size_t element_bytes(Buffer x) const { return fp32(x) ? 4 : 2; }
};

/// The layer_ops ops of one layer that share one batched shape (count, m, n, k), and the
/// block's attention core that runs them.
struct BatchedCase {
  std::string model;
  int tensor = 0, micro_batch = 0;
  AttentionCore core;
  int count = 0, m = 0, n = 0, k = 0;
  std::vector<Form> forms;
  bool in_shapes = false;  ///< its stacked GEMM [count m x k] x [k x n] is a line of the file
  double flop() const { return 2.0 * count * static_cast<double>(m) * n * k; }
};

struct BatchedCases {
  std::vector<BatchedCase> cases;  ///< every distinct shape, first case kept
  int layers = 0;                  ///< (model, t, b) layers enumerated
  int shared = 0;                  ///< cases whose shape an earlier case has
};

/// The batched cases of the catalog's layers, t = 1, 2, 4, 8, micro-batch 1, 2, 4 (micro-batch
/// outermost). Throws where layer_ops' op is not the product the block runs (the two drifted).
BatchedCases batched_cases(const Shapes& shapes) {
  BatchedCases out;
  std::set<std::tuple<int, int, int, int>> seen;
  for (int b : {1, 2, 4})
    for (const CatalogModel& model : kCatalog)
      for (int t : {1, 2, 4, 8}) {
        const BlockConfig c = block_config(model, t, b);
        if (!c.problem().empty()) continue;
        const tm::LayerShape shape = layer_shape(c);
        if (!shape.problem().empty()) continue;
        ++out.layers;
        AttentionCore core;
        core.b = b;
        core.lh = c.local_heads();
        core.lkv = c.local_kv_heads();
        core.s = c.sequence;
        core.d = c.head_dim();
        const std::vector<tm::ComputeOp> ops = tm::layer_ops(shape, tm::Recompute::None);
        std::vector<BatchedCase> here;
        for (const FormInfo& f : kForms) {
          const FormSpec sp = spec(f.form);
          const int M = core.s, N = sp.square ? core.s : core.d, K = sp.square ? core.d : core.s;
          const tm::ComputeOp* op = find_op(ops, f.model_op);
          if (!op || op->kind != tm::ComputeOpKind::Gemm ||
              op->count != static_cast<double>(b) * core.lh || op->m != M || op->n != N ||
              op->k != K)
            throw std::runtime_error(
                std::string("layer_ops' ") + f.model_op + " of " + model.name +
                " (t = " + std::to_string(t) + ", micro-batch " + std::to_string(b) +
                ") is not the product the block runs (" + std::to_string(b * core.lh) + " x [" +
                std::to_string(M) + " x " + std::to_string(K) + "] x [" + std::to_string(K) +
                " x " + std::to_string(N) + "]): profile.cu and layer_ops.hpp disagree");
          auto it = std::find_if(here.begin(), here.end(), [&](const BatchedCase& x) {
            return x.m == M && x.n == N && x.k == K;
          });
          if (it == here.end()) {
            BatchedCase x;
            x.model = model.name;
            x.tensor = t;
            x.micro_batch = b;
            x.core = core;
            x.count = b * core.lh;
            x.m = M;
            x.n = N;
            x.k = K;
            here.push_back(x);
            it = here.end() - 1;
          }
          it->forms.push_back(f.form);
        }
        for (BatchedCase& x : here) {
          if (x.count < 2) continue;  // the compute model times a count of 1 as one GEMM
          if (!seen.insert({x.count, x.m, x.n, x.k}).second) {
            ++out.shared;
            continue;
          }
          x.in_shapes = shapes.gemm_set.count({x.count * x.m, x.n, x.k}) > 0;
          out.cases.push_back(x);
        }
      }
  return out;
}

struct BatchedResult {
  std::vector<double> form_seconds;  ///< per case.forms entry: all the block's calls of it
  double seconds = 0;                ///< the mean of form_seconds
  int reps = 0, sets = 0, calls = 0;
  double max_error_ratio = 0;
};

class BatchedBench {
 public:
  BatchedBench(const Device& dev, const std::vector<const BatchedCase*>& cases) : dev_(dev) {
    const std::size_t limit = arena_limit();
    for (const BatchedCase* c : cases)
      arena_bytes_ =
          std::max(arena_bytes_, layout(*c).set_bytes * static_cast<std::size_t>(ideal_sets(*c)));
    arena_bytes_ = std::min(arena_bytes_, limit);
    arena_ = device_alloc<char>(arena_bytes_, "cudaMalloc (batched GEMM operands)");
    members_ = device_alloc<int>(kChecks * sizeof(int), "cudaMalloc (check members)");
    alloc_check_buffers(rows_, cols_, ref_, abs_, got_);
    dev.sync();
  }
  ~BatchedBench() {
    cudaStreamSynchronize(dev_.stream);
    for (void* p : {static_cast<void*>(arena_), static_cast<void*>(members_),
                    static_cast<void*>(rows_), static_cast<void*>(cols_), static_cast<void*>(ref_),
                    static_cast<void*>(abs_), static_cast<void*>(got_)})
      cudaFree(p);
  }
  BatchedBench(const BatchedBench&) = delete;
  BatchedBench& operator=(const BatchedBench&) = delete;

  std::size_t arena_bytes() const { return arena_bytes_; }
  bool fits(const BatchedCase& c) const { return layout(c).set_bytes <= arena_bytes_; }

  /// Fresh random operands; per product: C poisoned, the first call checked, one full run
  /// (warm-up), one timed to size the repetitions, the timed repetitions.
  BatchedResult run(const BatchedCase& c, int max_reps, std::uint64_t seed) {
    const Layout lay = layout(c);
    BatchedResult r;
    r.sets = sets_for(c);
    r.calls = c.core.b * c.core.group();
    const std::size_t elements = lay.set_bytes * static_cast<std::size_t>(r.sets) / 2;
    fill_random_bf16<<<grid_for(elements, dev_.sms), kThreads, 0, dev_.stream>>>(
        reinterpret_cast<__nv_bfloat16*>(arena_), elements, seed);
    check_launch("fill (batched GEMM operands)");
    int reps_min = INT_MAX;
    for (Form f : c.forms) {
      r.max_error_ratio = std::max(r.max_error_ratio, verify(c, lay, f));
      run_form(c, lay, f, 0);  // warm-up; overwrites the poison left outside the first call
      const double estimate =
          time_events(dev_, 1, 1e-5, [&](int) { run_form(c, lay, f, 1 % r.sets); });
      const int reps =
          static_cast<int>(std::clamp(std::floor(kShapeBudgetS / std::max(estimate, 1e-7)), 3.0,
                                      static_cast<double>(std::max(3, max_reps))));
      const double spin_s = std::min(2e-2, 2e-4 + 1.5e-5 * reps * r.calls);
      r.form_seconds.push_back(
          time_events(dev_, reps, spin_s, [&](int rep) { run_form(c, lay, f, rep % r.sets); }));
      reps_min = std::min(reps_min, reps);
    }
    r.reps = reps_min;
    double sum = 0;
    for (double s : r.form_seconds)
      sum += s;
    r.seconds = sum / static_cast<double>(r.form_seconds.size());
    return r;
  }

 private:
  struct Layout {
    std::size_t offset[kBuffers] = {};
    std::size_t bytes[kBuffers] = {};
    std::size_t set_bytes = 0;
  };
  // The buffers c's products use, one after another (256-byte aligned), as one set.
  static Layout layout(const BatchedCase& c) {
    bool used[kBuffers] = {};
    for (Form f : c.forms) {
      const FormSpec sp = spec(f);
      used[sp.a] = used[sp.b] = used[sp.c] = true;
    }
    Layout lay;
    for (int x = 0; x < kBuffers; ++x) {
      if (!used[x]) continue;
      const auto buffer = static_cast<Buffer>(x);
      lay.offset[x] = lay.set_bytes;
      lay.bytes[x] = c.core.elements(buffer) * c.core.element_bytes(buffer);
      lay.set_bytes += align_up(lay.bytes[x]);
    }
    return lay;
  }
  int ideal_sets(const BatchedCase& c) const {
    const std::size_t bytes = layout(c).set_bytes;
    const std::size_t span = 3 * dev_.l2_bytes;
    if (bytes >= span) return 1;
    return static_cast<int>(std::clamp<std::size_t>((span + bytes - 1) / bytes, 2, kMaxSets));
  }
  int sets_for(const BatchedCase& c) const {
    const std::size_t room = arena_bytes_ / layout(c).set_bytes;
    return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(room, ideal_sets(c))));
  }
  char* at(const Layout& lay, const BatchedCase& c, Buffer x, int set, int bi, int r) const {
    return arena_ + lay.set_bytes * static_cast<std::size_t>(set) + lay.offset[x] +
           c.core.offset(x, bi, r) * c.core.element_bytes(x);
  }
  cudaDataType type(const BatchedCase& c, Buffer x) const {
    return c.core.fp32(x) ? CUDA_R_32F : CUDA_R_16BF;
  }
  // Call (bi, r) of product f, as device_transformer.cu's gemm() issues it: row-major C =
  // op(A) op(B) is column-major C^T = op(B)^T op(A)^T, batched over the K/V heads.
  void enqueue(const BatchedCase& c, const Layout& lay, Form f, int set, int bi, int r) const {
    const FormSpec sp = spec(f);
    const AttentionCore& x = c.core;
    const int M = x.s, N = sp.square ? x.s : x.d, K = sp.square ? x.d : x.s;
    const float alpha = sp.scaled ? 1.f / std::sqrt(static_cast<float>(x.d)) : 1.f;
    const float beta = sp.accumulate && r > 0 ? 1.f : 0.f;
    const cublasOperation_t opa = sp.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opb = sp.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const void* A = at(lay, c, sp.a, set, bi, r);
    const void* B = at(lay, c, sp.b, set, bi, r);
    void* C = at(lay, c, sp.c, set, bi, r);
    const auto lda = static_cast<int>(x.ld(sp.a)), ldb = static_cast<int>(x.ld(sp.b)),
               ldc = static_cast<int>(x.ld(sp.c));
    if (x.lkv == 1) {
      check_blas(cublasGemmEx(dev_.blas, opb, opa, N, M, K, &alpha, B, type(c, sp.b), ldb, A,
                              type(c, sp.a), lda, &beta, C, type(c, sp.c), ldc, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (attention product)");
    } else {
      check_blas(cublasGemmStridedBatchedEx(
                     dev_.blas, opb, opa, N, M, K, &alpha, B, type(c, sp.b), ldb, x.stride(sp.b), A,
                     type(c, sp.a), lda, x.stride(sp.a), &beta, C, type(c, sp.c), ldc,
                     x.stride(sp.c), x.lkv, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx (attention product)");
    }
  }
  // Every call of product f over one operand set, in the block's order.
  void run_form(const BatchedCase& c, const Layout& lay, Form f, int set) const {
    for (int bi = 0; bi < c.core.b; ++bi)
      for (int r = 0; r < c.core.group(); ++r)
        enqueue(c, lay, f, set, bi, r);
  }
  // Set 0's C poisoned, call (0, 0) run, the largest |C - ref| / bound over kChecks entries of
  // its members.
  double verify(const BatchedCase& c, const Layout& lay, Form f) {
    const FormSpec sp = spec(f);
    const AttentionCore& x = c.core;
    const int M = x.s, N = sp.square ? x.s : x.d, K = sp.square ? x.d : x.s;
    std::vector<int> members{0, x.lkv - 1, 0, x.lkv - 1}, rows{0, M - 1, 0, M - 1},
        cols{0, 0, N - 1, N - 1};
    std::mt19937 rng(static_cast<unsigned>(c.count * 131 + c.m * 31 + c.n * 17 + c.k) +
                     static_cast<unsigned>(f));
    while (rows.size() < kChecks) {
      members.push_back(static_cast<int>(rng() % static_cast<unsigned>(x.lkv)));
      rows.push_back(static_cast<int>(rng() % static_cast<unsigned>(M)));
      cols.push_back(static_cast<int>(rng() % static_cast<unsigned>(N)));
    }
    // 0xff bytes: a NaN in bf16 and in fp32, so an entry the call does not write fails.
    check(cudaMemsetAsync(arena_ + lay.offset[sp.c], 0xff, lay.bytes[sp.c], dev_.stream),
          "cudaMemset (poison C)");
    enqueue(c, lay, f, 0, 0, 0);
    for (auto [dst, src] : {std::make_pair(members_, &members), std::make_pair(rows_, &rows),
                            std::make_pair(cols_, &cols)})
      check(cudaMemcpyAsync(dst, src->data(), kChecks * sizeof(int), cudaMemcpyHostToDevice,
                            dev_.stream),
            "upload check entries");
    const StridedOperand a{reinterpret_cast<const __nv_bfloat16*>(arena_ + lay.offset[sp.a]),
                           x.ld(sp.a), x.stride(sp.a), sp.ta};
    const StridedOperand b{reinterpret_cast<const __nv_bfloat16*>(arena_ + lay.offset[sp.b]),
                           x.ld(sp.b), x.stride(sp.b), sp.tb};
    const double alpha =
        sp.scaled ? static_cast<double>(1.f / std::sqrt(static_cast<float>(x.d))) : 1.0;
    reference_strided_entries<<<kChecks, kThreads, 0, dev_.stream>>>(
        a, b, arena_ + lay.offset[sp.c], x.fp32(sp.c), x.ld(sp.c), x.stride(sp.c), K, alpha,
        members_, rows_, cols_, ref_, abs_, got_);
    check_launch("reference entries (batched)");
    return worst_error_ratio(dev_, ref_, abs_, got_);
  }

  const Device& dev_;
  std::size_t arena_bytes_ = 0;
  char* arena_ = nullptr;
  int *members_ = nullptr, *rows_ = nullptr, *cols_ = nullptr;
  double *ref_ = nullptr, *abs_ = nullptr;
  float* got_ = nullptr;
};

// ------------------------------------------------------------------------------- memory kernels

constexpr int kKinds =
    static_cast<int>(std::extent<decltype(tm::ComputeProfile::memory_kernel_Bps)>::value);

// The block's memory-bound launches (device_transformer.cu's labels; `occurrence` counts the
// label's launches within one layer pass, -1: every one) and the layer_ops op each runs, with
// the op it also runs fused into it (the norm backward adds the residual gradient). The scalar
// norm backward's second kernel (the gain gradient) belongs to its norm backward. Launches not
// here (bf16 casts) have no layer_ops op.
struct MemoryLaunch {
  const char* label;
  int occurrence;
  const char* op;
  const char* fused;  ///< nullptr: none
};

constexpr MemoryLaunch kMemoryLaunches[] = {
    {"norm forward", 0, "norm1", nullptr},
    {"norm forward", 1, "norm2", nullptr},
    {"norm backward", 0, "norm2.backward", "residual2.backward"},
    {"norm gain gradient", 0, "norm2.backward", nullptr},
    {"norm backward", 1, "norm1.backward", "residual1.backward"},
    {"norm gain gradient", 1, "norm1.backward", nullptr},
    {"causal softmax", -1, "attention.softmax", nullptr},
    {"softmax backward", -1, "attention.softmax.backward", nullptr},
    {"gelu forward", -1, "ffn.gelu", nullptr},
    {"gelu backward", -1, "ffn.gelu.backward", nullptr},
    {"swiglu forward", -1, "ffn.swiglu", nullptr},
    {"swiglu backward", -1, "ffn.swiglu.backward", nullptr},
    {"x1 = x (residual copy)", -1, "residual1", nullptr},
    {"x2 = x1 (residual copy)", -1, "residual2", nullptr},
};

const MemoryLaunch* memory_launch(const std::string& label, int occurrence) {
  for (const MemoryLaunch& m : kMemoryLaunches)
    if (label == m.label && (m.occurrence < 0 || m.occurrence == occurrence)) return &m;
  return nullptr;
}

/// One size's figures: bytes (as layer_ops counts them) and seconds of each kind.
struct MemorySize {
  std::array<double, kKinds> bytes{}, seconds{};
  double Bps(int kind) const {
    return bytes[static_cast<std::size_t>(kind)] > 0 && seconds[static_cast<std::size_t>(kind)] > 0
               ? bytes[static_cast<std::size_t>(kind)] / seconds[static_cast<std::size_t>(kind)]
               : 0;
  }
};

int kind_index(const tm::ComputeOp& op) {
  const int kind = static_cast<int>(op.memory_kernel);
  if (kind < 0 || kind >= kKinds)
    throw std::runtime_error("layer_ops' " + op.name + " has a MemoryKernel kind beyond the " +
                             std::to_string(kKinds) + " of ComputeProfile::memory_kernel_Bps");
  return kind;
}

using Passes = std::vector<std::vector<tauplan::exec::cuda::OpTime>>;

/// Per kind, bytes as layer_ops (`ops`) counts them over seconds, from the block's per-launch
/// timings of one layer (`passes`: time_layer_stack_ops); `fallback_Bps` charges a fused op
/// whose kind has no launch of its own. Fills `line` (the JSON of the layer) with the details
/// and the attention products' seconds in the block. Host-only: --synthetic runs it too.
MemorySize memory_figures(const std::vector<tm::ComputeOp>& ops, const Passes& passes,
                          double fallback_Bps, nlohmann::ordered_json& line) {
  // Per pass: the seconds of each launch group (by its op) and of each attention product.
  std::map<std::string, std::vector<double>> group_s, product_s;
  std::map<std::string, const MemoryLaunch*> groups;
  for (const auto& pass : passes) {
    std::map<std::string, int> occurrences;
    std::map<std::string, double> g, p;
    for (const auto& launch : pass) {
      const std::string label = launch.what;
      const double s = static_cast<double>(launch.ms) * 1e-3;
      const MemoryLaunch* m = memory_launch(label, occurrences[label]++);
      if (m) {
        g[m->op] += s;
        if (!groups.count(m->op) || m->fused) groups[m->op] = m;
      }
      for (const FormInfo& f : kForms)
        if (label == f.block_label) p[f.model_op] += s;
    }
    for (const auto& [name, s] : g)
      group_s[name].push_back(s);
    for (const auto& [name, s] : p)
      product_s[name].push_back(s);
  }
  // Launches of one op alone first (their kinds' rates), then the fused ones: the fused op
  // charged at its kind's rate from the first step (fallback_Bps where that kind has no
  // launch of its own), the rest of the launch the op's own.
  MemorySize size;
  nlohmann::ordered_json kinds = nlohmann::ordered_json::object(),
                         fused = nlohmann::ordered_json::object(),
                         launches = nlohmann::ordered_json::object();
  std::set<std::string> covered;
  for (int step = 0; step < 2; ++step) {
    const MemorySize alone = size;
    for (const auto& [name, m] : groups) {
      const tm::ComputeOp* op = find_op(ops, name);
      if (!op || op->kind != tm::ComputeOpKind::Memory)
        throw std::runtime_error("the block's launch `" + std::string(m->label) +
                                 "` runs layer_ops' " + name +
                                 ", which layer_ops does not have as a memory-bound op: "
                                 "profile.cu and layer_ops.hpp disagree");
      const tm::ComputeOp* extra = m->fused ? find_op(ops, m->fused) : nullptr;
      if (extra && extra->kind != tm::ComputeOpKind::Memory) extra = nullptr;
      if ((extra != nullptr) != (step == 1)) continue;
      const double launch_s = median(group_s[name]);
      double own_s = launch_s;
      covered.insert(name);
      if (extra) {
        covered.insert(extra->name);
        const double rate = alone.Bps(kind_index(*extra));
        const double charged_s = extra->bytes / (rate > 0 ? rate : fallback_Bps);
        const bool subtracted = charged_s <= 0.75 * launch_s;
        if (subtracted) own_s = launch_s - charged_s;
        fused[name] = {{"launch_s", launch_s},
                       {"fused_op", extra->name},
                       {"charged_s", charged_s},
                       {"charged_at_Bps", rate > 0 ? rate : fallback_Bps},
                       {"subtracted", subtracted}};
      }
      const auto kind = static_cast<std::size_t>(kind_index(*op));
      size.bytes[kind] += op->bytes;
      size.seconds[kind] += own_s;
      launches[name] = {
          {"kind", tm::to_string(op->memory_kernel)}, {"bytes", op->bytes}, {"seconds", own_s}};
    }
  }
  nlohmann::ordered_json without = nlohmann::ordered_json::array();
  for (const tm::ComputeOp& op : ops)
    if (op.kind == tm::ComputeOpKind::Memory && !covered.count(op.name)) without.push_back(op.name);
  for (int k = 0; k < kKinds; ++k)
    if (size.Bps(k) > 0)
      kinds[tm::to_string(static_cast<tm::MemoryKernel>(k))] = {
          {"bytes", size.bytes[static_cast<std::size_t>(k)]},
          {"seconds", size.seconds[static_cast<std::size_t>(k)]},
          {"Bps", size.Bps(k)}};
  nlohmann::ordered_json in_block = nlohmann::ordered_json::object();
  for (const auto& [name, s] : product_s)
    in_block[name] = median(s);
  line["passes"] = passes.size();
  line["kinds"] = kinds;
  line["launches"] = launches;
  line["fused"] = fused;
  line["ops_without_launch"] = without;
  line["attention_products_in_block_s"] = in_block;
  return size;
}

/// The block's memory-bound kernels in one layer of `model` at tensor shard t, micro-batch 1
/// (memory_figures of 5 passes after 2). `standalone` gives the batched sweep's seconds of this
/// layer's attention products (by layer_ops name), printed beside the same products timed in
/// the block. One JSON line.
MemorySize measure_memory_kernels(const CatalogModel& model, int t, double fallback_Bps,
                                  const std::map<std::string, double>& standalone) {
  const BlockConfig c = block_config(model, t, 1);
  const std::vector<tm::ComputeOp> ops = tm::layer_ops(layer_shape(c), tm::Recompute::None);
  Passes passes;
  {
    tauplan::exec::cuda::DeviceTransformerBlock block(c, 0);
    block.randomize_parameters(1, 0.02f);
    block.randomize_layer_io(2);
    passes = block.time_layer_stack_ops(2, 5);
  }
  nlohmann::ordered_json line;
  line["memory_kernels_layer"] = model.name;
  line["tensor"] = t;
  line["micro_batch"] = 1;
  const MemorySize size = memory_figures(ops, passes, fallback_Bps, line);
  nlohmann::ordered_json alone_s = nlohmann::ordered_json::object();
  for (const auto& [name, s] : standalone)
    alone_s[name] = s;
  line["attention_products_profiled_s"] = alone_s;
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
  return size;
}

/// --synthetic: one made-up pass of the block's memory-bound launches in one layer of `model`
/// at shard t (in the block's order; each launch's time its ops' bytes over made-up rates per
/// kind, `rate`), through memory_figures, which must give those rates back.
MemorySize synthetic_memory_kernels(const CatalogModel& model, int t,
                                    const std::vector<double>& rate) {
  const BlockConfig c = block_config(model, t, 1);
  const std::vector<tm::ComputeOp> ops = tm::layer_ops(layer_shape(c), tm::Recompute::None);
  const char* act_forward = model.swiglu ? "swiglu forward" : "gelu forward";
  const char* act_backward = model.swiglu ? "swiglu backward" : "gelu backward";
  const std::vector<const char*> order = {
      "norm forward",     "attention scores Q K^T",  "causal softmax",
      "attention P V",    "x1 = x (residual copy)",  "norm forward",
      act_forward,        "x2 = x1 (residual copy)", act_backward,
      "norm backward",    "attention dV = P^T dO",   "attention dP = dO V^T",
      "softmax backward", "attention dQ = dS K",     "attention dK = dS^T Q",
      "norm backward"};
  std::vector<tauplan::exec::cuda::OpTime> pass;
  std::map<std::string, int> occurrences;
  for (const char* label : order) {
    const MemoryLaunch* m = memory_launch(label, occurrences[label]++);
    double seconds = 1e-4;  // an attention product
    if (m) {
      const tm::ComputeOp* op = find_op(ops, m->op);
      const tm::ComputeOp* extra = m->fused ? find_op(ops, m->fused) : nullptr;
      if (!op) throw std::runtime_error(std::string("--synthetic: layer_ops has no ") + m->op);
      seconds = op->bytes / rate[static_cast<std::size_t>(kind_index(*op))] +
                (extra ? extra->bytes / rate[static_cast<std::size_t>(kind_index(*extra))] : 0);
    }
    pass.push_back({label, static_cast<float>(seconds * 1e3)});
  }
  nlohmann::ordered_json line;
  const MemorySize size = memory_figures(ops, Passes{pass}, rate[0], line);
  for (int k = 0; k < kKinds; ++k)
    if (size.Bps(k) > 0 && std::fabs(size.Bps(k) / rate[static_cast<std::size_t>(k)] - 1) > 1e-4)
      throw std::runtime_error(std::string("--synthetic: memory_figures gives ") +
                               tm::to_string(static_cast<tm::MemoryKernel>(k)) + " " +
                               std::to_string(size.Bps(k)) + " B/s for the made-up " +
                               std::to_string(rate[static_cast<std::size_t>(k)]));
  return size;
}

std::string format(const char* fmt, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, fmt, value);
  return buffer;
}

/// The profile as JSON, one key a line and one GEMM or attention sample a line.
std::string pretty(const nlohmann::ordered_json& profile) {
  std::string text = "{\n";
  std::size_t i = 0;
  for (auto it = profile.begin(); it != profile.end(); ++it, ++i) {
    text += "  " + nlohmann::json(it.key()).dump() + ": ";
    if (it.value().is_array() && !it.value().empty()) {
      text += "[\n";
      for (std::size_t r = 0; r < it.value().size(); ++r)
        text += "    " + it.value()[r].dump() + (r + 1 < it.value().size() ? ",\n" : "\n");
      text += "  ]";
    } else {
      text += it.value().dump();
    }
    text += i + 1 < profile.size() ? ",\n" : "\n";
  }
  return text + "}\n";
}

std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump();
}

// The command line (usage at the top of this file).
struct Options {
  std::string shapes_path, out_path, peak_source, source_text, attention_path;
  double peak_flops = 0, budget_s = 80, batched_budget_s = 40;
  int reps = 20;
  bool device_name = false, synthetic = false;
};

// The command line parsed; usage() (exit 2) on an unknown argument or a bad value.
Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + ": expected a value");
      return argv[++i];
    };
    auto number = [&]() {
      const std::string v = value();
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !std::isfinite(d) || d <= 0)
        usage(a + ": expected a positive number, got " + v);
      return d;
    };
    if (a == "--shapes") {
      o.shapes_path = value();
    } else if (a == "--out") {
      o.out_path = value();
    } else if (a == "--peak-flops") {
      o.peak_flops = number();
    } else if (a == "--peak-source") {
      o.peak_source = value();
    } else if (a == "--source") {
      o.source_text = value();
    } else if (a == "--attention") {
      o.attention_path = value();
    } else if (a == "--reps") {
      o.reps = static_cast<int>(number());
    } else if (a == "--budget-s") {
      o.budget_s = number();
    } else if (a == "--batched-budget-s") {
      o.batched_budget_s = number();
    } else if (a == "--synthetic") {
      o.synthetic = true;
    } else if (a == "--device-name") {
      o.device_name = true;
    } else {
      usage("unknown argument " + a);
    }
  }
  return o;
}

// What one run measured (or made up), for the profile and the summary line.
struct RunState {
  Shapes shapes;
  // The batched cases: the catalog's layers (kCatalog) whose stacked attention GEMMs the shapes
  // file lists; kCatalog checked against the header of a generated file.
  BatchedCases batched_all;
  std::vector<const BatchedCase*> batched_todo;
  // Set when kCatalog and layer_ops disagree (no batched cases) or the batched sweep fails
  // (the samples so far kept); the exit status is then 1.
  std::string batched_error;

  std::string device_label;
  std::size_t l2_bytes = 0;
  Launch launch;
  Bandwidth bw;
  std::vector<GemmResult> results;
  int failed_checks = 0, unfit = 0;
  std::size_t arena = 0;
  // Batched samples measured (case, result), checks failed, cases not measured for memory or
  // time; per kind the figure of each layer measured; errors of the memory-kernel layers.
  std::vector<std::pair<const BatchedCase*, BatchedResult>> batched;
  int batched_failed = 0, batched_unfit = 0, batched_unrun = 0;
  std::size_t batched_arena = 0;
  std::vector<std::vector<double>> kind_Bps =
      std::vector<std::vector<double>>(static_cast<std::size_t>(kKinds));
  std::vector<std::string> memory_layers;
  int memory_errors = 0;
};

// The shapes file read and checked, with the options it needs (usage() when one is missing).
void read_inputs(const Options& o, RunState& st) {
  if (o.shapes_path.empty() || o.out_path.empty() || o.peak_source.empty() ||
      o.source_text.empty() || !(o.peak_flops > 0))
    usage("--shapes, --out, --peak-flops, --peak-source and --source are required");
  if (o.reps < 1) usage("--reps must be >= 1");
  st.shapes = read_shapes(o.shapes_path);
  if (st.shapes.gemms.empty()) usage("--shapes: no `gemm M N K` line in " + o.shapes_path);
}

// The batched cases and those the shapes file lists (batched_todo), with warnings on stderr
// where kCatalog and the file's header differ.
void select_batched_cases(const Options& o, RunState& st) {
  const Shapes& shapes = st.shapes;
  try {
    st.batched_all = batched_cases(shapes);
  } catch (const std::exception& e) {
    st.batched_error = e.what();
    std::printf("{\"batched_gemms\": \"not measured\", \"error\": %s}\n",
                json_string(st.batched_error).c_str());
    std::fprintf(stderr, "tauplan_cuda_profile: error: %s\n", st.batched_error.c_str());
  }
  for (const BatchedCase& c : st.batched_all.cases)
    if (c.in_shapes) st.batched_todo.push_back(&c);
  if (!shapes.catalog_models.empty()) {
    std::set<std::string> ours, theirs(shapes.catalog_models.begin(), shapes.catalog_models.end());
    for (const CatalogModel& m : kCatalog)
      ours.insert(m.name);
    if (ours != theirs)
      std::fprintf(stderr,
                   "tauplan_cuda_profile: warning: %s names other catalog transformers than "
                   "profile.cu's kCatalog: the batched GEMM cases may miss some\n",
                   o.shapes_path.c_str());
    if (st.batched_todo.size() != st.batched_all.cases.size())
      std::fprintf(stderr,
                   "tauplan_cuda_profile: warning: %zu of %zu batched attention shapes have no "
                   "stacked GEMM line in %s (kCatalog and the catalog differ?): not measured\n",
                   st.batched_all.cases.size() - st.batched_todo.size(),
                   st.batched_all.cases.size(), o.shapes_path.c_str());
  }
}

// --synthetic: made-up numbers through the same writing and reading-back path, without a GPU.
void make_up_measurements(const Options& o, RunState& st) {
  st.device_label = "synthetic (tauplan_cuda_profile --synthetic, no GPU)";
  st.l2_bytes = std::size_t{50} << 20;
  st.launch = {4e-6, 2.5e-6};
  st.bw = {3.0e12, 2.9e12, 2.8e12};
  for (const Gemm& g : st.shapes.gemms) {
    GemmResult r;
    r.shape = g;
    r.seconds = 2.0 * g.m * static_cast<double>(g.n) * g.k / (0.6 * o.peak_flops) + 5e-6;
    r.reps = o.reps;
    r.sets = 1;
    st.results.push_back(r);
  }
  for (const BatchedCase* c : st.batched_todo) {
    BatchedResult r;
    r.seconds = c->flop() / (0.5 * o.peak_flops) + 5e-6;
    r.form_seconds.assign(c->forms.size(), r.seconds);
    r.reps = o.reps;
    r.sets = 1;
    r.calls = c->core.b * c->core.group();
    st.batched.emplace_back(c, r);
  }
  // Made-up rates per kind, through the same bookkeeping as the block's timings.
  std::vector<double> rate(static_cast<std::size_t>(kKinds));
  for (int k = 0; k < kKinds; ++k)
    rate[static_cast<std::size_t>(k)] = (0.9 - 0.05 * k) * st.bw.copy_Bps;
  for (const char* name : {"gpt3-175b", "llama3-70b"})
    for (int t : {1, 8}) {
      const MemorySize size = synthetic_memory_kernels(catalog_model(name), t, rate);
      for (int k = 0; k < kKinds; ++k)
        if (size.Bps(k) > 0) st.kind_Bps[static_cast<std::size_t>(k)].push_back(size.Bps(k));
      st.memory_layers.push_back(std::string(name) + " t=" + std::to_string(t) + " (synthetic)");
    }
}

// The GEMM sweep: every shape of the file timed and checked, within --budget-s; one JSON line
// each.
void sweep_gemms(const Device& dev, const Options& o, RunState& st) {
  const Shapes& shapes = st.shapes;
  const double peak_flops = o.peak_flops;
  GemmBench bench(dev, shapes.gemms);
  st.arena = bench.arena_bytes();
  const auto t_sweep = Clock::now();
  for (std::size_t i = 0; i < shapes.gemms.size(); ++i) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - t_sweep).count();
    if (elapsed > o.budget_s) {
      std::fprintf(stderr,
                   "tauplan_cuda_profile: warning: GEMM sweep over its %.0f s budget: %zu of "
                   "%zu shapes not measured\n",
                   o.budget_s, shapes.gemms.size() - i, shapes.gemms.size());
      break;
    }
    if (!bench.fits(shapes.gemms[i])) {
      ++st.unfit;
      std::printf("{\"gemm\": [%d, %d, %d], \"skipped\": \"operands over the free memory\"}\n",
                  shapes.gemms[i].m, shapes.gemms[i].n, shapes.gemms[i].k);
      continue;
    }
    const GemmResult r = bench.run(shapes.gemms[i], o.reps, 1000 + i);
    const double flop = 2.0 * r.shape.m * static_cast<double>(r.shape.n) * r.shape.k;
    const bool ok = r.max_error_ratio <= 1;
    if (!ok) ++st.failed_checks;
    std::printf(
        "{\"gemm\": [%d, %d, %d], \"seconds\": %.9g, \"tflops\": %.4g, \"efficiency\": %.4g, "
        "\"reps\": %d, \"sets\": %d, \"check_error_over_bound\": %.3g, \"check_ok\": %s}\n",
        r.shape.m, r.shape.n, r.shape.k, r.seconds, flop / r.seconds / 1e12,
        flop / r.seconds / peak_flops, r.reps, r.sets, r.max_error_ratio, ok ? "true" : "false");
    if (flop / r.seconds > 1.05 * peak_flops)
      std::fprintf(stderr,
                   "tauplan_cuda_profile: warning: gemm %d %d %d ran at %.0f TFLOP/s, over "
                   "the peak given (%.0f)\n",
                   r.shape.m, r.shape.n, r.shape.k, flop / r.seconds / 1e12, peak_flops / 1e12);
    if ((i + 1) % 50 == 0)
      std::fprintf(stderr, "tauplan_cuda_profile: %zu/%zu GEMM shapes, %.1f s\n", i + 1,
                   shapes.gemms.size(),
                   std::chrono::duration<double>(Clock::now() - t_sweep).count());
    st.results.push_back(r);
  }
}

// One batched case (batched_todo[i]) timed and checked beside its stacked GEMM's seconds
// (gemm_s); its JSON line printed, the sample kept.
void measure_batched_case(BatchedBench& bench, std::size_t i,
                          const std::map<std::tuple<int, int, int>, double>& gemm_s,
                          const Options& o, RunState& st) {
  const BatchedCase& c = *st.batched_todo[i];
  nlohmann::ordered_json line;
  line["batched_gemm"] = {c.count, c.m, c.n, c.k};
  line["layer"] = c.model;
  line["tensor"] = c.tensor;
  line["micro_batch"] = c.micro_batch;
  line["kv_group"] = c.core.group();
  if (!bench.fits(c)) {
    ++st.batched_unfit;
    line["skipped"] = "operands over the free memory";
    std::printf("%s\n", line.dump().c_str());
    return;
  }
  const BatchedResult r = bench.run(c, o.reps, 5000 + i);
  const bool ok = r.max_error_ratio <= 1;
  if (!ok) ++st.batched_failed;
  nlohmann::ordered_json products = nlohmann::ordered_json::object();
  for (std::size_t j = 0; j < c.forms.size(); ++j)
    products[form_info(c.forms[j]).model_op] = r.form_seconds[j];
  line["calls"] = r.calls;
  line["products_s"] = products;
  line["seconds"] = r.seconds;
  line["efficiency"] = c.flop() / r.seconds / o.peak_flops;
  const auto stacked = gemm_s.find({c.count * c.m, c.n, c.k});
  if (stacked != gemm_s.end()) {
    line["stacked_seconds"] = stacked->second;
    line["over_stacked"] = r.seconds / stacked->second;
  }
  line["reps"] = r.reps;
  line["sets"] = r.sets;
  line["check_error_over_bound"] = r.max_error_ratio;
  line["check_ok"] = ok;
  std::printf("%s\n", line.dump().c_str());
  st.batched.emplace_back(&c, r);
}

// The attention products as the block runs them, beside their stacked GEMM's time. An error
// here (a CUDA or cuBLAS one) ends the sweep, not the profile: the samples so far and the GEMMs
// are still written, and the exit status says it.
void sweep_batched(const Device& dev, const Options& o, RunState& st) {
  if (st.batched_todo.empty()) return;
  try {
    std::map<std::tuple<int, int, int>, double> gemm_s;
    for (const GemmResult& r : st.results)
      if (r.max_error_ratio <= 1) gemm_s[{r.shape.m, r.shape.n, r.shape.k}] = r.seconds;
    BatchedBench bench(dev, st.batched_todo);
    st.batched_arena = bench.arena_bytes();
    const auto t_sweep = Clock::now();
    for (std::size_t i = 0; i < st.batched_todo.size(); ++i) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - t_sweep).count();
      if (elapsed > o.batched_budget_s) {
        st.batched_unrun = static_cast<int>(st.batched_todo.size() - i);
        std::fprintf(stderr,
                     "tauplan_cuda_profile: warning: batched GEMM sweep over its %.0f s budget: "
                     "%d of %zu shapes not measured\n",
                     o.batched_budget_s, st.batched_unrun, st.batched_todo.size());
        break;
      }
      measure_batched_case(bench, i, gemm_s, o, st);
    }
    std::fflush(stdout);
  } catch (const std::exception& e) {
    st.batched_error = std::string("batched GEMM sweep: ") + e.what();
    std::printf("{\"batched_gemms\": \"stopped\", \"error\": %s}\n",
                json_string(st.batched_error).c_str());
    std::fprintf(stderr, "tauplan_cuda_profile: error: %s\n", st.batched_error.c_str());
  }
}

// The block's own memory-bound kernels in one layer (`name` at tensor t, micro-batch 1): per
// kind its figure kept; a JSON line only when skipped (memory) or failed.
void measure_memory_layer(const char* name, int t, double streaming_Bps, RunState& st) {
  const CatalogModel& model = catalog_model(name);
  const BlockConfig c = block_config(model, t, 1);
  const std::string layer = std::string(name) + " t=" + std::to_string(t);
  nlohmann::ordered_json line;  // only when skipped or failed
  line["memory_kernels_layer"] = name;
  line["tensor"] = t;
  line["micro_batch"] = 1;
  try {
    const std::size_t need = tauplan::exec::cuda::DeviceTransformerBlock::device_bytes(c, false);
    const std::size_t free_bytes = tauplan::exec::cuda::free_device_memory(0);
    if (static_cast<double>(need) > 0.95 * static_cast<double>(free_bytes)) {
      line["skipped"] = "needs " + format("%.1f", static_cast<double>(need) / (1 << 30)) +
                        " GiB, " + format("%.1f", static_cast<double>(free_bytes) / (1 << 30)) +
                        " GiB free";
      std::printf("%s\n", line.dump().c_str());
      return;
    }
    std::map<std::string, double> standalone;
    for (const auto& [bc, r] : st.batched)
      if (bc->model == name && bc->tensor == t && bc->micro_batch == 1)
        for (std::size_t j = 0; j < bc->forms.size(); ++j)
          standalone[form_info(bc->forms[j]).model_op] = r.form_seconds[j];
    const MemorySize size = measure_memory_kernels(model, t, streaming_Bps, standalone);
    for (int k = 0; k < kKinds; ++k)
      if (size.Bps(k) > 0) st.kind_Bps[static_cast<std::size_t>(k)].push_back(size.Bps(k));
    st.memory_layers.push_back(layer);
  } catch (const std::exception& e) {
    ++st.memory_errors;
    line["error"] = e.what();
    std::printf("%s\n", line.dump().c_str());
    std::fprintf(stderr, "tauplan_cuda_profile: error: memory kernels of %s: %s\n", layer.c_str(),
                 e.what());
  }
  std::fflush(stdout);
}

// Everything measured on the device: launch overhead, bandwidth, the GEMM and batched sweeps,
// and the block's memory kernels in one layer of the two models it is timed on, at t = 1 and 8.
void measure_on_device(const Device& dev, const Options& o, RunState& st) {
  st.device_label = dev.name;
  st.l2_bytes = dev.l2_bytes;
  std::fprintf(stderr, "tauplan_cuda_profile: %s: %zu GEMM shapes (%d lines), L2 %.0f MiB\n",
               st.device_label.c_str(), st.shapes.gemms.size(), st.shapes.gemm_lines,
               static_cast<double>(dev.l2_bytes) / (1 << 20));

  st.launch = measure_launch(dev);
  std::printf("{\"launch_overhead_s\": %.9g, \"host_submit_s\": %.9g}\n", st.launch.per_kernel_s,
              st.launch.submit_s);
  st.bw = measure_bandwidth(dev);
  std::printf("{\"copy_Bps\": %.9g, \"read2_write1_Bps\": %.9g, \"memcpy_d2d_Bps\": %.9g}\n",
              st.bw.copy_Bps, st.bw.triad_Bps, st.bw.memcpy_Bps);
  std::fflush(stdout);

  sweep_gemms(dev, o, st);
  std::fflush(stdout);
  sweep_batched(dev, o, st);

  const double streaming_Bps = std::min(st.bw.copy_Bps, st.bw.triad_Bps);
  for (const char* name : {"gpt3-175b", "llama3-70b"})
    for (int t : {1, 8})
      measure_memory_layer(name, t, streaming_Bps, st);
}

// The profile's tables (as written and read back) and the figures its `source` quotes.
struct Tables {
  AttentionLines attention;
  nlohmann::ordered_json gemms = nlohmann::ordered_json::array();
  std::vector<double> large_efficiency;
  double memory_Bps = 0;
  nlohmann::ordered_json batched_rows = nlohmann::ordered_json::array();
  // Per kind (MemoryKernel order), the median over the layers measured; 0: not measured.
  std::vector<double> kernel_Bps = std::vector<double>(static_cast<std::size_t>(kKinds), 0.0);
  nlohmann::ordered_json memory_kernels = nlohmann::ordered_json::object();
  std::string kernels_text;
  double default_attention = 0;  // written only when flash is not measured both ways
};

// The tables from what was measured: checked GEMMs, batched rows, medians per kernel kind.
Tables make_tables(const Options& o, const RunState& st) {
  Tables tb;
  if (!o.attention_path.empty()) tb.attention = read_attention(o.attention_path);
  for (const GemmResult& r : st.results) {
    if (!(r.max_error_ratio <= 1)) continue;  // a wrong result is not a measurement
    tb.gemms.push_back({r.shape.m, r.shape.n, r.shape.k, r.seconds});
    if (r.shape.m >= 1024 && r.shape.n >= 1024 && r.shape.k >= 1024)
      tb.large_efficiency.push_back(2.0 * r.shape.m * static_cast<double>(r.shape.n) * r.shape.k /
                                    r.seconds / o.peak_flops);
  }
  tb.memory_Bps = std::min(st.bw.copy_Bps, st.bw.triad_Bps);
  for (const auto& [c, r] : st.batched)
    if (r.max_error_ratio <= 1) tb.batched_rows.push_back({c->count, c->m, c->n, c->k, r.seconds});
  for (int k = 0; k < kKinds; ++k) {
    const std::vector<double>& v = st.kind_Bps[static_cast<std::size_t>(k)];
    if (v.empty()) continue;
    tb.kernel_Bps[static_cast<std::size_t>(k)] = median(v);
    const char* key = tauplan::model::to_string(static_cast<tauplan::model::MemoryKernel>(k));
    tb.memory_kernels[key] = tb.kernel_Bps[static_cast<std::size_t>(k)];
    tb.kernels_text += std::string(tb.kernels_text.empty() ? "" : ", ") + key + " " +
                       format("%.4g", tb.kernel_Bps[static_cast<std::size_t>(k)] / 1e9) + " GB/s";
  }
  return tb;
}

// `source`'s account of the GEMMs, memory bandwidth and launch overhead.
void describe_gemms(std::ostringstream& source, const Options& o, const RunState& st) {
  source << o.source_text << "; tauplan_cuda_profile on " << st.device_label << ": "
         << st.results.size() << " of " << st.shapes.gemms.size()
         << " GEMM shapes measured (cublasGemmEx, bf16 A/B/C, fp32 compute, row-major C = A B, "
            "random operands, median of up to "
         << o.reps << " repetitions timed with CUDA events, fewer past ~50 ms per shape, "
         << "rotating over operand sets spanning 3x the " << (st.l2_bytes >> 20)
         << " MiB L2 where one set would fit it; every shape checked against a double dot "
            "product)";
  if (st.failed_checks) source << ", " << st.failed_checks << " left out for failing the check";
  if (st.unfit) source << ", " << st.unfit << " not measured (operands over the free memory)";
  source << "; memory_bandwidth_Bps = the lower of a copy kernel ("
         << format("%.4g", st.bw.copy_Bps / 1e9) << " GB/s) and a read-2-write-1 kernel ("
         << format("%.4g", st.bw.triad_Bps / 1e9)
         << " GB/s), bytes read + written over the median of 10, 1 GiB arrays (cudaMemcpy D2D: "
         << format("%.4g", st.bw.memcpy_Bps / 1e9) << " GB/s)"
         << "; launch_overhead_s = empty kernels back to back to completion, median of 11 x "
            "1000 (host submit alone "
         << format("%.3g", st.launch.submit_s * 1e6) << " us)";
}

// `source`'s account of the batched GEMMs and the memory kernels.
void describe_batched_and_kernels(std::ostringstream& source, const Options& o, const RunState& st,
                                  const Tables& tb) {
  if (o.synthetic)
    source << "; batched_gemms and memory_kernels: made up (--synthetic: 50% of peak; "
              "fractions of the made-up copy bandwidth through the memory-kernel bookkeeping)";
  else
    source
        << "; batched_gemms: " << tb.batched_rows.size() << " of " << st.batched_todo.size()
        << " attention-product shapes of the catalog's layers (t = 1, 2, 4, 8, micro-batch 1, 2, "
           "4; those whose stacked GEMM the shapes file lists) as exec/cuda/device_transformer.cu "
           "runs them (per sample and K/V group position one cublasGemmStridedBatchedEx over "
           "the K/V heads, its transposes, strides and output types: fp32 dP, and dK, dV with "
           "grouped heads); seconds = the mean over the layer's products of that shape (Q K^T "
           "and dP; P V, dV, dQ, dK), each the median of its repetitions as for the GEMMs; "
           "checked against double dot products";
  if (st.batched_failed) source << ", " << st.batched_failed << " left out for failing the check";
  if (st.batched_unfit)
    source << ", " << st.batched_unfit << " not measured (operands over the free memory)";
  if (st.batched_unrun) source << ", " << st.batched_unrun << " not measured (time budget)";
  if (!st.batched_error.empty()) source << " (stopped: " << st.batched_error << ")";
  if (!tb.memory_kernels.empty() && !o.synthetic) {
    std::string layers;
    for (const std::string& l : st.memory_layers)
      layers += (layers.empty() ? "" : ", ") + l;
    source << "; memory_kernels: the block's own memory-bound launches (device_transformer.cu: "
              "norms, causal softmax, activation, residual copies, and their backward) timed "
              "inside its layer pass (CUDA events between launches, median of 5 passes) in one "
              "layer of "
           << layers
           << " (micro-batch 1), bytes as layer_ops counts them over seconds, per kind layer_ops "
              "tags the ops with, the median over the layers that run it ("
           << tb.kernels_text
           << "); the residual gradient the norm backward adds is charged at the elementwise "
              "rate and left out of the norm's seconds";
  }
}

// The compute model times attention from flash samples forward and backward; without both,
// default_attention_efficiency is set (and said so in `source`). False when it cannot be.
bool describe_attention(std::ostringstream& source, const Options& o, Tables& tb) {
  bool flash_forward = false, flash_backward = false;
  for (const auto& sample : tb.attention.samples) {
    if (sample["kernel"] != "flash") continue;
    flash_forward = flash_forward || sample["phase"] == "forward";
    flash_backward = flash_backward || sample["phase"] == "backward";
  }
  if (!(flash_forward && flash_backward)) {
    if (tb.large_efficiency.empty()) {
      std::fprintf(stderr,
                   "tauplan_cuda_profile: error: no attention samples and no GEMM with M, N, "
                   "K >= 1024 to derive default_attention_efficiency from\n");
      return false;
    }
    tb.default_attention = std::min(1.0, median(tb.large_efficiency));
    source << "; attention: " << tb.attention.samples.size() << " samples from "
           << (o.attention_path.empty() ? std::string("nowhere") : o.attention_path)
           << ", flash not measured forward and backward: default_attention_efficiency = "
           << format("%.3g", tb.default_attention) << ", the median efficiency of the "
           << tb.large_efficiency.size() << " measured GEMMs with M, N, K >= 1024 (an assumption)";
  } else {
    source << "; attention: " << tb.attention.samples.size() << " samples from " << o.attention_path
           << " (exec/cuda/pytorch_attention.py)";
  }
  return true;
}

// The profile file (profile_file.hpp's keys) written to --out; usage() when it cannot be.
void write_profile(const Options& o, const RunState& st, const Tables& tb,
                   const std::string& source) {
  nlohmann::ordered_json profile;
  profile["format"] = tauplan::model::kComputeProfileFormat;
  profile["device"] = st.device_label;
  profile["precision"] = "bf16";
  profile["source"] = source;
  profile["peak_flops"] = o.peak_flops;
  profile["peak_flops_source"] = o.peak_source;
  profile["memory_bandwidth_Bps"] = tb.memory_Bps;
  profile["launch_overhead_s"] = st.launch.per_kernel_s;
  if (tb.default_attention > 0) profile["default_attention_efficiency"] = tb.default_attention;
  profile["gemms"] = tb.gemms;
  profile["attention"] = tb.attention.samples;
  if (!tb.batched_rows.empty()) profile["batched_gemms"] = tb.batched_rows;
  if (!tb.memory_kernels.empty()) profile["memory_kernels"] = tb.memory_kernels;
  std::ofstream out(o.out_path);
  if (!out) usage("--out: cannot write " + o.out_path);
  out << pretty(profile);
  if (!out) usage("--out: cannot write " + o.out_path);
}

// Why the written profile does not read back as written ("" when it does).
std::string read_back_problem(const std::string& out_path, const Tables& tb) {
  std::string problem;
  try {
    const tauplan::model::ComputeProfile back = tauplan::model::read_compute_profile(out_path);
    problem = back.problem();
    // What was written is what the compute model reads.
    if (problem.empty() && back.batched_gemms.size() != tb.batched_rows.size())
      problem = "batched_gemms read back with " + std::to_string(back.batched_gemms.size()) +
                " samples, " + std::to_string(tb.batched_rows.size()) + " written";
    for (int k = 0; k < kKinds && problem.empty(); ++k)
      if (std::fabs(back.memory_kernel_Bps[k] - tb.kernel_Bps[static_cast<std::size_t>(k)]) >
          1e-9 * tb.kernel_Bps[static_cast<std::size_t>(k)])
        problem = std::string("memory_kernels.") +
                  tauplan::model::to_string(static_cast<tauplan::model::MemoryKernel>(k)) +
                  " does not read back as written";
  } catch (const std::exception& e) {
    problem = e.what();
  }
  return problem;
}

// The summary JSON line on stdout, the errors on stderr; the exit status (0 or 1).
int report(const Options& o, const RunState& st, const Tables& tb, double total_s,
           const std::string& problem) {
  nlohmann::ordered_json summary;
  summary["profile"] = o.out_path;
  summary["device"] = st.device_label;
  summary["gemm_shapes"] = st.shapes.gemms.size();
  summary["gemms_written"] = tb.gemms.size();
  summary["failed_checks"] = st.failed_checks;
  summary["batched_layers"] = st.batched_all.layers;  // (model, t, micro-batch) layers enumerated
  summary["batched_shapes_shared"] = st.batched_all.shared;
  summary["batched_shapes"] = st.batched_todo.size();
  summary["batched_written"] = tb.batched_rows.size();
  summary["batched_failed_checks"] = st.batched_failed;
  summary["batched_not_measured"] = st.batched_unfit + st.batched_unrun;
  if (!st.batched_error.empty()) summary["batched_error"] = st.batched_error;
  summary["attention_samples"] = tb.attention.samples.size();
  summary["attention_lines_ignored"] = tb.attention.ignored;
  summary["memory_bandwidth_Bps"] = tb.memory_Bps;
  summary["memory_kernels"] = tb.memory_kernels;
  summary["memory_kernel_layers"] = st.memory_layers;
  summary["memory_kernel_errors"] = st.memory_errors;
  summary["launch_overhead_s"] = st.launch.per_kernel_s;
  summary["operand_arena_bytes"] = st.arena;
  summary["batched_arena_bytes"] = st.batched_arena;
  summary["seconds"] = std::round(total_s * 10) / 10;
  summary["reads_back"] = problem.empty();
  if (!problem.empty()) summary["problem"] = problem;
  std::printf("%s\n", summary.dump().c_str());
  if (!problem.empty())
    std::fprintf(stderr, "tauplan_cuda_profile: error: %s does not read back: %s\n",
                 o.out_path.c_str(), problem.c_str());
  if (st.failed_checks)
    std::fprintf(stderr, "tauplan_cuda_profile: error: %d GEMM shapes failed the check\n",
                 st.failed_checks);
  if (st.batched_failed)
    std::fprintf(stderr, "tauplan_cuda_profile: error: %d batched GEMM shapes failed the check\n",
                 st.batched_failed);
  if (st.memory_errors)
    std::fprintf(stderr, "tauplan_cuda_profile: error: %d memory-kernel layers failed\n",
                 st.memory_errors);
  const bool ok = problem.empty() && st.failed_checks == 0 && st.batched_failed == 0 &&
                  st.batched_error.empty() && st.memory_errors == 0;
  return ok ? 0 : 1;
}

// The whole run: inputs, measurements (or --synthetic's), the profile written and read back.
int run(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  RunState st;
  if (!o.device_name) {
    read_inputs(o, st);
    select_batched_cases(o, st);
  }
  const auto t_start = Clock::now();
  if (o.synthetic) {
    make_up_measurements(o, st);
  } else {
    std::string why;
    if (tauplan::exec::cuda::usable_devices(&why) == 0) {
      std::printf("{\"impl\": \"tauplan-cuda-profile\", \"skipped\": %s}\n",
                  json_string(why).c_str());
      return 77;
    }
    Device dev;
    if (o.device_name) {
      std::printf("%s\n", dev.name.c_str());
      return 0;
    }
    measure_on_device(dev, o, st);
  }

  Tables tb = make_tables(o, st);
  std::ostringstream source;
  describe_gemms(source, o, st);
  describe_batched_and_kernels(source, o, st, tb);
  if (!describe_attention(source, o, tb)) return 1;
  write_profile(o, st, tb, source.str());
  const double total_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  const std::string problem = read_back_problem(o.out_path, tb);
  return report(o, st, tb, total_s, problem);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::printf("{\"impl\": \"tauplan-cuda-profile\", \"error\": %s}\n",
                json_string(e.what()).c_str());
    std::fprintf(stderr, "tauplan_cuda_profile: error: %s\n", e.what());
    return 1;
  }
}
