// verb.hpp: what every verb of the tauplan executable shares.
//
// A verb is one file (verb_predict.cpp, verb_simulate.cpp, verb_measure.cpp, ...) defining a
// register_<verb>(CLI::App&) function that adds its subcommand. Shared here: the job file
// argument and one flag per job key (`workers` <-> `--workers`, flag over file), loading the
// inputs every engine needs, and printing results (table or JSON) with their provenance.
// Errors: verbs throw tauplan::InputError for bad input; main() prints it on one line and
// exits with code 2.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/convergence.hpp"
#include "model/job.hpp"
#include "model/plan.hpp"
#include "model/platform.hpp"
#include "model/result.hpp"
#include "model/workload.hpp"

namespace tauplan::cli {

/// Arguments common to verbs that read a job: the job file, `--json`, and one flag per key.
struct JobArgs {
  std::string job_file;
  bool json = false;
  std::map<std::string, std::string> flag_values;  // key -> value typed after --key
  std::vector<std::pair<std::string, CLI::Option*>> flags;
  /// Flags given on the command line (key -> value), to override the job file.
  std::map<std::string, std::string> overrides() const;
};

/// Every job key the executable knows: model's, sim's and exec's tables together.
std::vector<model::KeySpec> all_job_keys();

/// Adds `[JOB]`, `--json` and one `--<key>` flag per job key to a verb.
void add_job_options(CLI::App& verb, JobArgs& args);

/// The inputs every engine needs, loaded and checked.
struct Inputs {
  model::Job job;
  model::Workload workload;
  std::string platform_path;
  model::Platform platform;
  std::unique_ptr<model::ConvergenceModel> convergence;
  model::StrategyOptions options;
  std::vector<std::string> strategies;
};

/// Loads the job (file + flags), the workload, the platform (through sim/'s loader, with the
/// job's network model when it names one) and the convergence model.
Inputs load_inputs(const JobArgs& args);
/// A platform name ("sparknet-ec2") or path, resolved against the job's folder, then the
/// platforms/ folder (TAUPLAN_PLATFORM_DIR, or the source tree's platforms/).
std::string resolve_platform_path(const model::Job& job);
/// One Plan per strategy of the job, in the job's order, rounds set by the convergence model.
std::vector<model::Plan> make_plans(const Inputs& inputs);
/// Provenance shared by all verbs (job, platform and hash, workload, convergence, seed).
model::RunContext make_context(const Inputs& inputs, const std::string& verb,
                               const std::string& engine);
/// Fills speedups and prints rows: a table (plus a provenance line on stderr), or JSON.
void print_results(const model::RunContext& context, std::vector<model::ResultRow>& rows,
                   bool json);

/// The whole of a file (empty when it cannot be read).
std::string read_text(const std::string& path);
/// Writes a result file; InputError(path, `key`, "a writable folder") when it cannot.
void write_text(const std::string& path, const std::string& text, const std::string& key = "--out");

/// Creates the folder that will hold `path` (a file); InputError(path, `key`, ...) when it
/// cannot (a file in the way, no permission).
void make_folder_for(const std::string& path, const std::string& key);
/// Creates the folder `path`; InputError(path, `key`, ...) when it cannot.
void make_folder(const std::string& path, const std::string& key);

/// `s` without leading and trailing blanks and tabs.
std::string trim(const std::string& s);

/// One axis of a grid: `--set KEY=V1,V2,...` (values separated by ';' when any is a list).
struct Axis {
  std::string key;
  std::vector<std::string> values;
};
/// Parses one --set; the key must be one of `specs` ('-' read as '_'). InputError otherwise.
Axis parse_set(const std::string& text, const std::vector<model::KeySpec>& specs);

void register_predict(CLI::App& app);
void register_simulate(CLI::App& app);
void register_measure(CLI::App& app);
void register_help_keys(CLI::App& app);

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
