// engines.hpp: the registry of engines, and running one on a job in this process or in a child.
//
// analytic (model/), simgrid (sim/), exec (exec/), each behind model::Engine. A study runs an
// engine in this process when it can (analytic points sharing one platform), and otherwise in a
// child process of this executable running the engine's verb with `--json` (SimGrid holds one
// engine and one platform per process; a measurement wants the cores to itself); both paths
// end in Engine::run. What it leaves out: remote execution (MPI sweeps share points by rank).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/ir/engine.hpp"
#include "study/common/child_process.hpp"

namespace tauplan::study {

/// The engine registered under `name`; InputError(origin, key, ...) when there is none.
const model::Engine& engine(const std::string& name, const std::string& origin = "command line",
                            const std::string& key = "--engine");
std::vector<std::string> engine_names();
/// Adds an engine after the registered ones (an extension, e.g. a test's), before any study
/// that should see it; std::invalid_argument when its name is taken. A study finds it by its
/// capabilities (predictors()); it runs in this process only, having no verb of the CLI.
void register_engine(std::unique_ptr<model::Engine> extension);

/// A predicting engine at one of its network models, as a validation labels its errors.
struct Predictor {
  std::string label;  ///< "analytic"; "simgrid" or, one per network model, "simgrid_cm02"
  const model::Engine* engine = nullptr;
  std::string network_model;  ///< "" for the engine's default or its only model
  bool default_model = true;  ///< the engine's default network model (or its only one)
};
/// Which network models of an engine that takes several: its default, or each.
enum class NetworkModels { Default, Each };
/// Where the study runs them: in this process, or each run in a child process (only the
/// engines that run as a verb of the CLI).
enum class RunsIn { ThisProcess, ChildProcess };
/// Every registered engine that predicts (EngineCapabilities::predicts), in registry order, at
/// its default network model (labelled by the engine's name) or at each (labelled
/// name_model, lower case, where it takes more than one).
std::vector<Predictor> predictors(NetworkModels which, RunsIn where = RunsIn::ThisProcess);
/// The index in `engines` of the first whose capabilities pass `wanted`; std::logic_error naming
/// `who` when none does (a registry without, say, a closed form).
std::size_t first_predictor(const std::vector<Predictor>& engines,
                            bool (*wanted)(const model::EngineCapabilities&),
                            const std::string& who);
/// first_predictor of the closed form: the first engine that shares the process (analytic).
std::size_t closed_form_predictor(const std::vector<Predictor>& engines, const std::string& who);
/// The names of the registered engines that predict ("analytic", "simgrid").
std::vector<std::string> predicting_engine_names();
/// The same names as text: "analytic or simgrid".
std::string predicting_engines_text();

/// What one engine run gives: its context and rows (speedups filled).
struct EngineOutput {
  model::RunContext context;
  std::vector<model::ResultRow> rows;
};

/// Loads the job and runs `engine_name` on it in this process.
EngineOutput run_engine(const std::string& engine_name, const std::string& job_file,
                        const std::map<std::string, std::string>& overrides);

/// The child-process task that runs `engine` on the job with these key values (one `--key
/// value` each, those it reads: keys_read_by) and `--json`, its stdout and stderr going to
/// out_path and err_path.
child::Task engine_task(const model::Engine& engine, const std::string& job_file,
                        const std::map<std::string, std::string>& keys, const std::string& out_path,
                        const std::string& err_path);

/// The verbs of the registered engines named in `names` (KeySpec::read_by): "simulate or
/// measure".
std::string verbs_of(const std::vector<std::string>& names, const std::string& separator = " or ");
/// Whether `engine` reads the job key `key` (KeySpec::read_by; an undeclared key: yes).
bool engine_reads_key(const model::Engine& engine, const std::string& key);
/// Refuses the first of `given` (key -> value) that `engine` does not read: InputError(origin,
/// `key_prefix` + key, "no ... for <who> (... reads it)"), so that a verb or a study running one
/// engine never drops a key it was given. `who`: the verb or study ("" for the engine's verb).
void refuse_keys_not_read(const model::Engine& engine,
                          const std::map<std::string, std::string>& given,
                          const std::string& origin, const std::string& key_prefix,
                          const std::string& who = "");
/// `keys` less those `engine` does not read: what a study running several engines on one set of
/// keys (validate) hands each of them.
std::map<std::string, std::string> keys_read_by(const model::Engine& engine,
                                                const std::map<std::string, std::string>& keys);

/// SimGrid's --cfg and --log items for the simulator this process starts (sim/platform_loader.hpp's
/// set_simgrid_arguments: checked in a child first; InputError naming the item).
void set_simulator_arguments(const std::vector<std::string>& cfg,
                             const std::vector<std::string>& log);

/// A result row back from an engine's JSON (the schema's fields; the rest goes to `extra`).
model::ResultRow row_from_json(const nlohmann::json& j);

}  // namespace tauplan::study
