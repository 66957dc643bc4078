// engine.hpp: the one interface every engine answers through (analytic, simgrid, exec).
//
// An engine takes a loaded job (its workload, platform, convergence model, strategy options and
// strategies), builds each strategy's Plan with make_plan, runs it its own way and returns one
// ResultRow per plan in the common schema, filling the RunContext with how it ran (network
// model, engine settings). Verbs and studies reach engines only through this interface and the
// registry of study/common/engines.hpp; a study that needs a process per run (SimGrid holds one
// engine per process, a measurement needs the cores to itself) runs the engine's verb in a child
// process, which calls the same interface. What it leaves out: loading the inputs (study/
// inputs.hpp: platform loading is sim/'s) and rendering the rows (model/ir/result.hpp).
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "model/convergence/convergence.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"
#include "model/ir/result.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::model {

/// A job with every input an engine needs, loaded and checked.
struct JobInputs {
  Job job;
  Workload workload;
  std::string platform_path;
  Platform platform;
  std::unique_ptr<ConvergenceModel> convergence;
  StrategyOptions options;
  std::vector<std::string> strategies;
  /// Where an engine writes its progress lines (nullptr: nowhere).
  std::ostream* log = nullptr;

  /// One Plan per strategy of the job, in the job's order (make_plan).
  std::vector<Plan> plans() const;
};

/// What an engine does, for the studies and verbs that choose engines by it instead of by name
/// (validation predicts with every engine that predicts; a sweep runs in this process the ones
/// that share it).
struct EngineCapabilities {
  /// Its rows come from the Plan and the platform (analytic, simgrid). Otherwise it measures
  /// real workers (exec): what a validation holds the predictions to.
  bool predicts = false;
  /// Many jobs may run one after another in this process (no process-wide simulator state, no
  /// cores held): a study may call it here instead of starting a child process per point.
  bool shares_process = false;
  /// The network models it takes (the job key `network_model`), its default first; empty when
  /// it has one model of its own.
  std::vector<std::string> network_models;
  /// A predicting engine's rows account for flows that share a link, and for a second job's
  /// traffic beside the job (the key `beside_hosts`); the closed form's leave both out.
  bool models_contention = false;
  /// The CLI has its verb (a built-in engine), so a study may run it in a child process of this
  /// executable. An engine registered at run time has none: it runs in the process that added
  /// it, and a study that needs a child per run leaves it out.
  bool runs_as_verb = false;
  /// Injects the job's failures (fail_at, mtbf) as events. Without it a study adds the
  /// failures' expected cost in closed form (study/common/revocation.hpp).
  bool injects_failures = false;
  /// Runs its work in SimGrid (a simulation, not only a platform read through SimGrid's parser,
  /// as every verb's platform is), so its verb takes SimGrid's own --cfg and --log.
  bool runs_simgrid = false;
};

class Engine {
 public:
  virtual ~Engine() = default;
  /// "analytic", "simgrid", "exec".
  virtual const char* name() const = 0;
  /// The verb that runs this engine in a process of its own ("predict", "simulate", "measure").
  virtual const char* verb() const = 0;
  virtual const char* description() const = 0;
  virtual EngineCapabilities capabilities() const = 0;
  /// The version of the library it runs on, for a report's context ("" when none).
  virtual std::string library_version() const { return ""; }
  /// Runs every strategy of the job. `context` arrives with the job's provenance filled and
  /// gets the engine's (network model, settings). Returns the rows this process reports: all
  /// of them, or none on an MPI rank other than 0. Throws InputError for bad input.
  virtual std::vector<ResultRow> run(const JobInputs& inputs, RunContext& context) const = 0;
};

/// The analytic engine (closed forms over the Plan; model/analytic/analytic.hpp).
std::unique_ptr<Engine> make_analytic_engine();

}  // namespace tauplan::model
