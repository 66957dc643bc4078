// engines.hpp: the registry of engines, and running one on a job in this process or in a child.
//
// analytic (model/), simgrid (sim/), exec (exec/), each behind model::Engine. A study runs an
// engine in this process when it can (analytic points sharing one platform), and otherwise in a
// child process of this executable running the engine's verb with `--json` (SimGrid holds one
// engine and one platform per process; a measurement wants the cores to itself); both paths
// end in Engine::run. What it leaves out: remote execution (MPI sweeps share points by rank).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/ir/engine.hpp"
#include "study/common/child_process.hpp"

namespace tauplan::study {

/// The engine registered under `name`; InputError(origin, key, ...) when there is none.
const model::Engine& engine(const std::string& name, const std::string& origin = "command line",
                            const std::string& key = "--engine");
std::vector<std::string> engine_names();

/// What one engine run gives: its context and rows (speedups filled).
struct EngineOutput {
  model::RunContext context;
  std::vector<model::ResultRow> rows;
};

/// Loads the job and runs `engine_name` on it in this process.
EngineOutput run_engine(const std::string& engine_name, const std::string& job_file,
                        const std::map<std::string, std::string>& overrides);

/// The child-process task that runs `engine` on the job with these key values (one `--key
/// value` each) and `--json`, its stdout and stderr going to out_path and err_path.
child::Task engine_task(const model::Engine& engine, const std::string& job_file,
                        const std::map<std::string, std::string>& keys, const std::string& out_path,
                        const std::string& err_path);

/// SimGrid's --cfg and --log items for the simulator this process starts (sim/platform_loader.hpp's
/// set_simgrid_arguments: checked in a child first; InputError naming the item).
void set_simulator_arguments(const std::vector<std::string>& cfg,
                             const std::vector<std::string>& log);

/// A result row back from an engine's JSON (the schema's fields; the rest goes to `extra`).
model::ResultRow row_from_json(const nlohmann::json& j);

}  // namespace tauplan::study
