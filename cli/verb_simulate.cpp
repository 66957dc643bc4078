// verb_simulate.cpp: `tauplan simulate JOB.yaml [--json] [--trace FILE]`, the SimGrid engine.
//
// The same Plans as `predict`, each run as a discrete-event simulation on the job's platform
// (sim/simgrid_engine.cpp): flows share links, stragglers and failing hosts act, the network
// model (--network-model CM02|LV08) is recorded in the context. A simulation that deadlocks or
// leaves actors behind is an error (exit 2), never a silent success.
#include "cli/verb.hpp"

namespace tauplan::cli {
namespace {

void register_simulate(CLI::App& app) {
  add_engine_verb(app, "simgrid");
}

const VerbRegistration kRegistration{20, register_simulate};

}  // namespace
}  // namespace tauplan::cli
