// compute_profile.cpp: times of layer operations from a device's profile (compute_profile.hpp).
//
// GEMM and attention times interpolate efficiency, not time: a measured shape's efficiency
// (flop / seconds / peak) is carried to nearby shapes, weighted by the inverse square of the
// distance in log-size space, over the nearest kNeighbours samples; an exact match takes the
// measured time. A batched GEMM (count > 1, the math path's attention) is looked up as the
// stacked GEMM [count m x k] x [k x n] of the same flop, the shape the GPU profiler measures for
// it, unless the profile measured the batched form (batched_gemms): then the per-member
// efficiency of the nearest batched samples in log(count, m, n, k), times count.
// A kernel never runs faster than the host launches it: each op takes at least the profile's
// launch overhead (launches overlap with the previous kernel's run, so the overhead is not
// added to kernels longer than it).
#include "model/compute/compute_profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tauplan::model {
namespace {

constexpr size_t kNeighbours = 4;
constexpr double kExactDistance = 1e-9;

/// Inverse-distance weighting of log-efficiency over the nearest samples.
double interpolate(std::vector<std::pair<double, double>> distance_and_efficiency) {
  // Only the nearest kNeighbours are used: order those, not all the samples (a profile holds
  // about a thousand, and every op of every layout searched looks them up).
  const size_t n = std::min(kNeighbours, distance_and_efficiency.size());
  std::partial_sort(distance_and_efficiency.begin(),
                    distance_and_efficiency.begin() + static_cast<std::ptrdiff_t>(n),
                    distance_and_efficiency.end());
  if (distance_and_efficiency.front().first < kExactDistance)
    return distance_and_efficiency.front().second;
  double weighted = 0, weights = 0;
  for (size_t i = 0; i < n; ++i) {
    const double weight = 1 / (distance_and_efficiency[i].first * distance_and_efficiency[i].first);
    weighted += weight * std::log(distance_and_efficiency[i].second);
    weights += weight;
  }
  return std::exp(weighted / weights);
}

double log_distance(double a1, double a2, double a3, double b1, double b2, double b3, double a4 = 1,
                    double b4 = 1) {
  const double d1 = std::log(a1 / b1), d2 = std::log(a2 / b2), d3 = std::log(a3 / b3),
               d4 = std::log(a4 / b4);
  return std::sqrt(d1 * d1 + d2 * d2 + d3 * d3 + d4 * d4);
}

double attention_flop(const AttentionSample& sample) {
  const double forward = 4 * sample.sequence * sample.sequence * sample.head_dim * sample.heads;
  return sample.phase == ComputePhase::Backward ? 2 * forward : forward;
}

double attention_efficiency(const ComputeProfile& profile, AttentionKernel kernel,
                            ComputePhase phase, double heads, double sequence, double head_dim) {
  const ComputePhase measured_phase =
      phase == ComputePhase::Backward ? ComputePhase::Backward : ComputePhase::Forward;
  std::vector<std::pair<double, double>> candidates;
  for (const AttentionSample& sample : profile.attention) {
    if (sample.kernel != kernel || sample.phase != measured_phase) continue;
    const double efficiency = attention_flop(sample) / sample.seconds / profile.peak_flops;
    candidates.emplace_back(
        log_distance(heads, sequence, head_dim, sample.heads, sample.sequence, sample.head_dim),
        efficiency);
  }
  if (candidates.empty()) return profile.default_attention_efficiency;
  return interpolate(std::move(candidates));
}

}  // namespace

std::string ComputeProfile::problem() const {
  if (!(peak_flops > 0)) return "peak_flops must be positive";
  if (!(memory_bandwidth_Bps > 0)) return "memory_bandwidth_Bps must be positive";
  if (!(launch_overhead_s >= 0)) return "launch_overhead_s must be >= 0";
  if (gemms.empty() && !(default_gemm_efficiency > 0 && default_gemm_efficiency <= 1))
    return "gemms must be measured, or default_gemm_efficiency given in (0, 1]";
  for (const GemmSample& g : gemms)
    if (!(g.m > 0 && g.n > 0 && g.k > 0 && g.seconds > 0))
      return "every gemm needs positive m, n, k and seconds";
  for (const BatchedGemmSample& g : batched_gemms)
    if (!(g.count > 0 && g.m > 0 && g.n > 0 && g.k > 0 && g.seconds > 0))
      return "every batched gemm needs positive count, m, n, k and seconds";
  for (double bps : memory_kernel_Bps)
    if (!(bps >= 0)) return "memory_kernels must be positive";
  for (const AttentionSample& a : attention)
    if (!(a.heads > 0 && a.sequence > 0 && a.head_dim > 0 && a.seconds > 0))
      return "every attention sample needs positive heads, sequence, head_dim and seconds";
  if (default_attention_efficiency < 0 || default_attention_efficiency > 1)
    return "default_attention_efficiency must be in [0, 1]";
  const bool flash_forward = std::any_of(attention.begin(), attention.end(), [](const auto& a) {
    return a.kernel == AttentionKernel::Flash && a.phase == ComputePhase::Forward;
  });
  const bool flash_backward = std::any_of(attention.begin(), attention.end(), [](const auto& a) {
    return a.kernel == AttentionKernel::Flash && a.phase == ComputePhase::Backward;
  });
  if (!(default_attention_efficiency > 0) && !(flash_forward && flash_backward))
    return "flash attention must be measured forward and backward, or "
           "default_attention_efficiency given";
  return {};
}

double gemm_efficiency(const ComputeProfile& profile, double m, double n, double k) {
  if (profile.gemms.empty()) return profile.default_gemm_efficiency;
  std::vector<std::pair<double, double>> candidates;
  candidates.reserve(profile.gemms.size());
  for (const GemmSample& g : profile.gemms)
    candidates.emplace_back(log_distance(m, n, k, g.m, g.n, g.k),
                            2 * g.m * g.n * g.k / g.seconds / profile.peak_flops);
  return interpolate(std::move(candidates));
}

double batched_gemm_efficiency(const ComputeProfile& profile, double count, double m, double n,
                               double k) {
  if (profile.batched_gemms.empty()) return gemm_efficiency(profile, count * m, n, k);
  std::vector<std::pair<double, double>> candidates;
  candidates.reserve(profile.batched_gemms.size());
  for (const BatchedGemmSample& g : profile.batched_gemms)
    candidates.emplace_back(log_distance(m, n, k, g.m, g.n, g.k, count, g.count),
                            2 * g.count * g.m * g.n * g.k / g.seconds / profile.peak_flops);
  return interpolate(std::move(candidates));
}

double memory_kernel_bandwidth(const ComputeProfile& profile, MemoryKernel kernel) {
  const double measured = profile.memory_kernel_Bps[static_cast<int>(kernel)];
  if (measured > 0) return measured;
  const double family = profile.memory_kernel_Bps[static_cast<int>(memory_kernel_family(kernel))];
  return family > 0 ? family : profile.memory_bandwidth_Bps;
}

namespace {

/// The kernel's own time, without the launch floor.
double kernel_seconds(const ComputeOp& op, const ComputeProfile& profile) {
  switch (op.kind) {
    case ComputeOpKind::Gemm:
      return op.flop / (profile.peak_flops *
                        (op.count > 1 ? batched_gemm_efficiency(profile, op.count, op.m, op.n, op.k)
                                      : gemm_efficiency(profile, op.m, op.n, op.k)));
    case ComputeOpKind::Attention:
      return op.flop / (profile.peak_flops * attention_efficiency(profile, AttentionKernel::Flash,
                                                                  op.phase, op.count, op.m, op.k));
    case ComputeOpKind::Memory:
      return op.bytes / memory_kernel_bandwidth(profile, op.memory_kernel);
  }
  return 0;
}

}  // namespace

double op_seconds(const ComputeOp& op, const ComputeProfile& profile) {
  return std::max(kernel_seconds(op, profile), profile.launch_overhead_s);
}

OpsTime ops_seconds(const std::vector<ComputeOp>& ops, const ComputeProfile& profile) {
  OpsTime time;
  for (const ComputeOp& op : ops) {
    const double kernel = kernel_seconds(op, profile);
    time.launch_s += std::max(kernel, profile.launch_overhead_s) - kernel;
    if (op.kind == ComputeOpKind::Gemm) time.gemm_s += kernel;
    if (op.kind == ComputeOpKind::Attention) time.attention_s += kernel;
    if (op.kind == ComputeOpKind::Memory) time.memory_s += kernel;
  }
  return time;
}

}  // namespace tauplan::model
