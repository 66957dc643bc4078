// convergence.hpp: how many steps or rounds a strategy needs to reach the target accuracy.
//
// Na(b): serial SGD iterations at batch b. Ma(b,K,tau): rounds of tau-step local SGD with K
// workers. Models: fixed counts; the critical-batch model Na(b) = Smin (1 + Bcrit/b)
// (McCandlish et al., arXiv 1812.06162) with a local-SGD extension that keeps the identity
// Ma(b,K,1) = Na(K b); and a measured table (CSV) interpolated log-log in b. Two extensions
// (convergence_staleness.cpp), both proposals [I] built on verified sources, fitted to
// measurements by study/validate with leave-one-out:
// - asynchronous SGD under staleness: updates to target N(b, tau_bar) = Na(b) (1 + kappa
//   tau_bar) for mean staleness tau_bar (parallelism notes section 7: Arjevani, Shamir and
//   Srebro, arXiv 1806.10188, verified abstract: without noise a delay tau is "as bad as
//   non-delayed gradient descent ran on only 1/tau of the gradients", i.e. kappa = 1; with noise
//   the delay's cost vanishes, kappa -> 0); kappa is the staleness cost, fitted per workload.
// - local SGD with unequal local steps H_w (a time budget per round), parameters averaged with
//   weights H_w / sum H: a round moves the parameters by sum_w (H_w / sum H) H_w steps, so it is
//   worth H_eff = sum H^2 / sum H steps, and the weighted average of K noisy workers has the
//   variance of K_eff = (sum H)^2 / sum H^2 equal ones [derived]; hence
//   Ma = Na(K_eff b) (1 + drift (H_eff - 1)) / H_eff, which is Ma(b,K,tau) when every H_w = tau.
// What it leaves out: learning-rate schedules, warm-up and anything that makes convergence
// depend on time.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tauplan::model {

/// Every model's answer is a step count in (0, kMaxConvergenceSteps] (model/base/limits.hpp);
/// inputs that would give more (or none) are an InputError naming the key responsible.
class ConvergenceModel {
 public:
  virtual ~ConvergenceModel() = default;
  /// Na(b): serial steps at batch b to reach the target.
  virtual double serial_steps(double batch) const = 0;
  /// Ma(b,K,tau): rounds of K workers each taking tau local steps at batch b, then averaging.
  virtual double local_sgd_rounds(double batch, int workers, int tau) const = 0;
  /// One line for the result's context ("critical-batch Smin=... Bcrit=...").
  virtual std::string describe() const = 0;

  /// Server updates of asynchronous SGD at per-worker batch b to the target, each applied with
  /// mean staleness tau_bar: Na(b) (1 + kappa tau_bar), kappa = staleness_cost().
  virtual double async_updates(double batch, double mean_staleness) const;
  /// Rounds of local SGD in which worker w takes steps[w] local steps at batch b, parameters
  /// averaged weighted by steps (see the file comment). Equal steps give local_sgd_rounds.
  /// The base refuses unequal steps (InputError): only models that can say override it.
  virtual double unequal_local_rounds(double batch, const std::vector<int>& steps) const;
  /// kappa of async_updates (>= 0; default 1, the noiseless worst case).
  double staleness_cost() const { return staleness_cost_; }
  void set_staleness_cost(double kappa) { staleness_cost_ = kappa; }

 private:
  double staleness_cost_ = 1.0;
};

/// The effective local steps H_eff = sum H^2 / sum H and workers K_eff = (sum H)^2 / sum H^2
/// of a round with local steps `steps` (both the plain values when the steps are equal).
struct EffectiveRound {
  double workers = 1;
  double tau = 1;
};
EffectiveRound effective_round(const std::vector<double>& steps);

/// Na(b) = iterations for every b; Ma = rounds when given, else ceil(iterations / tau)
/// (the same number of local steps per worker as the serial run).
class FixedCounts : public ConvergenceModel {
 public:
  FixedCounts(double iterations, double rounds = -1, std::string origin = "<job>");
  double serial_steps(double batch) const override;
  double local_sgd_rounds(double batch, int workers, int tau) const override;
  std::string describe() const override;
  double unequal_local_rounds(double batch, const std::vector<int>& steps) const override;

 private:
  double iterations_;
  double rounds_;
  std::string origin_;
};

/// Na(b) = Smin (1 + Bcrit / b). Ma(b,K,tau) = Na(K b) / tau_eff(tau) with
/// tau_eff = tau / (1 + drift (tau - 1)): each round is worth tau_eff serial steps at batch
/// K b; drift = 0 means local steps are as good as global ones, drift = 1 means extra local
/// steps add nothing. tau = 1 gives Ma(b,K,1) = Na(K b) exactly.
class CriticalBatch : public ConvergenceModel {
 public:
  CriticalBatch(double min_steps, double critical_batch, double drift,
                std::string origin = "<job>");
  double serial_steps(double batch) const override;
  double local_sgd_rounds(double batch, int workers, int tau) const override;
  std::string describe() const override;
  double unequal_local_rounds(double batch, const std::vector<int>& steps) const override;
  double min_steps() const { return min_steps_; }
  double critical_batch() const { return critical_batch_; }
  double drift() const { return drift_; }

 private:
  double min_steps_;
  double critical_batch_;
  double drift_;
  std::string origin_;
};

/// Measured steps from a CSV with header `batch,workers,tau,steps`: rows with workers = 1 and
/// tau = 1 give Na(b); other rows give Ma(b,K,tau). Interpolation is linear in log b and log
/// steps between measured batches; outside the measured range is an error, never a guess.
/// Ma for an unmeasured (K, tau) with tau = 1 falls back on Na(K b). Rows must hold batch in
/// (0, 1e12], whole workers and tau in [1, 1e6], steps in (0, kMaxConvergenceSteps].
class MeasuredTable : public ConvergenceModel {
 public:
  /// Parses CSV text; `origin` names the file in errors.
  MeasuredTable(const std::string& csv_text, const std::string& origin);
  double serial_steps(double batch) const override;
  double local_sgd_rounds(double batch, int workers, int tau) const override;
  std::string describe() const override;

 private:
  using Curve = std::vector<std::pair<double, double>>;  // (batch, steps), sorted by batch
  double interpolate(const Curve& curve, double batch, const std::string& what) const;
  std::string origin_;
  std::map<std::pair<int, int>, Curve> curves_;  // (workers, tau) -> curve
};

}  // namespace tauplan::model
