// common.cpp: job flags, the engine verbs and result printing shared by the verbs.
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/inputs.hpp"

namespace tauplan::cli {
namespace {
const char* const kJobKeysGroup = "Job keys (override the job file)";
}  // namespace

std::map<std::string, std::string> JobArgs::overrides() const {
  std::map<std::string, std::string> given;
  for (const auto& [key, option] : flags)
    if (option->count() > 0) given[key] = study::command_line_input(key, flag_values.at(key));
  return given;
}

void add_job_options(CLI::App& verb, JobArgs& args) {
  verb.add_option(
          "job", args.job_file,
          "job file (YAML); every key is also a flag (refused where the engine does not read it)")
      ->type_name("JOB.yaml");
  verb.add_flag("--json", args.json, "print JSON (context + results) instead of a table");
  for (const auto& spec : study::all_job_keys()) {
    std::string names = "--" + spec.name;
    std::string dashed = spec.name;
    for (char& c : dashed)
      if (c == '_') c = '-';
    if (dashed != spec.name) names += ",--" + dashed;
    std::string help = spec.help;
    if (!spec.default_value.empty()) help += " [default: " + spec.default_value + "]";
    CLI::Option* option = verb.add_option(names, args.flag_values[spec.name], help);
    option->type_name("");
    option->group(kJobKeysGroup);
    args.flags.emplace_back(spec.name, option);
  }
}

void add_simgrid_options(CLI::App& verb, JobArgs& args) {
  const char* group = "SimGrid's own arguments";
  verb.add_option("--cfg", args.simgrid_cfg,
                  "a SimGrid configuration item, as SimGrid programs take it (repeatable; network/ "
                  "model, crosstraffic and TCP-gamma are job keys)")
      ->type_name("NAME:VALUE")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(group);
  verb.add_option("--log", args.simgrid_log,
                  "a SimGrid log setting, e.g. root.thres:info (repeatable; SimGrid is silent "
                  "otherwise)")
      ->type_name("SPEC")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(group);
}

CLI::Validator number_between(double minimum, double maximum, const std::string& what) {
  return CLI::Validator(
      [minimum, maximum, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !(value >= minimum && value <= maximum))
          return "expected " + what + ", got '" + text + "'";
        return "";
      },
      what);
}

void refuse_flags_outside(const CLI::App& verb, const std::string& mode,
                          const std::set<std::string>& allowed) {
  for (const CLI::Option* option : verb.get_options()) {
    const std::string name = option->get_name();
    // The job file and its keys' flags are checked against the keys' readers instead.
    if (!option->nonpositional() || option->get_group() == kJobKeysGroup) continue;
    if (option->count() == 0 || name == mode || allowed.count(name) > 0) continue;
    // "--check" is the flag that chose the mode; "a transformer job" says what did.
    throw InputError("command line", name,
                     mode.empty() ? "no " + name + " without the mode it belongs to"
                                  : "no " + name + " with " + mode + " (which reads " +
                                        fmt::format("{}", fmt::join(allowed, ", ")) + ")",
                     "'" + fmt::format("{}", fmt::join(option->results(), ",")) + "'");
  }
}

std::string provenance_line(const nlohmann::json& context) {
  std::string line = "# " + context.value("verb", std::string("tauplan"));
  for (const char* field : {"engine", "network_model", "platform_file", "inventory", "runs_file",
                            "workload", "seed", "commit"}) {
    const auto it = context.find(field);
    if (it == context.end()) continue;
    line +=
        std::string(" ") + field + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
    if (std::string(field) == "platform_file" && context.contains("platform_hash"))
      line += " (" + context["platform_hash"].get<std::string>() + ")";
  }
  return line + "\n";
}

void print_results(const model::RunContext& context, const std::vector<model::ResultRow>& rows,
                   bool json) {
  if (json) {
    std::cout << model::to_json(context, rows).dump(2) << "\n";
    return;
  }
  std::cout << model::to_table(rows);
  std::cerr << fmt::format(
      "# {} engine={} network={} platform={} ({}) workload={} convergence: {} seed={} "
      "commit={}\n",
      context.verb, context.engine, context.network_model, context.platform_file,
      context.platform_hash, context.workload, context.convergence, context.seed,
      model::tauplan_git_commit());
}

void add_engine_verb(CLI::App& app, const std::string& engine_name) {
  const model::Engine& engine = study::engine(engine_name);
  auto args = std::make_shared<JobArgs>();
  CLI::App* verb = app.add_subcommand(engine.verb(), engine.description());
  add_job_options(*verb, *args);
  if (engine.capabilities().runs_simgrid) add_simgrid_options(*verb, *args);
  verb->callback([args, engine_name] {
    // A flag the engine does not read (predict --stragglers, measure --compute_s) is refused,
    // never ignored. A job file's keys are for every engine: each reads its own.
    study::refuse_keys_not_read(study::engine(engine_name), args->overrides(), "command line",
                                "--");
    if (!args->simgrid_cfg.empty() || !args->simgrid_log.empty())
      study::set_simulator_arguments(args->simgrid_cfg, args->simgrid_log);
    const study::EngineOutput out =
        study::run_engine(engine_name, args->job_file, args->overrides());
    // Under MPI only rank 0 reports: the other ranks return no rows and print nothing.
    if (out.rows.empty()) return;
    print_results(out.context, out.rows, args->json);
    // A row that stopped before its target (a measurement at max_steps) is an incomplete
    // answer: every row is printed first, then the exit code says so.
    for (const model::ResultRow& row : out.rows) {
      const auto reached = row.extra.find("reached_target");
      const auto target = row.extra.find("target_accuracy");
      if (reached != row.extra.end() && reached->is_boolean() && !reached->get<bool>() &&
          target != row.extra.end() && target->is_number() && target->get<double>() > 0) {
        std::cout.flush();
        std::exit(kExitIncompleteAnswer);
      }
    }
  });
}

namespace {
std::vector<std::pair<int, VerbRegistrar>>& verb_registry() {
  static std::vector<std::pair<int, VerbRegistrar>> registry;
  return registry;
}
}  // namespace

VerbRegistration::VerbRegistration(int order, VerbRegistrar registrar) {
  verb_registry().emplace_back(order, registrar);
}

std::vector<std::pair<int, VerbRegistrar>> registered_verbs() {
  auto verbs = verb_registry();
  std::stable_sort(verbs.begin(), verbs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return verbs;
}

}  // namespace tauplan::cli
