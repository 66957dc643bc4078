// published_runs.hpp: published training runs beside tauplan's closed-form prediction of them.
//
// A runs file (experiments/parallelism/megatron.yaml) lists published configurations of
// transformer training (a GPT shape, GPUs, tensor and pipeline sizes, batch, micro-batch,
// recomputation, sequence parallelism, interleaving) with the number each paper reports (TFLOP/s
// per GPU, or seconds per iteration) and its source, plus one calibration table: measured
// forward + backward times of a single layer under several recomputation settings (Korthikanti
// et al. 2022, arXiv 2205.05198, Table 4). The calibration fixes the two numbers the hardware
// description cannot: the fraction of peak the GEMMs reach (eta, the host speed is peak x eta)
// and the memory-bound element-wise traffic per stored activation byte (the `elementwise_passes`
// host prop), by least squares on the layer times (relative errors), with the tensor
// all-reduces costed over the platform's routes. The runs are then predicted with
// layout_time() on a node fabric of as many nodes as they use, and each prediction is set
// beside its published number. The calibration is a fit; the runs it is checked on are other
// tables (Narayanan et al. 2021 Table 1, Korthikanti et al. 2022 Table 5), except the 22B run
// of Table 5, which is the configuration the calibration layer comes from (flagged).
// What it leaves out: anything a runs file does not say (each run lists what it assumes), and
// everything layout_time leaves out (model/layout_cost.hpp).
#pragma once

#include <string>
#include <vector>

#include "model/layout.hpp"
#include "model/node_fabric.hpp"
#include "model/transformer.hpp"

namespace tauplan::model {

/// One measured layer time of the calibration table.
struct CalibrationPoint {
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;
  double layer_s = 0;
};

struct PublishedRun {
  std::string name;
  std::string table;    ///< which published table it is from
  std::string source;   ///< paper and table
  std::string assumed;  ///< what the paper does not say and the run assumes
  Workload workload;    ///< a transformer
  int workers = 1;
  double batch = 1;
  Layout layout;
  bool calibration_configuration = false;  ///< the calibration layer's own model and layout
  /// The published quantity: "tflops_per_gpu" (Megatron's hardware flop with recomputation,
  /// per GPU) or "iteration_s".
  std::string quantity;
  double published = 0;
};

struct PublishedRuns {
  std::string file;
  std::string platform;  ///< platform name or path the runs file names
  std::string calibration_source;
  Workload calibration_workload;
  Layout calibration_layout;  ///< one node: tensor size, micro-batch of calibration_batch
  double calibration_batch = 1;
  std::vector<CalibrationPoint> calibration;
  std::vector<PublishedRun> runs;
};

/// Reads a runs file; InputError naming the file and key on any problem.
PublishedRuns parse_published_runs(const std::string& text, const std::string& origin);
PublishedRuns load_published_runs(const std::string& path);

/// The calibration: eta (fraction of the GPU's peak) and the element-wise passes, with the
/// fitted layer times beside the measured ones.
struct HardwareFit {
  double efficiency = 0;
  double elementwise_passes = 0;
  double peak_flops = 0;
  std::string precision;
  std::vector<double> fitted_layer_s;  ///< per calibration point
};

/// Fits eta and the element-wise passes on the calibration points over one node of `fabric`
/// (its GPU's peak at its `precision` prop, its memory bandwidth, its intra-node route).
/// InputError when the fabric's GPU has no catalog peak or bandwidth, or the fit is degenerate.
HardwareFit fit_hardware(const PublishedRuns& runs, const NodeFabric& fabric);

struct RunPrediction {
  double iteration_s = 0;
  double tflops_per_gpu = 0;  ///< hardware flop (with recomputation) / (iteration x GPUs)
  double predicted = 0;       ///< in the run's quantity
  double error = 0;           ///< (predicted - published) / published
  double bubble_s = 0, tensor_s = 0, data_s = 0, pipeline_send_s = 0;
};

/// Predicts a run on `fabric` (its GPUs' speed and props as they are) with as many nodes as
/// the run needs.
RunPrediction predict_run(const PublishedRun& run, const NodeFabric& fabric);

}  // namespace tauplan::model
