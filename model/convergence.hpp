// convergence.hpp: how many steps or rounds a strategy needs to reach the target accuracy.
//
// Na(b): serial SGD iterations at batch b. Ma(b,K,tau): rounds of tau-step local SGD with K
// workers. Models: fixed counts; the critical-batch model Na(b) = Smin (1 + Bcrit/b)
// (McCandlish et al., arXiv 1812.06162) with a local-SGD extension that keeps the identity
// Ma(b,K,1) = Na(K b); and a measured table (CSV) interpolated log-log in b. What it leaves
// out: learning-rate schedules, warm-up and anything that makes convergence depend on time.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tauplan::model {

class ConvergenceModel {
 public:
  virtual ~ConvergenceModel() = default;
  /// Na(b): serial steps at batch b to reach the target.
  virtual double serial_steps(double batch) const = 0;
  /// Ma(b,K,tau): rounds of K workers each taking tau local steps at batch b, then averaging.
  virtual double local_sgd_rounds(double batch, int workers, int tau) const = 0;
  /// One line for the result's context ("critical-batch Smin=... Bcrit=...").
  virtual std::string describe() const = 0;
};

/// Na(b) = iterations for every b; Ma = rounds when given, else ceil(iterations / tau)
/// (the same number of local steps per worker as the serial run).
class FixedCounts : public ConvergenceModel {
 public:
  FixedCounts(double iterations, double rounds = -1);
  double serial_steps(double batch) const override;
  double local_sgd_rounds(double batch, int workers, int tau) const override;
  std::string describe() const override;

 private:
  double iterations_;
  double rounds_;
};

/// Na(b) = Smin (1 + Bcrit / b). Ma(b,K,tau) = Na(K b) / tau_eff(tau) with
/// tau_eff = tau / (1 + drift (tau - 1)): each round is worth tau_eff serial steps at batch
/// K b; drift = 0 means local steps are as good as global ones, drift = 1 means extra local
/// steps add nothing. tau = 1 gives Ma(b,K,1) = Na(K b) exactly.
class CriticalBatch : public ConvergenceModel {
 public:
  CriticalBatch(double min_steps, double critical_batch, double drift);
  double serial_steps(double batch) const override;
  double local_sgd_rounds(double batch, int workers, int tau) const override;
  std::string describe() const override;
  double min_steps() const { return min_steps_; }
  double critical_batch() const { return critical_batch_; }
  double drift() const { return drift_; }

 private:
  double min_steps_;
  double critical_batch_;
  double drift_;
};

/// Measured steps from a CSV with header `batch,workers,tau,steps`: rows with workers = 1 and
/// tau = 1 give Na(b); other rows give Ma(b,K,tau). Interpolation is linear in log b and log
/// steps between measured batches; outside the measured range is an error, never a guess.
/// Ma for an unmeasured (K, tau) with tau = 1 falls back on Na(K b).
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
