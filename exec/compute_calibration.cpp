// compute_calibration.cpp: GEMMs, a streaming pass and a tiny call timed on K threads at once,
// made into a compute profile (compute_calibration.hpp).
#include "exec/compute_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "exec/cpu_blas.hpp"
#include "exec/thread_barrier.hpp"
#include "model/error.hpp"

namespace tauplan::exec {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kOrigin = "<compute calibration>";

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Shape {
  int m, n, k, calls;
};

/// Every thread's median seconds of each shape (calls after one warm-up call).
void time_gemms(const std::vector<Shape>& shapes, ThreadBarrier& barrier,
                std::vector<double>& out) {
  int most = 0;
  for (const Shape& s : shapes)
    most = std::max({most, s.m * s.k, s.k * s.n, s.m * s.n});
  std::vector<float> a(static_cast<size_t>(most), 0.5f), b(a), c(a);
  out.assign(shapes.size(), 0);
  std::vector<double> times;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    barrier.wait();
    gemm(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
    times.clear();
    for (int r = 0; r < s.calls; ++r) {
      const auto start = Clock::now();
      gemm(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
      times.push_back(since(start));
    }
    out[i] = median(times);
  }
}

/// Every thread's median seconds of each batched shape: `count` products, each on its own
/// operands (contiguous, untransposed), one after another, as a CPU runs a batched GEMM.
void time_batched_gemms(const std::vector<Shape>& shapes, const std::vector<int>& counts,
                        ThreadBarrier& barrier, std::vector<double>& out) {
  size_t most = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    most = std::max(most, static_cast<size_t>(counts[i]) *
                              static_cast<size_t>(std::max({s.m * s.k, s.k * s.n, s.m * s.n})));
  }
  std::vector<float> a(most, 0.5f), b(a), c(a);
  out.assign(shapes.size(), 0);
  std::vector<double> times;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const size_t sa = static_cast<size_t>(s.m) * s.k, sb = static_cast<size_t>(s.k) * s.n,
                 sc = static_cast<size_t>(s.m) * s.n;
    auto batch = [&] {
      for (int j = 0; j < counts[i]; ++j)
        gemm(false, false, s.m, s.n, s.k, 1.0f, a.data() + j * sa, s.k, b.data() + j * sb, s.n,
             0.0f, c.data() + j * sc, s.n);
    };
    barrier.wait();
    batch();
    times.clear();
    for (int r = 0; r < s.calls; ++r) {
      const auto start = Clock::now();
      batch();
      times.push_back(since(start));
    }
    out[i] = median(times);
  }
}

/// Memory-bound kernels of each kind (layer_ops.hpp's MemoryKernel), written as exec's CPU block
/// writes them (exec/transformer_block.cpp), each returning the bytes layer_ops counts for it.
struct MemoryKernels {
  std::vector<float> x, y, z, w, u, gain, dgain;
  std::vector<float> stats;
  explicit MemoryKernels(size_t floats)
      : x(floats, 0.3f),
        y(floats, 0.2f),
        z(floats, 0.1f),
        w(floats, 0.4f),
        u(floats, 0.5f),
        gain(4096, 1.0f),
        dgain(4096, 0.0f),
        stats(floats, 1.0f) {
    for (size_t i = 0; i < floats; ++i)
      x[i] = 0.5f * std::sin(0.37f * static_cast<float>(i % 1000));
  }
  /// `tiles` causal [n x n] score tiles: softmax forward (exp of the unmasked part, zeros
  /// above the diagonal) and backward (the full rows); 2 + 3 elements counted per score.
  double softmax(int n, int tiles) {
    const size_t sn = static_cast<size_t>(n);
    for (int t = 0; t < tiles; ++t) {
      float* p = x.data() + static_cast<size_t>(t) * sn * sn;
      for (size_t i = 0; i < sn; ++i) {
        float* row = p + i * sn;
        const float largest = *std::max_element(row, row + i + 1);
        float total = 0.0f;
        for (size_t l = 0; l <= i; ++l) {
          row[l] = std::exp(row[l] - largest);
          total += row[l];
        }
        const float inverse = 1.0f / total;
        for (size_t l = 0; l <= i; ++l)
          row[l] *= inverse;
        std::fill(row + i + 1, row + sn, 0.0f);
      }
      // Out of place (the block's is in place on a fresh dP): repeated in place, the
      // gradient would shrink into denormals.
      const float* d = y.data() + static_cast<size_t>(t) * sn * sn;
      float* ds = u.data() + static_cast<size_t>(t) * sn * sn;
      for (size_t i = 0; i < sn; ++i) {
        const float* p_row = p + i * sn;
        const float* d_row = d + i * sn;
        float* ds_row = ds + i * sn;
        float weighted = 0.0f;
        for (size_t l = 0; l < sn; ++l)
          weighted += p_row[l] * d_row[l];
        for (size_t l = 0; l < sn; ++l)
          ds_row[l] = p_row[l] * (d_row[l] - weighted);
      }
    }
    return 5.0 * 4 * static_cast<double>(tiles) * n * n;
  }
  /// RMSNorm forward and backward over `rows` rows of `width`; 2 + 3 elements counted.
  double norm(int rows, int width) {
    const size_t h = static_cast<size_t>(width);
    const float inverse_width = 1.0f / static_cast<float>(width);
    for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
      const float* in = x.data() + r * h;
      float* normalized = y.data() + r * h;
      float* out = z.data() + r * h;
      float second = 0.0f;
      for (size_t c = 0; c < h; ++c)
        second += in[c] * in[c];
      const float inverse_std = 1.0f / std::sqrt(second * inverse_width + 1e-5f);
      stats[r] = inverse_std;
      for (size_t c = 0; c < h; ++c)
        normalized[c] = in[c] * inverse_std;
      for (size_t c = 0; c < h; ++c)
        out[c] = normalized[c] * gain[c];
    }
    for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
      const float* dy = w.data() + r * h;
      const float* normalized = y.data() + r * h;
      float* dx = u.data() + r * h;
      float dot = 0.0f;
      for (size_t c = 0; c < h; ++c) {
        const float dn = dy[c] * gain[c];
        dot += dn * normalized[c];
        dgain[c] += dy[c] * normalized[c];
      }
      dot *= inverse_width;
      for (size_t c = 0; c < h; ++c)
        dx[c] = stats[r] * (dy[c] * gain[c] - normalized[c] * dot);
    }
    return 5.0 * 4 * static_cast<double>(rows) * width;
  }
  /// SwiGLU forward and backward over n elements; 3 + 5 elements counted.
  double activation(size_t n) {
    auto sigmoid = [](float g) { return 1.0f / (1.0f + std::exp(-g)); };
    for (size_t e = 0; e < n; ++e)
      z[e] = x[e] * sigmoid(x[e]) * y[e];
    for (size_t e = 0; e < n; ++e) {
      const float g = x[e], s = sigmoid(g);
      u[e] = w[e] * g * s;
      stats[e] = w[e] * y[e] * s * (1.0f + g * (1.0f - s));
    }
    return 8.0 * 4 * static_cast<double>(n);
  }
  /// A residual add over n elements: 3 elements counted.
  double elementwise(size_t n) {
    for (size_t e = 0; e < n; ++e)
      z[e] += y[e];
    return 3.0 * 4 * static_cast<double>(n);
  }
};

/// One thread's bytes per second of each MemoryKernel, in MemoryKernel order: the geometric
/// mean over the kind's sizes of counted bytes over median seconds (sizes from in-cache to
/// about the last-level cache, weighted alike).
void time_memory_kernels(int repeats, ThreadBarrier& barrier, std::vector<double>& out) {
  MemoryKernels k(1 << 20);
  std::vector<std::function<double()>> sizes[4];
  using model::MemoryKernel;
  for (int n : {80 * 1280, 320 * 1280, 1280 * 640})
    sizes[static_cast<int>(MemoryKernel::Elementwise)].push_back(
        [&k, n] { return k.elementwise(static_cast<size_t>(n)); });
  for (auto [n, tiles] : {std::pair<int, int>{40, 640}, {80, 160}, {160, 40}})
    sizes[static_cast<int>(MemoryKernel::Softmax)].push_back(
        [&k, n = n, tiles = tiles] { return k.softmax(n, tiles); });
  for (auto [rows, width] : {std::pair<int, int>{5120, 160}, {2560, 320}, {1280, 640}})
    sizes[static_cast<int>(MemoryKernel::Norm)].push_back(
        [&k, rows = rows, width = width] { return k.norm(rows, width); });
  for (int n : {80 * 1280, 320 * 1280, 1280 * 640})
    sizes[static_cast<int>(MemoryKernel::Activation)].push_back(
        [&k, n] { return k.activation(static_cast<size_t>(n)); });
  out.assign(4, 0);
  for (int kind = 0; kind < 4; ++kind) {
    double log_sum = 0;
    for (const auto& run : sizes[kind]) {
      barrier.wait();
      double counted = run();  // warm-up
      std::vector<double> times;
      for (int r = 0; r < repeats; ++r) {
        const auto start = Clock::now();
        counted = run();
        times.push_back(since(start));
      }
      log_sum += std::log(counted / median(times));
    }
    out[static_cast<size_t>(kind)] = std::exp(log_sum / static_cast<double>(sizes[kind].size()));
  }
}

/// One thread's median seconds of a read-2-write-1 pass.
double time_stream(long long floats, int passes, ThreadBarrier& barrier) {
  const size_t n = static_cast<size_t>(floats);
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  std::vector<double> times;
  for (int p = 0; p <= passes; ++p) {
    barrier.wait();
    const auto start = Clock::now();
    const float s = 1.0f + 1e-7f * static_cast<float>(p);
    for (size_t i = 0; i < n; ++i)
      a[i] = b[i] + s * c[i];
    if (p > 0) times.push_back(since(start));  // the first pass touches the pages
  }
  volatile float sink = a[n / 2];
  (void)sink;
  return median(times);
}

/// Median seconds of a 1 x 1 x 1 product on this thread.
double time_tiny_call() {
  float a = 1, b = 1, c = 0;
  std::vector<double> times;
  for (int r = 0; r < 2000; ++r) {
    const auto start = Clock::now();
    gemm(false, false, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
    times.push_back(since(start));
  }
  return median(times);
}

/// One way: half the median round trip of a ping-pong through a condition variable.
double time_handoff() {
  std::mutex mutex;
  std::condition_variable cv;
  int turn = 0;
  constexpr int kRounds = 400;
  std::vector<double> trips;
  std::thread other([&] {
    for (int r = 0; r < kRounds; ++r) {
      std::unique_lock<std::mutex> lock(mutex);
      cv.wait(lock, [&] { return turn == 1; });
      turn = 0;
      cv.notify_all();
    }
  });
  for (int r = 0; r < kRounds; ++r) {
    const auto start = Clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    turn = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return turn == 0; });
    trips.push_back(since(start));
  }
  other.join();
  return median(trips) / 2;
}

void check_dims(const std::vector<int>& dims, const char* field) {
  if (dims.empty()) throw InputError(kOrigin, field, "at least one dimension", "none");
  for (int d : dims)
    if (!is_calibration_dimension(d))
      throw InputError(kOrigin, field, "sizes 5 x 2^j (the calibration's hold-out rule)",
                       std::to_string(d));
}

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

std::vector<int> default_calibration_nk_dims() {
  return {20, 40, 80, 160, 320, 640, 1280};
}
std::vector<int> default_calibration_m_dims() {
  return {20, 40, 80, 160, 320, 640, 1280, 2560};
}

bool is_calibration_dimension(long long d) {
  if (d < 5 || d % 5 != 0) return false;
  const long long q = d / 5;
  return (q & (q - 1)) == 0;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        return name;
      }
    }
  return "unknown CPU";
}

ComputeCalibration measure_compute_calibration(const ComputeCalibrationRequest& request) {
  check_dims(request.m_dims, "m_dims");
  check_dims(request.nk_dims, "nk_dims");
  if (!request.batched_counts.empty()) {
    check_dims(request.batched_counts, "batched_counts");
    check_dims(request.batched_dims, "batched_dims");
  }
  if (request.threads < 1 || request.threads > 64)
    throw InputError(kOrigin, "threads", "1 to 64", std::to_string(request.threads));
  if (request.stream_floats < 1024)
    throw InputError(kOrigin, "stream_floats", ">= 1024", std::to_string(request.stream_floats));
  const auto started = Clock::now();
  const int previous_threads = compute_threads();
  set_compute_threads(1);  // the trainer's setting: one BLAS thread per worker thread

  std::vector<Shape> shapes;
  for (int m : request.m_dims)
    for (int n : request.nk_dims)
      for (int k : request.nk_dims) {
        const double flop = 2.0 * m * n * k;
        const int calls =
            static_cast<int>(std::clamp(std::ceil(request.flop_per_shape / flop), 3.0, 40.0));
        shapes.push_back({m, n, k, calls});
      }
  std::vector<Shape> batched;
  std::vector<int> batched_counts;
  for (int count : request.batched_counts)
    for (int m : request.batched_dims)
      for (int n : request.batched_dims)
        for (int k : request.batched_dims) {
          const double flop = 2.0 * m * n * k * count;
          batched.push_back(
              {m, n, k,
               static_cast<int>(std::clamp(std::ceil(request.flop_per_shape / flop), 3.0, 40.0))});
          batched_counts.push_back(count);
        }
  const int t = request.threads;
  ThreadBarrier barrier(t);
  std::vector<std::vector<double>> gemm_times(static_cast<size_t>(t));
  std::vector<std::vector<double>> batched_times(static_cast<size_t>(t));
  std::vector<std::vector<double>> kernel_Bps(static_cast<size_t>(t));
  std::vector<double> stream_s(static_cast<size_t>(t));
  {
    std::vector<std::thread> workers;
    for (int i = 0; i < t; ++i)
      workers.emplace_back([&, i] {
        time_gemms(shapes, barrier, gemm_times[static_cast<size_t>(i)]);
        time_batched_gemms(batched, batched_counts, barrier, batched_times[static_cast<size_t>(i)]);
        if (request.memory_kernels)
          time_memory_kernels(request.stream_passes, barrier, kernel_Bps[static_cast<size_t>(i)]);
        stream_s[static_cast<size_t>(i)] =
            time_stream(request.stream_floats, request.stream_passes, barrier);
      });
    for (std::thread& w : workers)
      w.join();
  }
  ComputeCalibration out;
  model::ComputeProfile& p = out.profile;
  p.device = cpu_model_name();
  p.precision = "fp32";
  double best = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    double sum = 0;
    for (const auto& times : gemm_times)
      sum += times[s];
    const double seconds = sum / t;
    const Shape& shape = shapes[s];
    p.gemms.push_back({double(shape.m), double(shape.n), double(shape.k), seconds});
    best = std::max(best, 2.0 * shape.m * shape.n * shape.k / seconds);
  }
  for (size_t s = 0; s < batched.size(); ++s) {
    double sum = 0;
    for (const auto& times : batched_times)
      sum += times[s];
    const Shape& shape = batched[s];
    p.batched_gemms.push_back(
        {double(batched_counts[s]), double(shape.m), double(shape.n), double(shape.k), sum / t});
  }
  if (request.memory_kernels)
    for (int kind = 0; kind < 4; ++kind) {
      double sum = 0;
      for (const auto& bps : kernel_Bps)
        sum += bps[static_cast<size_t>(kind)];
      p.memory_kernel_Bps[kind] = sum / t;
    }
  p.peak_flops = best;
  p.peak_flops_source = fmt::format(
      "no datasheet figure for this (virtual) CPU: the best fp32 GEMM rate measured here, one "
      "BLAS thread per caller, {} thread(s) at once",
      t);
  double stream_mean = 0;
  for (double s : stream_s)
    stream_mean += s / t;
  p.memory_bandwidth_Bps = 12.0 * static_cast<double>(request.stream_floats) / stream_mean;
  p.launch_overhead_s = time_tiny_call();
  // The CPU block's attention is the math path of GEMMs, timed by shape: no attention samples;
  // a flash kernel (which the CPU block has not) would take this stated default.
  p.default_attention_efficiency = 0.5;
  out.handoff_latency_s = time_handoff();
  set_compute_threads(previous_threads);
  out.seconds = since(started);
  p.source = fmt::format(
      "measured by tauplan calibrate --compute (exec/compute_calibration.cpp) on {}, {}; {} "
      "thread(s) at once, {} GEMM shapes (dimensions 5 x 2^j), stream of 3 x {} floats per "
      "thread; {} batched GEMM shapes (loops of count products); memory kernels {}; {:.1f} s",
      utc_date(), compute_backend_description(), t, shapes.size(), request.stream_floats,
      batched.size(),
      request.memory_kernels ? "softmax, norm, activation, elementwise (exec's loops)" : "none",
      out.seconds);
  if (const std::string problem = p.problem(); !problem.empty())
    throw std::logic_error("compute calibration made a bad profile: " + problem);
  return out;
}

}  // namespace tauplan::exec
