// machine_calibration.cpp: the study behind `tauplan calibrate` (see machine_calibration.hpp).
#include "study/calibrate/machine_calibration.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "exec/calibrate.hpp"
#include "exec/job_keys.hpp"
#include "model/base/error.hpp"
#include "model/inputs/calibration.hpp"
#include "model/inputs/workload.hpp"
#include "sim/platform_loader.hpp"
#include "study/common/files.hpp"

namespace tauplan::study {
namespace {

nlohmann::json fit_json(const model::LinearFit& fit) {
  return {{"intercept", fit.intercept},
          {"slope", fit.slope},
          {"r2", fit.r2},
          {"max_relative_residual", fit.max_relative_residual},
          {"residuals", fit.residuals}};
}

nlohmann::json fit_report_json(const exec::CpuCalibration& cal, const std::string& out) {
  const model::Calibration& c = cal.calibration;
  return {{"out", out},
          {"date", c.date},
          {"calibrated_from", c.calibrated_from},
          {"workers", c.hosts},
          {"workload", c.workload},
          {"compute", fit_json(cal.compute)},
          {"steps", exec::steps_json(cal.measured)},
          {"step_intercept_s", c.step_intercept_s},
          {"step_overhead_s", c.step_overhead_s()},
          {"per_sample_s", c.per_sample_s},
          {"flop_per_sample", c.flop_per_sample},
          {"speed_flops", c.speed_flops()},
          {"comm", fit_json(cal.comm)},
          {"combines", exec::combines_json(cal.measured)},
          {"alpha_s", c.alpha_s},
          {"beta_Bps", c.beta_Bps},
          {"warnings", cal.warnings}};
}

CalibrateOutcome check_file(const CalibrateRequest& a) {
  const model::Platform platform = sim::load_platform(a.check);
  const model::Calibration c = model::read_calibration(platform);
  CalibrateOutcome outcome;
  outcome.document = model::calibration_json(c);
  outcome.document["file"] = a.check;
  {
    outcome.text = fmt::format(
        "{}: {} calibrated workers, step_overhead_s {:.6g}, R^2 compute {:.6f}, "
        "comm {:.6f} ({}, {})\n",
        a.check, c.hosts, c.step_overhead_s(), c.r2_compute, c.r2_comm, c.calibrated_from, c.date);
  }
  return outcome;
}

}  // namespace

CalibrateOutcome run_calibrate(const CalibrateRequest& a) {
  if (!a.check.empty()) return check_file(a);
  const std::string origin = "command line";
  if (a.device != "cpu")
    throw InputError(origin, "--device", "cpu (calibration of cuda is not implemented yet)",
                     a.device);
  if (a.workers < 1)
    throw InputError(origin, "--workers", "a whole number >= 1", std::to_string(a.workers));
  if (a.steps < 5)
    throw InputError(origin, "--steps", "a whole number >= 5", std::to_string(a.steps));

  const model::Workload workload = model::load_workload("fashion-mlp");
  exec::DatasetOptions data_options;
  data_options.allow_synthetic = true;  // timing only: the values do not change the cost
  data_options.origins = origin;
  const exec::Dataset data = exec::load_dataset(data_options);
  const exec::MlpShape shape = exec::mlp_shape({256, 128}, data);
  exec::CalibrationRequest request;
  request.batches = a.batches;
  request.floats = a.floats;
  request.steps = a.steps;
  request.replicas = a.replicas;
  const exec::CpuCalibration cal = exec::fit_cpu_calibration(
      exec::measure_cpu_calibration(request, data, shape), workload, a.workers,
      fmt::format("fashion-mlp {} step on cpu ({}), threads communicator, thread CPU time",
                  shape.to_string(), data.synthetic ? "synthetic data" : data.name),
      model::utc_now_iso8601());
  CalibrateOutcome outcome;
  outcome.warnings = cal.warnings;
  const model::Calibration& c = cal.calibration;

  make_folder_for(a.out, "--out");
  write_text(a.out, model::calibration_xml(c), "--out");
  // The file must load like any platform and carry readable calibration props.
  const model::Calibration back = model::read_calibration(sim::load_platform(a.out));
  if (back.hosts != c.hosts)
    throw std::runtime_error("calibrate: the written platform reads back wrong");

  outcome.document = fit_report_json(cal, a.out);
  {
    outcome.text = fmt::format(
        "compute  C(b) = {:.4g} s + b x {:.4g} s  (R^2 {:.5f}; {:.4g} flop/s; step overhead "
        "{:.4g} s after the update)\n"
        "combine  T(K, S) = {:.4g} s + K S / {:.4g} B/s  (R^2 {:.5f}, largest relative "
        "residual {:.1f}%)\n"
        "wrote {} ({} workers and the reducer)\n",
        c.step_intercept_s, c.per_sample_s, c.r2_compute, c.speed_flops(), c.step_overhead_s(),
        c.alpha_s, c.beta_Bps, c.r2_comm, 100 * cal.comm.max_relative_residual, a.out, c.hosts);
  }
  return outcome;
}

}  // namespace tauplan::study
