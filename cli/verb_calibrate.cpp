// verb_calibrate.cpp: `tauplan calibrate [--device cpu] [--out FILE] [--json]`, this machine as
// a platform.
//
// Measures, on this machine, lockstep sync rounds of --replicas fashion-mlp replicas at each of
// --batches per-worker sizes: each step (gather, forward, backward, SGD update) and the threads
// combine of their gradients at --floats sizes, on the thread CPU clock the lockstep trainer uses
// (exec/calibrate.hpp); fits C(b) = intercept +
// b x per-sample cost and T(K, S) = alpha + K S / beta (model/calibration.hpp); writes the
// SimGrid platform of --workers such workers and the reducer (--out, default
// results/calibration/this-machine.xml), loads it back through sim/'s loader as a check, and
// prints the fits (a table, or JSON with --json). `--check FILE` only reads a calibration file's
// props and reports them (exit 2 if missing or contradictory). What it leaves out: the CUDA
// device and the MPI/NCCL communicators, and GPU props (efficiency, precision).
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/verb.hpp"
#include "exec/calibrate.hpp"
#include "exec/job_keys.hpp"
#include "model/calibration.hpp"
#include "model/error.hpp"
#include "model/workload.hpp"
#include "sim/platform_loader.hpp"

namespace tauplan::cli {

namespace {

struct CalibrateArgs {
  std::string device = "cpu";
  std::string out = "results/calibration/this-machine.xml";
  std::string check;
  bool json = false;
  int workers = 8;
  std::vector<int> batches = exec::CalibrationRequest{}.batches;
  std::vector<double> floats = exec::CalibrationRequest{}.floats;
  int steps = 48;
  int replicas = 4;
};

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

void check_file(const CalibrateArgs& a) {
  const model::Platform platform = sim::load_platform(a.check);
  const model::Calibration c = model::read_calibration(platform);
  if (a.json) {
    nlohmann::json j = model::calibration_json(c);
    j["file"] = a.check;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "{}: {} calibrated workers, step_overhead_s {:.6g}, R^2 compute {:.6f}, "
        "comm {:.6f} ({}, {})\n",
        a.check, c.hosts, c.step_overhead_s(), c.r2_compute, c.r2_comm, c.calibrated_from, c.date);
  }
}

void run_calibrate(const CalibrateArgs& a) {
  if (!a.check.empty()) return check_file(a);
  const std::string origin = "<command line>";
  if (a.device != "cpu")
    throw InputError(origin, "device", "cpu (calibration of cuda is not implemented yet)",
                     a.device);
  if (a.workers < 1)
    throw InputError(origin, "workers", "a whole number >= 1", std::to_string(a.workers));
  if (a.steps < 5)
    throw InputError(origin, "steps", "a whole number >= 5", std::to_string(a.steps));

  const model::Workload workload = model::load_workload("fashion-mlp");
  exec::DatasetOptions data_options;
  data_options.allow_synthetic = true;  // timing only: the values do not change the cost
  data_options.job_file = origin;
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
  for (const std::string& w : cal.warnings)
    std::cerr << "calibrate: " << w << "\n";
  const model::Calibration& c = cal.calibration;

  make_folder_for(a.out, "--out");
  write_text(a.out, model::calibration_xml(c), "--out");
  // The file must load like any platform and carry readable calibration props.
  const model::Calibration back = model::read_calibration(sim::load_platform(a.out));
  if (back.hosts != c.hosts)
    throw std::runtime_error("calibrate: the written platform reads back wrong");

  if (a.json) {
    std::cout << fit_report_json(cal, a.out).dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "compute  C(b) = {:.4g} s + b x {:.4g} s  (R^2 {:.5f}; {:.4g} flop/s; step overhead "
        "{:.4g} s after the update)\n"
        "combine  T(K, S) = {:.4g} s + K S / {:.4g} B/s  (R^2 {:.5f}, largest relative "
        "residual {:.1f}%)\n"
        "wrote {} ({} workers and the reducer)\n",
        c.step_intercept_s, c.per_sample_s, c.r2_compute, c.speed_flops(), c.step_overhead_s(),
        c.alpha_s, c.beta_Bps, c.r2_comm, 100 * cal.comm.max_relative_residual, a.out, c.hosts);
  }
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* verb = app.add_subcommand(
      "calibrate", "measure this machine (C(b) and combine fits) and write it as a platform XML");
  verb->add_option("--device", args->device, "cpu (default)");
  verb->add_option("--out", args->out, "platform XML to write (default " + args->out + ")");
  verb->add_option("--workers", args->workers, "K: worker hosts in the platform (default 8)");
  verb->add_option("--batches", args->batches, "per-worker batch sizes timed (default 4..128)")
      ->delimiter(',');
  verb->add_option("--floats", args->floats,
                   "combine sizes in floats, capped at the gradient (default 5e4,1e5,2e5)")
      ->delimiter(',');
  verb->add_option("--steps", args->steps, "timed steps per batch size (median), default 48");
  verb->add_option("--replicas", args->replicas,
                   "MLP replicas running lockstep sync rounds: the K timed (default 4)");
  verb->add_option("--check", args->check, "only read and check a calibration platform FILE");
  verb->add_flag("--json", args->json, "print a JSON summary");
  verb->callback([args] { run_calibrate(*args); });
}

static const VerbRegistration kRegistration{35, register_calibrate};

}  // namespace tauplan::cli
