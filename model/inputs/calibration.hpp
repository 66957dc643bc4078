// calibration.hpp: the pure half of `tauplan calibrate`: straight-line fits and the platform XML.
//
// Models a calibrated CPU machine with two straight lines. The step of one worker,
// C(b) = intercept + b x per-sample cost (the intercept holds the SGD update and fixed costs);
// and the threads communicator's weighted mean of K buffers of S bytes,
// T(K, S) = alpha + K S / beta: one core reads K buffers and writes K buffers, the traffic of a
// central reducer. Both are least-squares fits (Eigen), the combine fit weighted by 1/T^2 so
// that sizes over several decades count alike (relative errors); each reports R^2 and residuals.
// fit_lower_envelope gives instead the line under timings whose noise only adds (the testbed's
// route transfers, exec/testbed/netcal.hpp).
//
// The machine is written as a SimGrid platform: K worker hosts h0..h{K-1} of speed
// flop_per_sample / per-sample cost, and one server host `reducer` (the combining core), each on
// a private SPLITDUPLEX link of bandwidth 2 beta into a crossbar; the reducer's link has latency
// alpha / 2. A parameter-server collective with that one server (`collective: ps`, `servers: 1`)
// then costs alpha/2 + K S/(2 beta) to push and as much to pull, i.e. T(K, S), both in the
// analytic engine (fan-in bound by the server's link) and in SimGrid (K flows sharing it). The
// step overhead the strategies add to every step is the intercept less the update the workload
// declares (update_flop / speed) and less a pass's own fixed cost when that was measured (steps
// of several micro-batches: pass_overhead_s, which a layout's Plan charges on every pass), so that
// C(b) is reproduced whole. A worker may be emulated
// `slowdown` times slower: its speed is divided and its overhead multiplied by that factor,
// which is how exec emulates it (the whole measured step is scaled). A calibration of an
// asynchronous server's exchange (exec/exchange_calibration.hpp) fits alpha and beta to messages
// between threads instead, and gives the reducer its own work per message and per byte of update
// (server_flop_per_message, server_flop_per_byte). Every fitted number travels as a host prop, so
// the file alone says what was measured; read_calibration checks them. A calibration of a
// layout's ranks (a tensor or data group's all-reduce, exec/peer_group.hpp, timed as the ranks run
// it: every group at once) fits that all-reduce of `peer_group` members to latency + bytes /
// bandwidth, and gives the worker links what makes a ring all-reduce of that group over the
// crossbar take it (ring_allreduce_link; the engines' layouts all-reduce in rings).
// What it leaves out: the measuring (exec/calibrate.hpp), GPUs, MPI/NCCL communicators, and
// contention between a combine and computation (lockstep never overlaps them).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/inputs/platform.hpp"

namespace tauplan::model {

/// y = intercept + slope x, fitted by least squares (fit_line) or as the lower envelope of the
/// points (fit_lower_envelope).
struct LinearFit {
  double intercept = 0;
  double slope = 0;
  double r2 = 0;                     ///< 1 - SS_res / SS_tot on the raw values
  double max_relative_residual = 0;  ///< max |y_i - fitted_i| / |y_i|
  std::vector<double> residuals;     ///< y_i - fitted(x_i), in input order
};

/// Least-squares straight line through (x_i, y_i); with `relative`, each squared residual is
/// divided by y_i^2 (so the fit minimises relative errors; y must then be non-zero). Throws
/// InputError (file `origin`) for fewer than 2 points, sizes that differ, non-finite values, or
/// x values that are all equal.
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y,
                   const std::string& origin = "<calibration>", bool relative = false);

/// The straight line under every point (x_i, y_i) that is highest at the mean of x: it
/// minimises the sum of the residuals y_i - fitted(x_i) subject to every residual >= 0 (a linear
/// program whose optimum is the edge of the points' lower convex hull that spans the mean x; at a
/// hull vertex, the mean slope of its two edges). For times whose noise only adds (a transfer
/// stalled by a lost packet or a busy core is never faster than the link lets it be), this is
/// what the quiet repeats say, however many repeats stalled; one sample faster than the rest
/// moves it, so the caller's samples must not be able to come out fast. Residuals, R^2 and the
/// largest relative residual as fit_line reports them. Throws InputError as fit_line does.
LinearFit fit_lower_envelope(const std::vector<double>& x, const std::vector<double>& y,
                             const std::string& origin = "<calibration>");

/// Fills fit's residuals, R^2 and largest relative residual of the points (x, y) about its line
/// (intercept and slope as given), as fit_line and fit_lower_envelope report them; for a line
/// set by a rule of its own (exec/testbed/netcal.hpp: fit_messages). x and y of equal size.
void describe_fit(const std::vector<double>& x, const std::vector<double>& y, LinearFit& fit);

/// What a calibration found, as written into the platform XML.
struct Calibration {
  int hosts = 8;                         ///< K worker hosts
  std::string workload = "fashion-mlp";  ///< the workload whose step was measured
  double flop_per_sample = 0;            ///< of that workload (its catalog value)
  double update_flop = 0;       ///< parameters x update_flop_per_parameter of that workload
  double step_intercept_s = 0;  ///< C(b) intercept, as fitted (clamped at 0)
  /// The fixed cost of one pass (a micro-batch's forward and backward), from a step of several
  /// passes beside C(b) (exec/calibrate.hpp); part of the intercept (0: not measured).
  double pass_overhead_s = 0;
  double per_sample_s = 0;  ///< C(b) slope
  double r2_compute = 0;
  double alpha_s = 0;   ///< combine latency (clamped at 0)
  double beta_Bps = 0;  ///< combine: T = alpha + K S / beta
  double r2_comm = 0;
  std::string calibrated_from;  ///< what was measured (device, communicator, clock)
  std::string date;             ///< ISO 8601 UTC
  /// Emulated slowdown of each worker host (empty: all 1). Host h_k runs at speed / s_k.
  std::vector<double> slowdowns;
  /// The reducer's own work as a parameter server, in flop at its speed (model/ir/server_work.hpp;
  /// 0 and 0: none, the props are not written): per message handled and per byte of update.
  double server_flop_per_message = 0;
  double server_flop_per_byte = 0;
  /// A layout's all-reduce over groups of `peer_group` ranks, fitted to peer_latency_s + bytes /
  /// peer_bandwidth_Bps (peer_group 0: not measured; the worker links then have bandwidth 2 beta
  /// and no latency). With it, each worker's link is ring_allreduce_link of the fit.
  int peer_group = 0;
  double peer_latency_s = 0;
  double peer_bandwidth_Bps = 0;

  /// flop_per_sample / per_sample_s: the effective flop/s of one (unslowed) worker.
  double speed_flops() const { return flop_per_sample / per_sample_s; }
  /// The per-step overhead of an unslowed worker: intercept - update_flop / speed - the pass
  /// overhead (>= 0): with one pass a step, C(b) whole.
  double step_overhead_s() const;
  double slowdown(int host) const;
};

/// A member's private link (SPLITDUPLEX, into a crossbar) on which a ring all-reduce of `group`
/// members, 2 (group - 1) steps of a route's two links each moving bytes / group, takes
/// latency_s + bytes / bandwidth_Bps: bandwidth x 2 (group - 1) / group, and half a step's share
/// of the latency on each of a route's two links, latency / (4 (group - 1)). Throws InputError
/// (origin
/// "<calibration>") for group < 2, a negative latency or a non-positive bandwidth.
struct LinkParameters {
  double bandwidth_Bps = 0;
  double latency_s = 0;
};
LinkParameters ring_allreduce_link(int group, double latency_s, double bandwidth_Bps);

/// The SimGrid platform XML (version 4.1) of a calibration. Throws InputError when a field is
/// out of range (hosts < 1, non-positive per-sample cost, flop, speed or beta, negative
/// intercept, alpha or update flop, R^2 outside [0, 1], slowdowns not K values >= 1, a peer
/// group other than 0 or >= 2, or, with one, a negative peer latency or non-positive bandwidth).
std::string calibration_xml(const Calibration& calibration);

/// The calibration of a loaded platform, from its worker hosts' props (see the file comment):
/// every worker must carry them, the shared ones must agree, and they must agree with what the
/// platform says elsewhere: speed x emulated_slowdown = flop_per_sample / per_sample_s, the
/// step_overhead_s prop = overhead x slowdown, and a server host `reducer` must exist. Throws a
/// one-line InputError naming the file, the host and the prop otherwise.
Calibration read_calibration(const Platform& platform);

/// The calibration's fields as JSON (keys: workers, workload, flop_per_sample, update_flop,
/// step_intercept_s, step_overhead_s, pass_overhead_s, per_sample_s, alpha_s, beta_Bps,
/// slowdowns, r2_compute,
/// r2_comm, server_flop_per_message, server_flop_per_byte, peer_group, peer_latency_s,
/// peer_bandwidth_Bps, calibrated_from, date): what
/// `tauplan calibrate --check --json` prints.
nlohmann::json calibration_json(const Calibration& calibration);
/// The inverse of calibration_json (step_overhead_s is derived, not read; pass_overhead_s and the
/// peer_* keys may be absent, as in a calibration written before they existed: not measured).
/// Throws nlohmann::json exceptions for a missing key or a wrong type.
Calibration calibration_from_json(const nlohmann::json& j);

}  // namespace tauplan::model
