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
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "exec/block_kernels.hpp"
#include "exec/cpu_blas.hpp"
#include "exec/peer_group.hpp"
#include "exec/thread_barrier.hpp"
#include "exec/transformer_block.hpp"
#include "model/base/error.hpp"
#include "model/base/statistics.hpp"
#include "model/inputs/calibration.hpp"

namespace tauplan::exec {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kOrigin = "<compute calibration>";

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
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
    out[i] = model::median(times);
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
    out[i] = model::median(times);
  }
}

/// Memory-bound kernels of each kind (layer_ops.hpp's MemoryKernel): exec's CPU block's own
/// loops (block_kernels.hpp), each returning the bytes layer_ops counts for the op.
struct MemoryKernels {
  std::vector<float> x, y, z, w, u, gain, dgain, bias, dbias;
  std::vector<float> stats;
  AdamSettings adam;
  AdamState adam_state;
  explicit MemoryKernels(size_t floats)
      : x(floats),
        y(floats, 0.2f),
        z(floats),
        w(floats),
        u(floats, 0.5f),
        gain(4096, 1.0f),
        dgain(4096, 0.0f),
        bias(4096, 0.1f),
        dbias(4096, 0.0f),
        stats(floats, 1.0f) {
    // Values of the size a trained layer's activations have (order 1, both signs).
    for (size_t i = 0; i < floats; ++i) {
      x[i] = 1.5f * std::sin(0.37f * static_cast<float>(i % 1000));
      z[i] = 2.0f * std::cos(0.23f * static_cast<float>(i % 1009));
      w[i] = 0.01f * std::cos(0.11f * static_cast<float>(i % 997));
    }
  }
  /// `tiles` causal [n x n] score tiles: softmax forward and backward; 2 + 3 elements counted
  /// per score.
  double softmax(int n, int tiles) {
    const size_t sn = static_cast<size_t>(n), tile = sn * sn;
    for (size_t t = 0; t < static_cast<size_t>(tiles); ++t) {
      // In place, as the block runs it (after the first call the scores are probabilities,
      // which stay in [0, 1]); the backward out of place (repeated in place, the gradient would
      // shrink into denormals).
      kernels::causal_softmax_forward(z.data() + t * tile, sn);
      kernels::softmax_backward(z.data() + t * tile, w.data() + t * tile, u.data() + t * tile, sn);
    }
    return 5.0 * 4 * static_cast<double>(tiles) * n * n;
  }
  /// A norm forward and backward over `rows` rows of `width`; 2 + 3 elements counted.
  double norm(bool layer_norm, int rows, int width) {
    const size_t r = static_cast<size_t>(rows), h = static_cast<size_t>(width);
    kernels::norm_forward(layer_norm, r, h, 1e-5f, x.data(), gain.data(),
                          layer_norm ? bias.data() : nullptr, y.data(), stats.data(), z.data());
    kernels::norm_backward(layer_norm, r, h, y.data(), stats.data(), gain.data(), w.data(),
                           u.data(), dgain.data(), layer_norm ? dbias.data() : nullptr);
    return 5.0 * 4 * static_cast<double>(rows) * width;
  }
  /// GELU forward and backward over n elements; 2 + 3 elements counted.
  double gelu(size_t n) {
    kernels::gelu_forward(x.data(), z.data(), n);
    kernels::gelu_backward(x.data(), w.data(), u.data(), n);
    return 5.0 * 4 * static_cast<double>(n);
  }
  /// SwiGLU forward and backward over n elements; 3 + 5 elements counted.
  double swiglu(size_t n) {
    kernels::swiglu_forward(x.data(), y.data(), z.data(), n);
    kernels::swiglu_backward(x.data(), y.data(), w.data(), stats.data(), u.data(), n);
    return 8.0 * 4 * static_cast<double>(n);
  }
  /// The block's Adam update of n parameters: 7 elements counted (read p, g, m, v; write p, m,
  /// v), as an optimizer step's bytes are counted (4-byte values here).
  double optimizer(size_t n) {
    adam_step(adam, adam_state, y.data(), w.data(), n);
    return 7.0 * 4 * static_cast<double>(n);
  }
  /// A residual add over n elements: 3 elements counted.
  double elementwise(size_t n) {
    kernels::add_into(z.data(), y.data(), n);
    return 3.0 * 4 * static_cast<double>(n);
  }
};

/// One thread's bytes per second of each measured MemoryKernel kind (indexed by MemoryKernel;
/// the families Norm and Activation are left 0: their variants are measured): the geometric
/// mean over the kind's sizes of counted bytes over median seconds (sizes from in-cache to
/// about the last-level cache, weighted alike).
void time_memory_kernels(int repeats, ThreadBarrier& barrier, std::vector<double>& out) {
  MemoryKernels k(1 << 20);
  using model::MemoryKernel;
  std::vector<std::function<double()>> sizes[model::kMemoryKernelKinds];
  auto at = [&](MemoryKernel kind) -> std::vector<std::function<double()>>& {
    return sizes[static_cast<int>(kind)];
  };
  for (int n : {80 * 1280, 320 * 1280, 1280 * 640}) {
    const size_t elements = static_cast<size_t>(n);
    at(MemoryKernel::Elementwise).push_back([&k, elements] { return k.elementwise(elements); });
    at(MemoryKernel::Gelu).push_back([&k, elements] { return k.gelu(elements); });
    at(MemoryKernel::SwiGlu).push_back([&k, elements] { return k.swiglu(elements); });
    at(MemoryKernel::Optimizer).push_back([&k, elements] { return k.optimizer(elements); });
  }
  for (auto [n, tiles] : {std::pair<int, int>{40, 640}, {80, 160}, {160, 40}})
    at(MemoryKernel::Softmax).push_back([&k, n = n, tiles = tiles] { return k.softmax(n, tiles); });
  for (auto [rows, width] : {std::pair<int, int>{5120, 160}, {2560, 320}, {1280, 640}}) {
    at(MemoryKernel::RmsNorm).push_back([&k, rows = rows, width = width] {
      return k.norm(false, rows, width);
    });
    at(MemoryKernel::LayerNorm).push_back([&k, rows = rows, width = width] {
      return k.norm(true, rows, width);
    });
  }
  out.assign(model::kMemoryKernelKinds, 0);
  for (int kind = 0; kind < model::kMemoryKernelKinds; ++kind) {
    if (sizes[kind].empty()) continue;
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
      log_sum += std::log(counted / model::median(times));
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
  return model::median(times);
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
  return model::median(times);
}

/// The thread transport's all-reduce over all `threads` threads at once, as the trainer's data
/// and tensor groups run it, at message sizes of the hold-out rule; fit as seconds = latency +
/// bytes / bandwidth (least squares). The fit is written as the validation platform's links
/// (model::ring_allreduce_link).
ThreadTransport time_transport(int threads) {
  ThreadTransport out;
  if (threads < 2) return out;
  const std::vector<AllReducePoint> points =
      measure_thread_allreduce(threads, threads, {5u << 12, 5u << 15, 5u << 18}, 9);  // 80 KB-5 MB
  std::vector<double> bytes, seconds;
  for (const AllReducePoint& p : points) {
    bytes.push_back(p.bytes);
    seconds.push_back(p.seconds);
  }
  const model::LinearFit fit = model::fit_line(bytes, seconds, "<compute calibration>");
  if (fit.slope > 0) {
    out.bandwidth_Bps = 1 / fit.slope;
    out.latency_s = std::max(fit.intercept, 0.0);
  }
  return out;
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
  return model::median(trips) / 2;
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

std::vector<AllReducePoint> measure_thread_allreduce(int threads, int group,
                                                     const std::vector<std::size_t>& floats,
                                                     int repeats) {
  if (group < 2 || threads < group || threads > 64)
    throw std::invalid_argument("measure_thread_allreduce: groups of " + std::to_string(group) +
                                " of " + std::to_string(threads) +
                                " threads (needs 2 <= group <= threads <= 64)");
  const int grouped = threads - threads % group;  // the rest wait at the barriers only
  if (repeats < 1 || floats.empty() ||
      std::any_of(floats.begin(), floats.end(), [](std::size_t n) { return n < 1; }))
    throw std::invalid_argument(
        "measure_thread_allreduce: needs repeats >= 1 and sizes of at least one float");
  ThreadPeerHub hub(threads);
  // times[size][repeat x threads + rank]
  std::vector<std::vector<double>> times(
      floats.size(), std::vector<double>(static_cast<size_t>(repeats * threads)));
  std::vector<std::thread> pool;
  for (int r = 0; r < threads; ++r)
    pool.emplace_back([&, r] {
      PeerGroup& peers = hub.peer(r);
      std::vector<int> members;
      for (int m = r - r % group; r < grouped && m < r - r % group + group; ++m)
        members.push_back(m);
      for (size_t s = 0; s < floats.size(); ++s) {
        std::vector<float> data(floats[s], 1.0f);
        for (int repeat = -1; repeat < repeats; ++repeat) {  // -1: warm-up
          peers.barrier();
          const auto start = Clock::now();
          allreduce_sum(peers, members, data.data(), data.size(), 1);
          if (repeat >= 0) times[s][static_cast<size_t>(repeat * threads + r)] = since(start);
        }
      }
    });
  for (std::thread& t : pool)
    t.join();
  std::vector<AllReducePoint> points;
  for (size_t s = 0; s < floats.size(); ++s) {
    std::vector<double> slowest;
    for (int repeat = 0; repeat < repeats; ++repeat)
      slowest.push_back(*std::max_element(times[s].begin() + repeat * threads,
                                          times[s].begin() + (repeat + 1) * threads));
    points.push_back({4.0 * static_cast<double>(floats[s]), model::median(slowest)});
  }
  return points;
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
    for (int kind = 0; kind < model::kMemoryKernelKinds; ++kind) {
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
  out.transport = time_transport(t);
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
