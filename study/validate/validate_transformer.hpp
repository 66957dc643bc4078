// validate_transformer.hpp: `tauplan validate JOB.yaml` when the job's workload is a transformer:
// exec's CPU decoder block measured against the analytic engine's prediction from a compute
// profile of this CPU (exec/compute_calibration.hpp), layer by layer and round by round.
//
// Configurations, from the job's strategies (K = the job's workers): single (one worker), sync
// (K data-parallel workers), and for mesh two layouts, tensor_parallel = K and pipeline_parallel
// = K (micro_batches 4, 1F1B). Compute profiles: one per worker count K, measured with K threads
// at once (DIR/profile-K<K>.json), or read from --calibration DIR (its profile-K<K>.json) or one
// --profile FILE for every K. The platform (DIR/platform-K<K>.xml) is this machine's K worker
// threads: hosts h0..h{K-1} whose `compute_profile` prop names the profile, each on a private
// link: where the calibration measured the thread transport (the trainer's all-reduce over K
// threads, fit as latency + bytes / bandwidth), the link that makes a ring all-reduce take that
// time; else the profile's memory bandwidth (a thread's copy) and the measured thread hand-over
// latency. Predicted per configuration: the analytic engine's round of strategy mesh with the
// configuration's layout (single = d1, sync = dK: the engine's single and sync strategies time
// compute as flop / speed, the mesh Plan from the profile), and beside it the same plus the
// terms the model leaves out: the Adam step (28 bytes per local parameter: parameter, gradient
// and two moments read, parameter and moments written, fp32) at the profile's optimizer
// bandwidth (the block's own Adam update, timed by the calibration; the memory bandwidth when a
// profile has none), and the embedding gather and its gradient scatter (20 bytes per token and
// hidden unit) at the memory bandwidth. The layer (forward + backward of one layer, one
// micro-batch, one tensor rank) is predicted from layer_ops.hpp and the profile, and measured
// directly: CpuTransformerBlock::layer_forward and layer_backward on K threads at once, from the
// trainer's initial parameters (init_block_parameters, the job's seed), medians.
// Measured: exec::measure_transformer (threads, wall clock, median step of the slowest rank).
// Each row also says what share of the machine's CPU time other processes used while it was
// measured (/proc/stat's busy time less this process's, over wall time x cores): above 0.1 the
// row is marked contended (its workers shared the cores; such a measurement is not of this
// machine alone). No prediction
// reads a measurement of the validation runs. Output: a table, medians of
// |round error| and |layer error|, a second table of where a step goes on each row's slowest rank
// (its embedding, layers, head and loss, and update as the trainer times them, against the same
// parts predicted for its stage: the layers from layer_ops, the head from logits_ops, the +terms;
// predicted for every stage before the run, the measurement only says which rank is slowest),
// DIR/<job>.csv and DIR/<job>.json (each row's and the summary's
// engine errors in the schema of validate on this machine and on the testbed:
// validate_support.hpp, EngineSeries; its times to target and its contended rows are null here:
// these runs train no target, and a row marked contended above shared the CPU, not a network),
// with provenance (engine, profiles, commit, timing, seed).
// What it leaves out: SimGrid (not run here), the closed form (layout_time; the engine's Plan is
// the prediction), MPI and CUDA, and repeated measurements.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tauplan::study {

struct TransformerValidateRequest {
  std::string job_file;
  std::map<std::string, std::string> overrides;
  std::string out = "results/transformer-validation";
  std::string calibration_dir;  ///< reuse DIR/profile-K<K>.json
  std::string profile;          ///< one profile for every K
  int layer_repeats = 7;
  double max_round_error = -1;  ///< percent; < 0: no bound
};

struct TransformerValidateOutcome {
  nlohmann::json report;
  std::string text;
  std::vector<std::string> notes;
  std::string exceeded;
};

/// True when the job (with its overrides) names a transformer workload.
bool is_transformer_job(const std::string& job_file,
                        const std::map<std::string, std::string>& overrides);

TransformerValidateOutcome run_transformer_validate(const TransformerValidateRequest& request);

/// `tauplan calibrate --compute OUT.json`: measures this CPU with `threads` threads at once
/// (dims: restrict every grid dimension to these, for quick runs; empty: the default grid) and
/// writes the profile. InputError naming the flag for a bad value. Returns the lines to print.
std::string run_compute_calibrate(const std::string& out, int threads,
                                  const std::vector<int>& dims);

}  // namespace tauplan::study
