// verb_predict.cpp: `tauplan predict JOB.yaml [--json]`, the analytic engine.
//
// One Plan per strategy of the job, each evaluated in closed form
// (model/analytic/analytic_engine.cpp): T0, T1, T2, the round split into compute and exposed
// communication, rounds to target, total time and speedup against the baseline.
#include "cli/verb.hpp"

namespace tauplan::cli {
namespace {

void register_predict(CLI::App& app) {
  add_engine_verb(app, "analytic");
}

const VerbRegistration kRegistration{10, register_predict};

}  // namespace
}  // namespace tauplan::cli
