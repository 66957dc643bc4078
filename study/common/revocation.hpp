// revocation.hpp: expected training time when servers can be revoked (or fail) and the job
// restarts the lost round from the last averaged parameters.
//
// Model (the simulator's fault semantics, sim/simulator.hpp): revocations of the job's servers
// form a Poisson process of rate L (the sum of every used revocable node's rate; memoryless,
// so it does not matter which node is hit or when it was last replaced). A revocation during a
// round loses the round's work done so far; the job then stalls R seconds (a replacement node
// boots and reloads the last averaged parameters), and a revocation during the stall starts the
// stall again; then the round restarts from scratch. Rounds take r seconds without failures.
//
// Closed form, per round (T = time to complete one round, D = one stall):
//   E[D] = (e^{L R} - 1) / L
//   E[T] = e^{L R} (e^{L r} - 1) / L                     (-> r as L -> 0)
// and Var[T] from the compound-geometric form T = r + sum_{i=1..N} (A_i + D_i), N ~ Geometric
// with P(N = n) = q^n p, p = e^{-L r}, A = the time to failure given it is < r:
//   Var[T] = E[N] Var[A + D] + Var[N] E[A + D]^2,   E[N] = q/p, Var[N] = q/p^2
// (Var[D] likewise, with work R and no stall). Rounds are independent (Poisson process), so the
// n rounds' total has mean n E[T] and variance n Var[T]. Confidence interval: the mean of S
// independent simulations (seeds) of the whole job is, by the central limit theorem over the
// n S independent rounds, normal with mean n E[T] and standard deviation sqrt(n Var[T] / S);
// the interval at confidence c is n E[T] +- z_c sqrt(n Var[T] / S) (z_0.99 = 2.576).
// What it leaves out: revocations that hit between rounds (probability 0 in continuous time),
// warnings before a revocation (a preemption notice would allow a checkpoint), price changes,
// the 24 h lifetime cap of some clouds' revocable VMs, and correlated revocations of many nodes
// at once (each node is an independent Poisson source).
#pragma once

namespace tauplan::study {

/// Mean and variance of one random duration.
struct Moments {
  double mean = 0;
  double variance = 0;
};

/// Time of one round of `round_s` seconds under revocations of rate `rate_per_s` with a stall
/// of `restart_s` after each (see the header comment). rate_per_s = 0 gives {round_s, 0}.
Moments round_time_moments(double round_s, double rate_per_s, double restart_s);

/// One stall D: the time until `restart_s` seconds pass without a revocation.
Moments stall_time_moments(double restart_s, double rate_per_s);

/// The whole job: `rounds` rounds of `round_s`.
struct ExpectedTime {
  double failure_free_s = 0;        ///< rounds x round_s
  double mean_s = 0;                ///< E[total]
  double stddev_s = 0;              ///< sqrt(Var[total]) of one run
  double expected_revocations = 0;  ///< E[number of revocations during the job], = L E[total]
  /// Half-width of the interval at confidence `z` (e.g. 2.576 for 99%) for the mean of
  /// `samples` independent runs.
  double half_width(double z, int samples) const;
};

ExpectedTime expected_total_time(double round_s, long long rounds, double rate_per_s,
                                 double restart_s);

/// The two-sided standard normal quantile for confidence `confidence` in (0, 1), e.g.
/// 0.95 -> 1.960, 0.99 -> 2.576 (Acklam's rational approximation, |error| < 1.2e-9).
double normal_quantile_two_sided(double confidence);

}  // namespace tauplan::study
