// layout_report.hpp: `tauplan layout JOB.yaml [--fit] [--json]`, one layout of a transformer job
// in closed form.
//
// Loads the job (its layout keys: tensor_parallel, pipeline_parallel, data_parallel,
// micro_batches, pipeline_schedule, virtual_stages, zero_stage, recompute, sequence_parallel),
// its transformer workload and its platform, checks the layout (model/ir/layout.hpp), places it on
// the platform's worker hosts (tensor first, inside a node) and reports: where each mesh
// dimension lies, memory per worker per stage with its reserve (CUDA context, NCCL buffers,
// fragmentation) against the GPU's memory (model/ir/layout_memory.hpp), the step's traffic, its
// time (model/ir/layout_cost.hpp) and the MFU (model flop per worker-second over the hosts' dense
// catalog peak at the workload's precision; "-" with the reason where a host has none). A
// layout that does not fit is bad input: one line naming the smallest layouts of the same
// workers that do (exit 2). --fit lists those layouts instead, with their memory per GPU, step
// time and MFU. Until the engines run
// layouts (issue 13, part two) this is where a layout is evaluated; predict, simulate and
// measure refuse layout keys. What it leaves out: convergence (one step is reported, not a
// time to target), and everything model/ir/layout_cost.hpp leaves out.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace tauplan::study {

struct LayoutRequest {
  std::string job_file;
  std::map<std::string, std::string> overrides;  ///< job keys given as flags
  bool fit = false;                              ///< list the smallest layouts that fit
  int count = 8;                                 ///< how many of them
};

struct LayoutOutcome {
  std::string text;
  nlohmann::json document;
};

LayoutOutcome run_layout(const LayoutRequest& request);

}  // namespace tauplan::study
