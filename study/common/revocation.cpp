// revocation.cpp: closed-form moments of the time to finish rounds under Poisson revocations.
#include "study/common/revocation.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace tauplan::study {
namespace {

/// E[X; X < w] and E[X^2; X < w] for X ~ Exponential(rate), with x = rate w. Series for small x,
/// where the closed forms lose digits to cancellation.
struct Truncated {
  double probability = 0;  ///< P(X < w)
  double first = 0;        ///< E[X; X < w]
  double second = 0;       ///< E[X^2; X < w]
};

Truncated truncated_exponential(double w, double rate) {
  Truncated t;
  const double x = rate * w;
  t.probability = -std::expm1(-x);
  if (x < 0.1) {
    // 1 - e^-x (1 + x)          = sum_{k>=2} (-1)^k (k-1) / k! x^k
    // 2 - e^-x (2 + 2x + x^2)   = sum_{k>=3} (-1)^(k+1) (k-1)(k-2) / k! x^k
    double s1 = 0, s2 = 0, power = x, factorial = 1;
    for (int k = 2; k <= 16; ++k) {
      power *= x;
      factorial *= k;
      const double sign = (k % 2 == 0) ? 1.0 : -1.0;
      s1 += sign * (k - 1) / factorial * power;
      if (k >= 3) s2 += -sign * (k - 1) * (k - 2) / factorial * power;
    }
    t.first = s1 / rate;
    t.second = s2 / (rate * rate);
  } else {
    const double e = std::exp(-x);
    t.first = (1 - e * (1 + x)) / rate;
    t.second = (2 - e * (2 + 2 * x + x * x)) / (rate * rate);
  }
  return t;
}

/// Work `w` that restarts from scratch at each event (rate), plus `extra` (a random delay with
/// the given moments) after each event: w + sum_{i=1..N} (A_i + extra_i).
Moments restart_from_scratch(double w, double rate, Moments extra) {
  if (!(rate > 0) || !(w > 0)) return {w, 0};
  const Truncated t = truncated_exponential(w, rate);
  const double x = rate * w;
  // A: time to the event given it comes before w.
  const double mean_a = t.first / t.probability;
  const double var_a = std::max(0.0, t.second / t.probability - mean_a * mean_a);
  const double mean_n = std::expm1(x);               // q / p
  const double var_n = std::expm1(x) * std::exp(x);  // q / p^2
  const double mean_c = mean_a + extra.mean;
  const double var_c = var_a + extra.variance;
  return {w + mean_n * mean_c, mean_n * var_c + var_n * mean_c * mean_c};
}

}  // namespace

Moments stall_time_moments(double restart_s, double rate_per_s) {
  return restart_from_scratch(restart_s, rate_per_s, Moments{});
}

Moments round_time_moments(double round_s, double rate_per_s, double restart_s) {
  assert(round_s >= 0 && rate_per_s >= 0 && restart_s >= 0);
  return restart_from_scratch(round_s, rate_per_s, stall_time_moments(restart_s, rate_per_s));
}

double ExpectedTime::half_width(double z, int samples) const {
  return samples > 0 ? z * stddev_s / std::sqrt(static_cast<double>(samples)) : 0.0;
}

ExpectedTime expected_total_time(double round_s, long long rounds, double rate_per_s,
                                 double restart_s) {
  ExpectedTime t;
  const auto n = static_cast<double>(rounds);
  const Moments round = round_time_moments(round_s, rate_per_s, restart_s);
  t.failure_free_s = n * round_s;
  t.mean_s = n * round.mean;
  t.stddev_s = std::sqrt(n * round.variance);
  t.expected_revocations = rate_per_s * t.mean_s;
  return t;
}

double normal_quantile_two_sided(double confidence) {
  assert(confidence > 0 && confidence < 1);
  // Upper quantile of N(0,1) at p = 1 - (1 - c)/2 (Acklam's algorithm, central + tail regions).
  const double p = 1 - (1 - confidence) / 2;
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double p_high = 1 - 0.02425;
  if (p <= p_high) {
    const double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double q = std::sqrt(-2 * std::log(1 - p));
  return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
         ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
}

}  // namespace tauplan::study
