// machine_calibration.hpp: `tauplan calibrate [--device cpu] [--out FILE] [--json]`, this machine
// as a platform.
//
// Measures, on this machine, lockstep sync rounds of --replicas fashion-mlp replicas at each of
// --batches per-worker sizes: each step (gather, forward, backward, SGD update) and the threads
// combine of their gradients at --floats sizes, on the thread CPU clock the lockstep trainer uses
// (exec/calibrate.hpp); fits C(b) = intercept +
// b x per-sample cost and T(K, S) = alpha + K S / beta (model/inputs/calibration.hpp); writes the
// SimGrid platform of --workers such workers and the reducer (--out, default
// results/calibration/this-machine.xml), loads it back through sim/'s loader as a check, and
// prints the fits (a table, or JSON with --json). `--check FILE` only reads a calibration file's
// props and reports them (exit 2 if missing or contradictory). What it leaves out: the CUDA
// device and the MPI/NCCL communicators, and GPU props (efficiency, precision).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/calibrate.hpp"

namespace tauplan::study {

struct CalibrateRequest {
  std::string device = "cpu";
  std::string out = "results/calibration/this-machine.xml";
  std::string check;  ///< only read and check this calibration file
  int workers = 8;
  std::vector<int> batches = exec::CalibrationRequest{}.batches;
  std::vector<double> floats = exec::CalibrationRequest{}.floats;
  int steps = 48;
  int replicas = 4;
};

struct CalibrateOutcome {
  nlohmann::json document;            ///< the fits (or the checked file's props)
  std::string text;                   ///< the same, as lines
  std::vector<std::string> warnings;  ///< poor fits, for stderr
};

CalibrateOutcome run_calibrate(const CalibrateRequest& request);

}  // namespace tauplan::study
