// published_runs.hpp: published training runs beside tauplan's closed-form prediction of them.
//
// A runs file (experiments/parallelism/megatron.yaml, experiments/parallelism/h100.yaml) lists
// published configurations of transformer training (a model, GPUs, tensor, pipeline and context
// sizes, batch, micro-batch, recomputation, sequence parallelism, interleaving, ZeRO stage) with
// the number each source reports (TFLOP/s per GPU counted with the source's flop, model FLOP
// utilisation, or seconds per iteration) and its source, plus how the GPU's compute is
// calibrated. A run's model is either a Megatron GPT shape ({layers, hidden, heads}: GELU 4h,
// multi-head attention, biases, LayerNorm, learned positions, the file's model_defaults for the
// sequence, vocabulary, bytes, embedding tying, attention kernel and dropout) or a workload of
// the catalog or a file ({workload, sequence, attention, dropout}: its shape as published, the
// sequence, attention kernel and dropout replaced where given; model_defaults do not apply).
// Two calibrations. (1) A layer-time table (megatron.yaml): measured forward + backward times
// of a single layer under several recomputation settings (Korthikanti et al. 2022, arXiv
// 2205.05198, Table 4) fit the GPU's compute profile (model/compute/compute_profile.hpp) where
// no measurement of the GPU exists: the fraction of peak its GEMMs reach (one efficiency, for
// the weight GEMMs and the math path's attention GEMMs alike) and the memory bandwidth its
// memory-bound operations reach, by least squares on the layer times (relative errors), each
// time being the layer's operations (layer_ops, math attention, as Megatron ran it in 2022, with
// dropout's traffic when the runs file's model_defaults say `dropout: true`) under the profile
// plus the tensor all-reduces costed over the platform's routes as layout_cost does; the
// bandwidth is bounded by the GPU's datasheet memory bandwidth (no kernel streams faster than
// the memory), the fit held at the bound when the two-parameter optimum lies beyond it. The
// runs that are the calibration layer's own model and layout are flagged
// (calibration_configuration) and reported apart. (2) `calibration: {profile: platform}`
// (h100.yaml): no run and no table is fitted; the GPUs are timed by the compute profile the
// platform names (its hosts' prop or their GPU's catalog entry), so every run is held out.
// The runs are predicted with layout_time() on a node fabric of as many nodes as they use, its
// GPUs timed by the profile the platform names, and each prediction is set beside its published
// number in the published flop: `flop: hardware` (Megatron 2021-22's count, with the forward
// that recomputation repeats) or `flop: model` (no recomputation: Megatron-Core's
// num_floating_point_operations and PaLM's MFU, Chowdhery et al. 2023, Appendix B); `mfu` is the
// model flop over the GPU's dense peak.
// What it leaves out: anything a runs file does not say (each run lists what it assumes), and
// everything layout_time and the compute model leave out (model/ir/layout_cost.hpp,
// model/compute/layer_ops.hpp: no overlap of communication with compute among them); the fitted
// profile has no launch overhead (five layer times cannot tell it apart) and no GEMM or attention
// samples (one efficiency for every shape).
#pragma once

#include <string>
#include <vector>

#include "model/compute/compute_profile.hpp"
#include "model/inputs/node_fabric.hpp"
#include "model/inputs/transformer.hpp"
#include "model/ir/layout.hpp"

namespace tauplan::study {

/// One measured layer time of the calibration table.
struct CalibrationPoint {
  model::Recompute recompute = model::Recompute::None;
  bool sequence_parallel = false;
  double layer_s = 0;
};

struct PublishedRun {
  std::string name;
  std::string table;         ///< which published table it is from
  std::string source;        ///< paper and table
  std::string assumed;       ///< what the paper does not say and the run assumes
  model::Workload workload;  ///< a transformer
  int workers = 1;
  double batch = 1;
  model::Layout layout;
  bool calibration_configuration = false;  ///< the calibration layer's own model and layout
  /// The published quantity: "tflops_per_gpu" (per GPU, in `flop`), "mfu" (model flop over the
  /// GPU's dense peak) or "iteration_s".
  std::string quantity;
  /// Which flop a published tflops_per_gpu counts: "hardware" (with the forward recomputation
  /// repeats; Narayanan et al. 2021 eq. 3) or "model" (without; Megatron-Core's count, PaLM's
  /// MFU). "model" for mfu, "" for iteration_s.
  std::string flop;
  double published = 0;
};

struct PublishedRuns {
  std::string file;
  std::string platform;  ///< platform name or path the runs file names
  /// `calibration: {profile: platform}`: no fit; the platform's compute profile times the GPUs
  /// and no run is used for calibration (the fields below stay empty).
  bool calibration_from_platform = false;
  std::string calibration_source;
  model::Workload calibration_workload;
  model::Layout calibration_layout;  ///< one node: tensor size, micro-batch of calibration_batch
  double calibration_batch = 1;
  std::vector<CalibrationPoint> calibration;
  std::vector<PublishedRun> runs;
};

/// Reads a runs file; InputError naming the file and key on any problem.
PublishedRuns parse_published_runs(const std::string& text, const std::string& origin);
PublishedRuns load_published_runs(const std::string& path);

/// The calibration: the fitted compute profile of the GPU (peak from the catalog, one
/// efficiency as default_gemm_efficiency = default_attention_efficiency, the memory-bound
/// bandwidth, no launch overhead, no samples), with the fitted layer times beside the
/// measured ones.
struct HardwareFit {
  model::ComputeProfile profile;
  double efficiency = 0;            ///< profile.default_gemm_efficiency
  double memory_bandwidth_Bps = 0;  ///< profile.memory_bandwidth_Bps
  /// The GPU's datasheet memory bandwidth (catalog), the bound of memory_bandwidth_Bps, and the
  /// bandwidth the fit gives without the bound; bandwidth_at_datasheet when that exceeds it and
  /// the fit is held at the bound.
  double datasheet_bandwidth_Bps = 0;
  double unconstrained_bandwidth_Bps = 0;
  bool bandwidth_at_datasheet = false;
  double peak_flops = 0;
  std::string precision;
  std::vector<double> fitted_layer_s;  ///< per calibration point
  std::vector<double> tensor_s;        ///< per calibration point: its tensor all-reduces
};

/// Fits the profile on the calibration points (a layer-time table; InputError naming the file
/// and `calibration` for a runs file whose calibration is the platform's profile) over one node of
/// `fabric` (its GPU's catalog peak at its `precision` prop, its intra-node route for the
/// all-reduces), the bandwidth at most the GPU's datasheet memory bandwidth (a fit beyond it is
/// held at it, the efficiency then fitted alone). InputError when the fabric's GPU has no catalog
/// peak, or the fit is degenerate (settings that do not separate GEMMs from memory-bound traffic)
/// or unphysical (an efficiency above 1, a bandwidth <= 0).
HardwareFit fit_hardware(const PublishedRuns& runs, const model::NodeFabric& fabric);

/// Empty when `profile` is the fit (peak, efficiencies and bandwidth within `tolerance`
/// relative, no launch overhead, no samples), else what differs.
std::string profile_difference(const model::ComputeProfile& profile, const HardwareFit& fit,
                               double tolerance = 5e-3);

struct RunPrediction {
  double iteration_s = 0;
  double tflops_per_gpu = 0;        ///< hardware flop (with recomputation) / (iteration x GPUs)
  double model_tflops_per_gpu = 0;  ///< model flop (without) / (iteration x GPUs)
  double mfu = 0;                   ///< model_tflops_per_gpu over the GPU's dense peak
  double predicted = 0;             ///< in the run's quantity
  double error = 0;                 ///< (predicted - published) / published
  double bubble_s = 0, tensor_s = 0, data_s = 0, pipeline_send_s = 0;
};

/// Predicts a run on `fabric` (its GPUs' speed, props and compute profile as they are) with as
/// many nodes as the run needs; mfu needs the GPU's catalog peak at its `precision` prop
/// (InputError naming the fabric's file otherwise).
RunPrediction predict_run(const PublishedRun& run, const model::NodeFabric& fabric);

/// The median of |error| over the runs `include` selects (0 when none does): the summary lines
/// of `tauplan published` are computed from the rows through it.
double median_abs_error(const std::vector<RunPrediction>& predictions,
                        const std::vector<bool>& include);

}  // namespace tauplan::study
