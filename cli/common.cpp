// common.cpp: job flags, input loading and result printing shared by the verbs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "cli/verb.hpp"
#include "exec/job_keys.hpp"
#include "model/error.hpp"
#include "model/strategy.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sim_job.hpp"

#ifndef TAUPLAN_PLATFORM_DIR
#define TAUPLAN_PLATFORM_DIR "platforms"
#endif

namespace tauplan::cli {

std::map<std::string, std::string> JobArgs::overrides() const {
  std::map<std::string, std::string> given;
  for (const auto& [key, option] : flags)
    if (option->count() > 0) given[key] = flag_values.at(key);
  return given;
}

void add_job_options(CLI::App& verb, JobArgs& args) {
  verb.add_option("job", args.job_file, "job file (YAML); every key is also a flag")
      ->type_name("JOB.yaml");
  verb.add_flag("--json", args.json, "print JSON (context + results) instead of a table");
  for (const auto& spec : all_job_keys()) {
    std::string names = "--" + spec.name;
    std::string dashed = spec.name;
    for (char& c : dashed)
      if (c == '_') c = '-';
    if (dashed != spec.name) names += ",--" + dashed;
    std::string help = spec.help;
    if (!spec.default_value.empty()) help += " [default: " + spec.default_value + "]";
    CLI::Option* option = verb.add_option(names, args.flag_values[spec.name], help);
    option->type_name("");
    option->group("Job keys (override the job file)");
    args.flags.emplace_back(spec.name, option);
  }
}

std::string resolve_platform_path(const model::Job& job) {
  const std::string value = job.text("platform");
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  const fs::path as_given(value);
  if (as_given.is_absolute()) {
    candidates.push_back(as_given);
  } else {
    if (!job.folder.empty()) candidates.push_back(fs::path(job.folder) / as_given);
    candidates.push_back(as_given);
    const char* env = std::getenv("TAUPLAN_PLATFORM_DIR");
    const fs::path dir = env && *env ? fs::path(env) : fs::path(TAUPLAN_PLATFORM_DIR);
    candidates.push_back(dir / as_given);
    if (as_given.extension() != ".xml") candidates.push_back(dir / (value + ".xml"));
  }
  for (const auto& candidate : candidates)
    if (fs::is_regular_file(candidate)) return candidate.lexically_normal().string();
  throw InputError(
      job.file, "platform",
      "a platform XML file, or the name of one in " + std::string(TAUPLAN_PLATFORM_DIR),
      "'" + value + "' (not found)");
}

Inputs load_inputs(const JobArgs& args) {
  Inputs inputs;
  inputs.job = model::load_job(args.job_file, all_job_keys(), args.overrides());
  const model::Job& job = inputs.job;
  try {
    inputs.workload = model::load_workload(job.text("workload"));
  } catch (const InputError& e) {
    // Name the job file and key; keep the loader's detail.
    throw InputError(job.file, "workload", e.what());
  }
  inputs.platform_path = resolve_platform_path(job);
  sim::NetworkOptions network = sim::network_options(job);
  network.origin = job.file;
  inputs.platform = sim::load_platform(inputs.platform_path, network);
  inputs.convergence = model::convergence_model(job);
  inputs.options = model::strategy_options(job);
  inputs.strategies = job.list("strategies");
  if (inputs.strategies.empty()) throw InputError(job.file, "strategies", "at least one strategy");
  return inputs;
}

std::vector<model::Plan> make_plans(const Inputs& inputs) {
  std::vector<model::Plan> plans;
  for (const auto& strategy : inputs.strategies)
    plans.push_back(model::make_plan(strategy, inputs.options, inputs.workload, inputs.platform,
                                     *inputs.convergence));
  return plans;
}

model::RunContext make_context(const Inputs& inputs, const std::string& verb,
                               const std::string& engine) {
  model::RunContext context;
  context.verb = verb;
  context.engine = engine;
  context.job_file = inputs.job.file;
  context.platform_file = inputs.platform_path;
  context.platform_hash = inputs.platform.source_hash;
  context.workload = inputs.workload.name + " (" + inputs.workload.source + ")";
  context.convergence = inputs.convergence->describe();
  context.seed = static_cast<unsigned long long>(inputs.job.integer("seed"));
  context.extra["simgrid_version"] = sim::simgrid_version();
  return context;
}

void print_results(const model::RunContext& context, std::vector<model::ResultRow>& rows,
                   bool json) {
  model::fill_speedups(rows);
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

std::vector<model::KeySpec> all_job_keys() {
  std::vector<model::KeySpec> keys = model::model_job_keys();
  for (auto&& more : {sim::sim_job_keys(), exec::exec_job_keys()})
    keys.insert(keys.end(), more.begin(), more.end());
  return keys;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_text(const std::string& path, const std::string& text, const std::string& key) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw InputError(path, key, "a writable folder");
}

void make_folder(const std::string& path, const std::string& key) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) throw InputError(path, key, "a folder that can be created", error.message());
}

void make_folder_for(const std::string& path, const std::string& key) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) make_folder(parent.string(), key);
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

Axis parse_set(const std::string& text, const std::vector<model::KeySpec>& specs) {
  const std::string origin = "command line --set";
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(origin, "'" + text + "'", "KEY=V1,V2,... (a job key and its values)");
  Axis axis;
  axis.key = trim(text.substr(0, eq));
  std::replace(axis.key.begin(), axis.key.end(), '-', '_');
  const bool known = std::any_of(specs.begin(), specs.end(),
                                 [&](const model::KeySpec& s) { return s.name == axis.key; });
  if (!known)
    throw InputError(origin, axis.key, "a job key (tauplan help-keys lists them)",
                     "an unknown key");
  const std::string list = text.substr(eq + 1);
  // Values are separated by ';' when there is one (so that a value can be a list "a,b").
  const char separator = list.find(';') != std::string::npos ? ';' : ',';
  size_t start = 0;
  for (;;) {
    const size_t end = list.find(separator, start);
    const std::string value =
        trim(list.substr(start, end == std::string::npos ? end : end - start));
    if (value.empty())
      throw InputError(origin, axis.key, "a list of values without empty items", "'" + list + "'");
    axis.values.push_back(value);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return axis;
}

}  // namespace tauplan::cli
