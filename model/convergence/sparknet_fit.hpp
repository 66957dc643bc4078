// sparknet_fit.hpp: the arithmetic of `tauplan reproduce` (SparkNet, arXiv 1511.06051), pure C++.
//
// What it models: the fit of the critical-batch convergence model (convergence.hpp:
// Na(b) = Smin (1 + Bcrit/b), Ma(b,K,tau) = Na(K b) (1 + drift (tau - 1)) / tau) to measured
// step counts, by least squares in log space; the speedups SparkNet plots (zero-overhead
// Na(b) / (tau Ma), naive C(b) / (C(b/K) + S), SparkNet Na C / ((tau C + S) Ma)); and the checks
// of the paper's qualitative claims against a measured grid, each with the numbers behind it.
// What it leaves out: measuring (exec/), simulating (sim/), files and plots (cli/).
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tauplan::model {

/// One measured count: Na(b) when workers = 1 and tau = 1, else Ma(b, workers, tau) (rounds).
struct StepsPoint {
  double batch = 0;
  int workers = 1;
  int tau = 1;
  double steps = 0;
  /// Local steps per round of each worker when they differ (time-budget local SGD, mean over
  /// the rounds); empty: tau each. The fit then uses the effective K and tau of
  /// convergence.hpp's effective_round.
  std::vector<double> local_steps = {};

  /// K and tau as the model sees them (effective_round of local_steps, or workers and tau).
  double effective_workers() const;
  double effective_tau() const;
};

struct CriticalBatchFit {
  double min_steps = 0;       ///< Smin
  double critical_batch = 0;  ///< Bcrit (samples)
  double drift = 0;           ///< local-step drift, in [0, 1]
  double rms_log_error = 0;   ///< root mean square of log(measured / fitted) over the points
  int points = 0;
};

/// Least squares of log(tau Ma) = log Smin + log(1 + Bcrit / (K b)) + log(1 + drift (tau - 1))
/// over the points (log Smin in closed form, Bcrit and drift by a coarse-to-fine grid:
/// Bcrit in [1e-3, 1e7] samples, drift in [0, 1]). Throws InputError (file `origin`) for fewer
/// than 3 points or a non-positive count.
CriticalBatchFit fit_critical_batch(const std::vector<StepsPoint>& points,
                                    const std::string& origin = "<measurements>");

/// The fitted model's prediction of a count (Na for K = 1, tau = 1; Ma otherwise).
double fitted_steps(const CriticalBatchFit& fit, double batch, int workers, int tau);
/// The same at a point's batch and effective K and tau.
double fitted_steps(const CriticalBatchFit& fit, const StepsPoint& point);

/// Zero-overhead speedup Na(b) / (tau Ma(b,K,tau)).
double zero_overhead_speedup(double na, double ma, int tau);
/// Naive parallelisation T0 / T1 = C(b) / (C(b/K) + S).
double naive_speedup(double compute_b, double compute_b_over_k, double sync_s);
/// SparkNet T0 / T2 = Na(b) C(b) / ((tau C(b) + S) Ma(b,K,tau)).
double sparknet_speedup(double na, double ma, int tau, double compute_b, double sync_s);

/// n points from lo to hi, evenly spaced in log10 (n >= 2, 0 < lo < hi).
std::vector<double> log_space(double lo, double hi, int n);

/// A measured zero-overhead grid: (K, tau) -> speedup, with Na(b) and the per-cell spread.
struct SpeedupGrid {
  std::vector<int> workers;
  std::vector<int> taus;
  std::map<std::pair<int, int>, double> speedup;  ///< (K, tau) -> Na(b) / (tau Ma)
  /// Relative run-to-run spread of a cell's speedup (|a - b| / mean over two seeds), used as the
  /// tolerance of the checks; cells without a repeat use `default_spread`.
  std::map<std::pair<int, int>, double> spread;
  double default_spread = 0;
  double at(int k, int tau) const;
  double spread_at(int k, int tau) const;
};

struct ClaimCheck {
  std::string id;     ///< short name (naive-no-speedup, sparknet-large-s, tau1-serial, tau-shrink)
  std::string claim;  ///< the paper's claim in words
  bool holds = false;
  std::string evidence;  ///< the numbers behind the verdict, one line
  /// Non-empty when the claim holds by algebra or by construction, whatever was measured: it
  /// is then reported as an identity (why it holds), never as a finding. The numbers beside it
  /// check the implementation, not the paper.
  std::string identity;
};

/// Claim 1: naive parallelisation gives no speedup once S is comparable to C(b): at S = C(b),
/// C(b) / (C(b/K) + S) <= 1.
ClaimCheck check_naive_no_speedup(int workers, double compute_b, double compute_b_over_k);
/// Claim 2: SparkNet keeps a speedup when S is large: at S = `s_over_c` C(b) (where naive is
/// below 1 / (1 + s_over_c)), the best tau of the grid still gives a speedup > 1. Also reports
/// the largest S / C(b) with a speedup > 1.
ClaimCheck check_sparknet_large_s(const SpeedupGrid& grid, int workers, double s_over_c);
/// Claim 3: tau = 1 is serial SGD with batch K b: Ma(b,K,1) = Na(K b) for every measured K,
/// within the relative spread `tolerance`. `pairs` holds (K, Ma(b,K,1), Na(K b)).
ClaimCheck check_tau1_identity(const std::vector<std::tuple<int, double, double>>& pairs,
                               double tolerance);
/// Claim 4: for a fixed K the speedup does not grow as tau shrinks: for every K >= 2 and
/// consecutive taus t1 < t2, speedup(K, t1) <= speedup(K, t2) (1 + spread). Lists violations.
ClaimCheck check_tau_shrink(const SpeedupGrid& grid);

}  // namespace tauplan::model
