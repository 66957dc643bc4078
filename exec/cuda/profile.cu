// profile.cu: tauplan_cuda_profile, the GPU's compute profile (model/compute/profile_file.hpp):
// bf16 GEMMs at the shapes the compute model asks for, the memory bandwidth memory-bound
// kernels reach, the per-kernel launch overhead, and attention samples measured by
// exec/cuda/pytorch_attention.py.
//
//   tauplan_cuda_profile --shapes FILE --out PROFILE.json --peak-flops F --peak-source TEXT
//                        --source TEXT [--attention ATTN.jsonl] [--reps R] [--budget-s S]
//   tauplan_cuda_profile --device-name          (prints the device's name)
//   ... --synthetic: no GPU; made-up timings (60% of peak) through the same writing and
//       reading-back path, to test the file on a machine without a GPU (never a profile)
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
// (default 80), the rest named on stderr. Memory: a copy kernel (16-byte loads and stores, 1 GiB to
// 1 GiB) and a read-2-write-1 kernel (c = a + 1.5 b over three 1 GiB arrays of float4), bytes read
// plus written over the median time of 10; memory_bandwidth_Bps is the lower of the two (cudaMemcpy
// D2D's figure is reported in `source` only). Launch overhead: empty kernels launched back to back,
// 1000 per trial, host clock from the first launch to the stream's completion, median of 11 trials
// over 1000 (the host submit time alone is reported in `source`).
// Attention: the JSON lines of --attention with kernel, phase, heads, sequence, head_dim,
// causal and seconds; other lines (notes, skips) are ignored. Without flash samples forward and
// backward, default_attention_efficiency is written too: the median efficiency of the measured
// GEMMs with M, N, K >= 1024, an assumption that `source` states.
// The profile is written with exactly the keys of profile_file.hpp and read back with
// read_compute_profile, which must accept it. Prints one JSON line per measurement on stdout.
// Exit 0 on success, 77 without a GPU, 2 on a bad argument or shapes file, 1 on a CUDA or
// cuBLAS error, a failed GEMM check or a profile that does not read back.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
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
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "exec/cuda/cuda_backend.hpp"
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
  if (threadIdx.x == 0) {
    ref[blockIdx.x] = s_dot[0];
    abs_sum[blockIdx.x] = s_abs[0];
    got[blockIdx.x] = __bfloat162float(c[i * static_cast<std::size_t>(n) + j]);
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
  int gemm_lines = 0;
  int attention_lines = 0;
};

Shapes read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage("--shapes: cannot read " + path);
  Shapes shapes;
  std::map<std::tuple<int, int, int>, bool> seen;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
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
    if (seen.emplace(key, true).second)
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
    std::size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    const std::size_t margin = std::size_t{2} << 30;
    const std::size_t limit = free_bytes > margin ? free_bytes - margin : 0;
    for (const Gemm& g : shapes)
      arena_bytes_ = std::max(arena_bytes_, set_bytes(g) * static_cast<std::size_t>(ideal_sets(g)));
    arena_bytes_ = std::min(arena_bytes_, limit);
    arena_ = device_alloc<__nv_bfloat16>(arena_bytes_, "cudaMalloc (GEMM operands)");
    rows_ = device_alloc<int>(kChecks * sizeof(int), "cudaMalloc (check rows)");
    cols_ = device_alloc<int>(kChecks * sizeof(int), "cudaMalloc (check cols)");
    ref_ = device_alloc<double>(kChecks * sizeof(double), "cudaMalloc (check ref)");
    abs_ = device_alloc<double>(kChecks * sizeof(double), "cudaMalloc (check abs)");
    got_ = device_alloc<float>(kChecks * sizeof(float), "cudaMalloc (check got)");
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
    double ref[kChecks], abs_sum[kChecks];
    float got[kChecks];
    check(cudaMemcpyAsync(ref, ref_, sizeof ref, cudaMemcpyDeviceToHost, dev_.stream),
          "download ref");
    check(cudaMemcpyAsync(abs_sum, abs_, sizeof abs_sum, cudaMemcpyDeviceToHost, dev_.stream),
          "download abs");
    check(cudaMemcpyAsync(got, got_, sizeof got, cudaMemcpyDeviceToHost, dev_.stream),
          "download got");
    dev_.sync();
    double worst = 0;
    for (int i = 0; i < kChecks; ++i) {
      const double bound = std::ldexp(std::fabs(ref[i]), -7) + std::ldexp(abs_sum[i], -12) + 1e-6;
      const double error = std::fabs(static_cast<double>(got[i]) - ref[i]);
      worst = std::isfinite(error) ? std::max(worst, error / bound)
                                   : std::numeric_limits<double>::infinity();
    }
    return worst;
  }

  const Device& dev_;
  std::size_t arena_bytes_ = 0;
  __nv_bfloat16* arena_ = nullptr;
  int *rows_ = nullptr, *cols_ = nullptr;
  double *ref_ = nullptr, *abs_ = nullptr;
  float* got_ = nullptr;
};

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

int run(int argc, char** argv) {
  std::string shapes_path, out_path, peak_source, source_text, attention_path;
  double peak_flops = 0, budget_s = 80;
  int reps = 20;
  bool device_name = false, synthetic = false;
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
      shapes_path = value();
    } else if (a == "--out") {
      out_path = value();
    } else if (a == "--peak-flops") {
      peak_flops = number();
    } else if (a == "--peak-source") {
      peak_source = value();
    } else if (a == "--source") {
      source_text = value();
    } else if (a == "--attention") {
      attention_path = value();
    } else if (a == "--reps") {
      reps = static_cast<int>(number());
    } else if (a == "--budget-s") {
      budget_s = number();
    } else if (a == "--synthetic") {
      synthetic = true;
    } else if (a == "--device-name") {
      device_name = true;
    } else {
      usage("unknown argument " + a);
    }
  }
  Shapes shapes;
  if (!device_name) {
    if (shapes_path.empty() || out_path.empty() || peak_source.empty() || source_text.empty() ||
        !(peak_flops > 0))
      usage("--shapes, --out, --peak-flops, --peak-source and --source are required");
    if (reps < 1) usage("--reps must be >= 1");
    shapes = read_shapes(shapes_path);
    if (shapes.gemms.empty()) usage("--shapes: no `gemm M N K` line in " + shapes_path);
  }

  std::string device_label;
  std::size_t l2_bytes = 0;
  Launch launch;
  Bandwidth bw;
  std::vector<GemmResult> results;
  int failed_checks = 0, unfit = 0;
  std::size_t arena = 0;
  const auto t_start = Clock::now();
  if (synthetic) {
    // Made-up numbers through the same writing and reading-back path, without a GPU.
    device_label = "synthetic (tauplan_cuda_profile --synthetic, no GPU)";
    l2_bytes = std::size_t{50} << 20;
    launch = {4e-6, 2.5e-6};
    bw = {3.0e12, 2.9e12, 2.8e12};
    for (const Gemm& g : shapes.gemms) {
      GemmResult r;
      r.shape = g;
      r.seconds = 2.0 * g.m * static_cast<double>(g.n) * g.k / (0.6 * peak_flops) + 5e-6;
      r.reps = reps;
      r.sets = 1;
      results.push_back(r);
    }
  } else {
    std::string why;
    if (tauplan::exec::cuda::usable_devices(&why) == 0) {
      std::printf("{\"impl\": \"tauplan-cuda-profile\", \"skipped\": %s}\n",
                  json_string(why).c_str());
      return 77;
    }
    Device dev;
    if (device_name) {
      std::printf("%s\n", dev.name.c_str());
      return 0;
    }
    device_label = dev.name;
    l2_bytes = dev.l2_bytes;
    std::fprintf(stderr, "tauplan_cuda_profile: %s: %zu GEMM shapes (%d lines), L2 %.0f MiB\n",
                 device_label.c_str(), shapes.gemms.size(), shapes.gemm_lines,
                 static_cast<double>(dev.l2_bytes) / (1 << 20));

    launch = measure_launch(dev);
    std::printf("{\"launch_overhead_s\": %.9g, \"host_submit_s\": %.9g}\n", launch.per_kernel_s,
                launch.submit_s);
    bw = measure_bandwidth(dev);
    std::printf("{\"copy_Bps\": %.9g, \"read2_write1_Bps\": %.9g, \"memcpy_d2d_Bps\": %.9g}\n",
                bw.copy_Bps, bw.triad_Bps, bw.memcpy_Bps);
    std::fflush(stdout);

    {
      GemmBench bench(dev, shapes.gemms);
      arena = bench.arena_bytes();
      const auto t_sweep = Clock::now();
      for (std::size_t i = 0; i < shapes.gemms.size(); ++i) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - t_sweep).count();
        if (elapsed > budget_s) {
          std::fprintf(stderr,
                       "tauplan_cuda_profile: warning: GEMM sweep over its %.0f s budget: %zu of "
                       "%zu shapes not measured\n",
                       budget_s, shapes.gemms.size() - i, shapes.gemms.size());
          break;
        }
        if (!bench.fits(shapes.gemms[i])) {
          ++unfit;
          std::printf("{\"gemm\": [%d, %d, %d], \"skipped\": \"operands over the free memory\"}\n",
                      shapes.gemms[i].m, shapes.gemms[i].n, shapes.gemms[i].k);
          continue;
        }
        const GemmResult r = bench.run(shapes.gemms[i], reps, 1000 + i);
        const double flop = 2.0 * r.shape.m * static_cast<double>(r.shape.n) * r.shape.k;
        const bool ok = r.max_error_ratio <= 1;
        if (!ok) ++failed_checks;
        std::printf(
            "{\"gemm\": [%d, %d, %d], \"seconds\": %.9g, \"tflops\": %.4g, \"efficiency\": %.4g, "
            "\"reps\": %d, \"sets\": %d, \"check_error_over_bound\": %.3g, \"check_ok\": %s}\n",
            r.shape.m, r.shape.n, r.shape.k, r.seconds, flop / r.seconds / 1e12,
            flop / r.seconds / peak_flops, r.reps, r.sets, r.max_error_ratio,
            ok ? "true" : "false");
        if (flop / r.seconds > 1.05 * peak_flops)
          std::fprintf(stderr,
                       "tauplan_cuda_profile: warning: gemm %d %d %d ran at %.0f TFLOP/s, over "
                       "the peak given (%.0f)\n",
                       r.shape.m, r.shape.n, r.shape.k, flop / r.seconds / 1e12, peak_flops / 1e12);
        if ((i + 1) % 50 == 0)
          std::fprintf(stderr, "tauplan_cuda_profile: %zu/%zu GEMM shapes, %.1f s\n", i + 1,
                       shapes.gemms.size(),
                       std::chrono::duration<double>(Clock::now() - t_sweep).count());
        results.push_back(r);
      }
    }
    std::fflush(stdout);
  }

  AttentionLines attention;
  if (!attention_path.empty()) attention = read_attention(attention_path);

  nlohmann::ordered_json gemms = nlohmann::ordered_json::array();
  std::vector<double> large_efficiency;
  for (const GemmResult& r : results) {
    if (!(r.max_error_ratio <= 1)) continue;  // a wrong result is not a measurement
    gemms.push_back({r.shape.m, r.shape.n, r.shape.k, r.seconds});
    if (r.shape.m >= 1024 && r.shape.n >= 1024 && r.shape.k >= 1024)
      large_efficiency.push_back(2.0 * r.shape.m * static_cast<double>(r.shape.n) * r.shape.k /
                                 r.seconds / peak_flops);
  }
  const double memory_Bps = std::min(bw.copy_Bps, bw.triad_Bps);

  std::ostringstream source;
  source << source_text << "; tauplan_cuda_profile on " << device_label << ": " << results.size()
         << " of " << shapes.gemms.size()
         << " GEMM shapes measured (cublasGemmEx, bf16 A/B/C, fp32 compute, row-major C = A B, "
            "random operands, median of up to "
         << reps << " repetitions timed with CUDA events, fewer past ~50 ms per shape, "
         << "rotating over operand sets spanning 3x the " << (l2_bytes >> 20)
         << " MiB L2 where one set would fit it; every shape checked against a double dot "
            "product)";
  if (failed_checks) source << ", " << failed_checks << " left out for failing the check";
  if (unfit) source << ", " << unfit << " not measured (operands over the free memory)";
  source << "; memory_bandwidth_Bps = the lower of a copy kernel ("
         << format("%.4g", bw.copy_Bps / 1e9) << " GB/s) and a read-2-write-1 kernel ("
         << format("%.4g", bw.triad_Bps / 1e9)
         << " GB/s), bytes read + written over the median of 10, 1 GiB arrays (cudaMemcpy D2D: "
         << format("%.4g", bw.memcpy_Bps / 1e9) << " GB/s)"
         << "; launch_overhead_s = empty kernels back to back to completion, median of 11 x "
            "1000 (host submit alone "
         << format("%.3g", launch.submit_s * 1e6) << " us)";
  // The compute model times attention from flash samples forward and backward; without both,
  // default_attention_efficiency is written (and said so).
  bool flash_forward = false, flash_backward = false;
  for (const auto& sample : attention.samples) {
    if (sample["kernel"] != "flash") continue;
    flash_forward = flash_forward || sample["phase"] == "forward";
    flash_backward = flash_backward || sample["phase"] == "backward";
  }
  double default_attention = 0;  // written only then
  if (!(flash_forward && flash_backward)) {
    if (large_efficiency.empty()) {
      std::fprintf(stderr,
                   "tauplan_cuda_profile: error: no attention samples and no GEMM with M, N, "
                   "K >= 1024 to derive default_attention_efficiency from\n");
      return 1;
    }
    default_attention = std::min(1.0, median(large_efficiency));
    source << "; attention: " << attention.samples.size() << " samples from "
           << (attention_path.empty() ? std::string("nowhere") : attention_path)
           << ", flash not measured forward and backward: default_attention_efficiency = "
           << format("%.3g", default_attention) << ", the median efficiency of the "
           << large_efficiency.size() << " measured GEMMs with M, N, K >= 1024 (an assumption)";
  } else {
    source << "; attention: " << attention.samples.size() << " samples from " << attention_path
           << " (exec/cuda/pytorch_attention.py)";
  }
  nlohmann::ordered_json profile;
  profile["format"] = tauplan::model::kComputeProfileFormat;
  profile["device"] = device_label;
  profile["precision"] = "bf16";
  profile["source"] = source.str();
  profile["peak_flops"] = peak_flops;
  profile["peak_flops_source"] = peak_source;
  profile["memory_bandwidth_Bps"] = memory_Bps;
  profile["launch_overhead_s"] = launch.per_kernel_s;
  if (default_attention > 0) profile["default_attention_efficiency"] = default_attention;
  profile["gemms"] = gemms;
  profile["attention"] = attention.samples;
  {
    std::ofstream out(out_path);
    if (!out) usage("--out: cannot write " + out_path);
    out << pretty(profile);
    if (!out) usage("--out: cannot write " + out_path);
  }
  const double total_s = std::chrono::duration<double>(Clock::now() - t_start).count();

  std::string problem;
  try {
    const tauplan::model::ComputeProfile back = tauplan::model::read_compute_profile(out_path);
    problem = back.problem();
  } catch (const std::exception& e) {
    problem = e.what();
  }
  std::printf(
      "{\"profile\": %s, \"device\": %s, \"gemm_shapes\": %zu, \"gemms_written\": %zu, "
      "\"failed_checks\": %d, \"attention_samples\": %zu, \"attention_lines_ignored\": %d, "
      "\"memory_bandwidth_Bps\": %.9g, \"launch_overhead_s\": %.9g, \"operand_arena_bytes\": "
      "%zu, \"seconds\": %.1f, \"reads_back\": %s%s%s}\n",
      json_string(out_path).c_str(), json_string(device_label).c_str(), shapes.gemms.size(),
      gemms.size(), failed_checks, attention.samples.size(), attention.ignored, memory_Bps,
      launch.per_kernel_s, arena, total_s, problem.empty() ? "true" : "false",
      problem.empty() ? "" : ", \"problem\": ",
      problem.empty() ? "" : json_string(problem).c_str());
  if (!problem.empty())
    std::fprintf(stderr, "tauplan_cuda_profile: error: %s does not read back: %s\n",
                 out_path.c_str(), problem.c_str());
  if (failed_checks)
    std::fprintf(stderr, "tauplan_cuda_profile: error: %d GEMM shapes failed the check\n",
                 failed_checks);
  return problem.empty() && failed_checks == 0 ? 0 : 1;
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
