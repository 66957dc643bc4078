// rank_times.hpp: one rank's times in a layout's run, as the MLP's (exec/pipeline_parallel.hpp)
// and the transformer's (exec/transformer_trainer.hpp) layout trainers report them, and as JSON.
#pragma once

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tauplan::exec {

struct RankTimes {
  int rank = 0, data_index = 0, tensor_index = 0, stage = 0;
  double step_s = 0;     ///< median over steps
  double compute_s = 0;  ///< median of step - communication waits
  /// Median of receives + tensor and data all-reduces (+ a transformer's combine and barriers).
  double comm_s = 0;
  /// Per step (a transformer's: also its embedding's and head's).
  long long tensor_allreduces = 0;
  /// Pipeline sends per step (a transformer's: its slices and its all-gathers' sends).
  long long messages = 0;
  /// A transformer step's parts, means over steps on the wall clock (0 for the MLP's layouts):
  /// the embedding (forward and backward), the layers, the head and loss (each with its own
  /// tensor all-reduces), the optimizer's update. The rest of a step (its tokens drawn, gradients
  /// zeroed, pipeline sends and waits, the data group's combine) is step - their sum.
  double embedding_s = 0, layers_s = 0, head_s = 0, update_s = 0;
};

/// The ranks' times, one object each (rank, its indices in the mesh, step, compute and
/// communication medians, tensor all-reduces and pipeline sends per step; a transformer's step
/// parts as step_parts_mean_s).
inline nlohmann::json ranks_json(const std::vector<RankTimes>& ranks) {
  nlohmann::json out = nlohmann::json::array();
  for (const RankTimes& r : ranks) {
    nlohmann::json rank = {{"rank", r.rank},
                           {"data_index", r.data_index},
                           {"tensor_index", r.tensor_index},
                           {"stage", r.stage},
                           {"step_s", r.step_s},
                           {"compute_s", r.compute_s},
                           {"comm_s", r.comm_s},
                           {"tensor_allreduces_per_step", r.tensor_allreduces},
                           {"pipeline_sends_per_step", r.messages}};
    if (r.layers_s > 0)
      rank["step_parts_mean_s"] = {{"embedding", r.embedding_s},
                                   {"layers", r.layers_s},
                                   {"head", r.head_s},
                                   {"update", r.update_s}};
    out.push_back(std::move(rank));
  }
  return out;
}

}  // namespace tauplan::exec
