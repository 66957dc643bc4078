// verb_measure.cpp: `tauplan measure JOB.yaml [--json] [--trace FILE]`, the real engine.
//
// Trains the job's MLP for real, once per strategy, from the same Plans predict and simulate
// use (exec/exec_engine.cpp): CPU workers as threads (or one per MPI rank when started by
// `mpirun -np K`), or CUDA workers. Reports per strategy the measured C(b) per worker, S, rounds
// to the target accuracy (Na, Ma), round and total time and the accuracy curve, in the common
// result schema (engine exec-cpu | exec-cuda, timing lockstep | concurrent). Under MPI every
// rank trains and rank 0 prints.
#include "cli/verb.hpp"

namespace tauplan::cli {
namespace {

void register_measure(CLI::App& app) {
  add_engine_verb(app, "exec");
}

const VerbRegistration kRegistration{30, register_measure};

}  // namespace
}  // namespace tauplan::cli
