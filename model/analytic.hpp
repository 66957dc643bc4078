// analytic.hpp: the closed-form engine. Costs every op of a Plan and takes the longest path.
//
// Compute: steps x (overhead + flop / host speed). Update: overhead + flop / speed.
// Collective: its algorithm's alpha-beta time over the platform's routes (or the job's fixed
// S). The round time is the longest path through the DAG; compute_s and comm_s split the
// critical path. SparkNet's T0, T1 and T2 are the special cases of single, sync and local-sgd
// on a homogeneous platform. What it leaves out: contention the formulas do not name,
// stragglers and failures (the simulator's business), and anything stochastic.
#pragma once

#include <vector>

#include "model/plan.hpp"
#include "model/platform.hpp"
#include "model/result.hpp"

namespace tauplan::model {

/// A Plan bound to a platform: ops in topological order with their durations resolved and
/// predecessors in compressed arrays, so that evaluation is one pass over flat memory.
struct CompiledPlan {
  std::vector<double> duration_s;     ///< per op, topological order
  std::vector<OpKind> kind;           ///< per op
  std::vector<double> step_fraction;  ///< per op (compute: part of a step it is, x steps)
  std::vector<int> pred_offset;       ///< CSR: preds of op i are pred_index[pred_offset[i] ..
  std::vector<int> pred_index;        ///<   pred_offset[i+1])
  int steps_per_round = 1;
};

struct RoundTiming {
  double round_s = 0;
  double compute_s = 0;  ///< compute + update on the critical path, per step
  double comm_s = 0;     ///< collectives on the critical path (exposed), per round
};

/// Duration of one op on the platform (the same costs sim/ uses for its uncontended case).
double op_duration_s(const Op& op, const Plan& plan, const Platform& platform);
CompiledPlan compile(const Plan& plan, const Platform& platform);
RoundTiming evaluate(const CompiledPlan& compiled);
/// compile + evaluate, then rounds and total: a ResultRow with engine "analytic".
ResultRow analyze(const Plan& plan, const Platform& platform);

}  // namespace tauplan::model
