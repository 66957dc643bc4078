// server_probe.cpp: a parameter server's own processing, timed (see server_probe.hpp).
#include "exec/server_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "exec/combine.hpp"

namespace tauplan::exec {
namespace {

using Clock = std::chrono::steady_clock;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// A value the optimiser cannot drop: every timed result is folded into it.
volatile float g_sink = 0;

/// One sync call's processing at one server: the weighted mean of K shards of n floats, as
/// serve_push_pull makes it (mean_of_pushes: the weights' list, combine_mean into the mean's
/// buffer, kept from call to call as the server keeps it).
double time_sync_call(const std::vector<std::vector<float>>& pushed, std::size_t n,
                      std::vector<float>& mean) {
  std::vector<const float*> inputs;
  for (const std::vector<float>& push : pushed)
    inputs.push_back(push.data());
  mean.resize(n);
  const auto start = Clock::now();
  mean_of_pushes(inputs, n, mean.data());
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  g_sink = g_sink + mean[n / 2];
  return seconds;
}

/// One async update's processing: the SGD apply of a gradient shard (ServerRank::apply's).
double time_async_update(std::vector<float>& shard, const std::vector<float>& gradient) {
  constexpr float kLearningRate = 0.01f;
  const auto start = Clock::now();
  apply_sgd(shard.data(), gradient.data(), shard.size(), kLearningRate);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  g_sink = g_sink + shard[shard.size() / 2];
  return seconds;
}

ServerProbePoint time_one_size(const ServerProbeRequest& r, std::size_t n) {
  std::vector<double> times;
  const auto fill = [](std::vector<float>& v, float base) {
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = base + 1e-6f * static_cast<float>(i % 1000);
  };
  ServerProbePoint point;
  if (r.kind == ServerProbeKind::Combine) {
    // Each pushed shard carries its weight after the floats, as the server receives them.
    std::vector<std::vector<float>> pushed(static_cast<std::size_t>(r.workers),
                                           std::vector<float>(n + 1));
    for (std::size_t k = 0; k < pushed.size(); ++k) {
      fill(pushed[k], static_cast<float>(k));
      pushed[k][n] = 1;
    }
    std::vector<float> mean;
    time_sync_call(pushed, n, mean);  // warm-up
    for (int i = 0; i < r.repeats; ++i)
      times.push_back(time_sync_call(pushed, n, mean));
    point.messages = 2.0 * r.workers;
    point.bytes = static_cast<double>(r.workers) * static_cast<double>(n) * sizeof(float);
  } else {
    std::vector<float> shard(n), gradient(n);
    fill(shard, 1);
    fill(gradient, 0.5f);
    time_async_update(shard, gradient);  // warm-up
    for (int i = 0; i < r.repeats; ++i)
      times.push_back(time_async_update(shard, gradient));
    point.messages = 2;
    point.bytes = static_cast<double>(n) * sizeof(float);
  }
  point.seconds = median_of(times);
  return point;
}

constexpr int kServerProbeTag = 7301;
constexpr std::size_t kPoints = 3;  // shard sizes: half, once and twice the run's

}  // namespace

ServerProbeFit fit_server_points(const std::vector<ServerProbePoint>& points) {
  // Normal equations of seconds = a m + b y through the origin.
  double mm = 0, my = 0, yy = 0, ms = 0, ys = 0;
  for (const ServerProbePoint& p : points) {
    mm += p.messages * p.messages;
    my += p.messages * p.bytes;
    yy += p.bytes * p.bytes;
    ms += p.messages * p.seconds;
    ys += p.bytes * p.seconds;
  }
  const double det = mm * yy - my * my;
  if (!(det > 1e-12 * mm * yy))
    throw std::invalid_argument(
        "server processing fit: the points need two distinct ratios of bytes to messages");
  ServerProbeFit fit;
  fit.points = points;
  double a = (ms * yy - ys * my) / det;
  double b = (mm * ys - my * ms) / det;
  if (a < 0) {
    a = 0;
    b = std::max(0.0, ys / yy);
  } else if (b < 0) {
    b = 0;
    a = std::max(0.0, ms / mm);
  }
  fit.seconds_per_message = a;
  fit.seconds_per_byte = b;
  return fit;
}

std::vector<ServerProbePoint> time_server_processing(const ServerProbeRequest& r) {
  if (r.workers < 1 || r.shard_floats < 2 || r.repeats < 1)
    throw std::invalid_argument(
        "server probe: workers >= 1, a shard of 2 floats or more and "
        "repeats >= 1");
  std::vector<ServerProbePoint> points;
  for (const std::size_t n : {r.shard_floats / 2, r.shard_floats, 2 * r.shard_floats})
    points.push_back(time_one_size(r, n));
  return points;
}

std::vector<ServerProbeFit> probe_server_processing(PeerGroup& peers, int workers,
                                                    const ServerProbeRequest& request) {
  const int me = peers.rank();
  peers.barrier();
  std::vector<float> mine;
  if (me >= workers)
    for (const ServerProbePoint& p : time_server_processing(request))
      mine.insert(mine.end(), {static_cast<float>(p.messages), static_cast<float>(p.bytes),
                               static_cast<float>(p.seconds)});
  if (me != 0) {
    if (me >= workers) peers.send(0, mine.data(), mine.size(), kServerProbeTag);
    peers.barrier();
    return {};
  }
  std::vector<ServerProbeFit> fits;
  for (int rank = workers; rank < peers.size(); ++rank) {
    std::vector<float> theirs(3 * kPoints);
    peers.recv(rank, theirs.data(), theirs.size(), kServerProbeTag);
    std::vector<ServerProbePoint> points;
    for (std::size_t i = 0; i < kPoints; ++i)
      points.push_back({static_cast<double>(theirs[3 * i]), static_cast<double>(theirs[3 * i + 1]),
                        static_cast<double>(theirs[3 * i + 2])});
    fits.push_back(fit_server_points(points));
    fits.back().rank = rank;
  }
  peers.barrier();
  return fits;
}

ServerWork server_work_at(const ServerProbeFit& fit, double speed_flops,
                          double optimizer_flop_per_byte) {
  ServerWork work;
  work.flop_per_message = fit.seconds_per_message * speed_flops;
  work.flop_per_byte = std::max(0.0, fit.seconds_per_byte * speed_flops - optimizer_flop_per_byte);
  return work;
}

}  // namespace tauplan::exec
