// calibration.hpp: the pure half of `tauplan calibrate`: straight-line fits and the platform XML.
//
// Models a calibrated machine with two straight lines: the step time of one worker,
// C(b) = overhead + b x per-sample cost, and the time of one combine of S bytes,
// T(S) = alpha + S / beta. Both are ordinary least-squares fits (Eigen), reported with R^2 and
// their residuals. The machine is written as a SimGrid platform of K identical worker hosts
// (speed = flop_per_sample / per-sample cost) around a crossbar of private SPLITDUPLEX links of
// latency alpha/2 and bandwidth beta, so every host-to-host route has latency alpha and
// bandwidth beta; the fitted overhead and the fit quality travel as host props. A reader checks
// those props back (for validate). What it leaves out: the measuring itself (cli/verb_calibrate),
// contention between concurrent combines, and GPU props (no efficiency or precision is written).
#pragma once

#include <string>
#include <vector>

#include "model/platform.hpp"

namespace tauplan::model {

/// y = intercept + slope x, fitted by least squares.
struct LinearFit {
  double intercept = 0;
  double slope = 0;
  double r2 = 0;                  ///< 1 - SS_res / SS_tot (1 when every y is equal and fitted)
  std::vector<double> residuals;  ///< y_i - fitted(x_i), in input order
};

/// Least-squares straight line through (x_i, y_i). Throws InputError (file `origin`) for fewer
/// than 2 points, sizes that differ, non-finite values, or x values that are all equal.
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y,
                   const std::string& origin = "<calibration>");

/// What a calibration found, as written into the platform XML.
struct Calibration {
  int hosts = 8;               ///< K worker hosts
  double flop_per_sample = 0;  ///< of the workload measured (fashion-mlp)
  double step_overhead_s = 0;  ///< C(b) intercept (clamped at 0)
  double per_sample_s = 0;     ///< C(b) slope
  double r2_compute = 0;
  double alpha_s = 0;   ///< combine latency (clamped at 0)
  double beta_Bps = 0;  ///< combine bandwidth, bytes/s
  double r2_comm = 0;
  std::string calibrated_from;  ///< what was measured (workload, device, communicator)
  std::string date;             ///< ISO 8601 UTC

  /// flop_per_sample / per_sample_s: the effective flop/s of one worker.
  double speed_flops() const { return flop_per_sample / per_sample_s; }
};

/// The SimGrid platform XML (version 4.1) of a calibration. Throws InputError when a field is
/// out of range (hosts < 1, non-positive per-sample cost, speed or beta, negative overhead or
/// alpha, R^2 outside [0, 1]).
std::string calibration_xml(const Calibration& calibration);

/// The calibration props of a loaded platform: every worker host must carry step_overhead_s
/// (a number >= 0), r2_compute and r2_comm (numbers in [0, 1]), calibrated_from and date, and
/// a positive speed; all hosts must agree. Throws a one-line InputError naming the file, the host
/// and the prop otherwise. per_sample_s, alpha_s and beta_Bps are left 0 (they live in the
/// speeds and links; flop_per_sample is unknown to the file).
Calibration read_calibration(const Platform& platform);

}  // namespace tauplan::model
