// compute_calibration.cpp: GEMMs, a streaming pass and a tiny call timed on K threads at once,
// made into a compute profile (compute_calibration.hpp).
#include "exec/compute_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "exec/cpu_blas.hpp"
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

/// A reusable barrier for `count` threads.
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation != generation_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_, arrived_ = 0;
  long generation_ = 0;
};

struct Shape {
  int m, n, k, calls;
};

/// Every thread's median seconds of each shape (calls after one warm-up call).
void time_gemms(const std::vector<Shape>& shapes, Barrier& barrier, std::vector<double>& out) {
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

/// One thread's median seconds of a read-2-write-1 pass.
double time_stream(long long floats, int passes, Barrier& barrier) {
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
  const int t = request.threads;
  Barrier barrier(t);
  std::vector<std::vector<double>> gemm_times(static_cast<size_t>(t));
  std::vector<double> stream_s(static_cast<size_t>(t));
  {
    std::vector<std::thread> workers;
    for (int i = 0; i < t; ++i)
      workers.emplace_back([&, i] {
        time_gemms(shapes, barrier, gemm_times[static_cast<size_t>(i)]);
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
      "thread; {:.1f} s",
      utc_date(), compute_backend_description(), t, shapes.size(), request.stream_floats,
      out.seconds);
  if (const std::string problem = p.problem(); !problem.empty())
    throw std::logic_error("compute calibration made a bad profile: " + problem);
  return out;
}

}  // namespace tauplan::exec
