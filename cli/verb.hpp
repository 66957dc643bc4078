// verb.hpp: what every verb of the tauplan executable shares.
//
// A verb is one file (verb_predict.cpp, verb_sweep.cpp, ...) that registers itself, parses its
// flags, calls one study (study/) or one engine (study/common/engines.hpp) and prints. Shared here:
// the job file argument and one flag per job key (`workers` <-> `--workers`, flag over file), and
// printing results (table or JSON) with their provenance. Errors: verbs throw
// tauplan::InputError for bad input; main() prints it on one line and exits with code 2.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/ir/result.hpp"

namespace tauplan::cli {

/// Arguments common to verbs that read a job: the job file, `--json`, and one flag per key.
struct JobArgs {
  std::string job_file;
  bool json = false;
  std::map<std::string, std::string> flag_values;  // key -> value typed after --key
  std::vector<std::pair<std::string, CLI::Option*>> flags;
  /// SimGrid's own arguments (--cfg=NAME:VALUE, --log=SPEC), for verbs that add them.
  std::vector<std::string> simgrid_cfg;
  std::vector<std::string> simgrid_log;
  /// Flags given on the command line (key -> value), to override the job file.
  std::map<std::string, std::string> overrides() const;
};

/// Adds `[JOB]`, `--json` and one `--<key>` flag per job key to a verb.
void add_job_options(CLI::App& verb, JobArgs& args);
/// Adds SimGrid's `--cfg=NAME:VALUE` and `--log=SPEC` (repeatable) to a verb whose SimGrid runs
/// in this process; load_inputs checks them and hands them to SimGrid.
void add_simgrid_options(CLI::App& verb, JobArgs& args);

/// A check of a number flag that fails with "expected WHAT, got 'TEXT'" (CLI11's own range
/// checks print their bounds as 1.797e308 written out).
CLI::Validator number_between(double minimum, double maximum, const std::string& what);

/// Refuses (InputError naming the flag, exit 2) any option of `verb` given on the command line
/// other than `mode` and `allowed`, for a verb whose modes read different flags (calibrate
/// --check FILE reads no --workers). `mode`: the flag that chose the mode (itself allowed) or
/// words saying what did ("a transformer job"), "" for the default.
/// The job file and the job keys' flags are left to the keys' readers (study/common/engines.hpp).
void refuse_flags_outside(const CLI::App& verb, const std::string& mode,
                          const std::set<std::string>& allowed);

/// "# VERB engine=... network_model=... platform_file=FILE (HASH) inventory=... runs_file=...
/// workload=... seed=... commit=...": where a study's result came from, from its JSON context
/// (the fields it has), for its text output.
std::string provenance_line(const nlohmann::json& context);

/// Prints rows: a table (plus a provenance line on stderr), or JSON with the context.
void print_results(const model::RunContext& context, const std::vector<model::ResultRow>& rows,
                   bool json);

/// Adds the verb that runs one engine on a job (predict, simulate, measure): loads the job,
/// runs the engine registered under `engine_name` and prints its rows.
void add_engine_verb(CLI::App& app, const std::string& engine_name);

/// Verbs register themselves: a verb file defines `static const VerbRegistration
/// kRegistration{ORDER, register_<verb>};` and main() adds every registered verb, in ORDER
/// (the order of `tauplan --help`). Adding a verb is one new file in cli/.
using VerbRegistrar = void (*)(CLI::App&);
struct VerbRegistration {
  VerbRegistration(int order, VerbRegistrar registrar);
};
/// Registered verbs, sorted by order.
std::vector<std::pair<int, VerbRegistrar>> registered_verbs();

}  // namespace tauplan::cli
