// engines.cpp: see engines.hpp. Adding an engine: its factory, one line in registry().
#include "study/common/engines.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "exec/exec_engine.hpp"
#include "model/base/error.hpp"
#include "model/base/notice.hpp"
#include "model/base/registry.hpp"
#include "model/ir/strategy.hpp"
#include "model/ir/token_target.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simgrid_engine.hpp"
#include "study/common/inputs.hpp"

namespace tauplan::study {
namespace {

model::Registry<model::Engine>& registry() {
  static model::Registry<model::Engine> engines("engine", {
                                                              model::make_analytic_engine,
                                                              sim::make_simgrid_engine,
                                                              exec::make_exec_engine,
                                                          });
  return engines;
}

}  // namespace

const model::Engine& engine(const std::string& name, const std::string& origin,
                            const std::string& key) {
  return registry().get(name, origin, key);
}

void register_engine(std::unique_ptr<model::Engine> extension) {
  registry().add(std::move(extension));
}

std::vector<std::string> engine_names() {
  return registry().names();
}

std::vector<Predictor> predictors(NetworkModels which, RunsIn where) {
  std::vector<Predictor> out;
  for (const std::string& name : engine_names()) {
    const model::Engine& e = engine(name);
    const model::EngineCapabilities can = e.capabilities();
    if (!can.predicts || (where == RunsIn::ChildProcess && !can.runs_as_verb)) continue;
    if (which == NetworkModels::Default || can.network_models.size() < 2) {
      out.push_back({name, &e, "", true});
      continue;
    }
    for (const std::string& model : can.network_models) {
      std::string label = name + "_" + model;
      std::transform(label.begin(), label.end(), label.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out.push_back({label, &e, model, model == can.network_models.front()});
    }
  }
  return out;
}

std::size_t first_predictor(const std::vector<Predictor>& engines,
                            bool (*wanted)(const model::EngineCapabilities&),
                            const std::string& who) {
  for (std::size_t e = 0; e < engines.size(); ++e)
    if (wanted(engines[e].engine->capabilities())) return e;
  throw std::logic_error(who + ": no registered engine has the capability it needs");
}

std::size_t closed_form_predictor(const std::vector<Predictor>& engines, const std::string& who) {
  return first_predictor(
      engines, [](const model::EngineCapabilities& can) { return can.shares_process; }, who);
}

std::string predicting_engines_text() {
  std::string text;
  for (const std::string& name : predicting_engine_names())
    text += (text.empty() ? "" : " or ") + name;
  return text;
}

std::vector<std::string> predicting_engine_names() {
  std::vector<std::string> names;
  for (const Predictor& p : predictors(NetworkModels::Default))
    names.push_back(p.label);
  return names;
}

std::string verbs_of(const std::vector<std::string>& names, const std::string& separator) {
  std::string verbs;
  for (const std::string& name : engine_names())
    if (std::find(names.begin(), names.end(), name) != names.end())
      verbs += (verbs.empty() ? "" : separator) + std::string(engine(name).verb());
  return verbs;
}

namespace {

const model::KeySpec* find_key(const std::string& key) {
  static const std::vector<model::KeySpec> keys = all_job_keys();
  for (const model::KeySpec& spec : keys)
    if (spec.name == key) return &spec;
  return nullptr;
}

}  // namespace

bool engine_reads_key(const model::Engine& engine, const std::string& key) {
  const model::KeySpec* spec = find_key(key);
  return !spec || spec->read_by.empty() ||
         std::find(spec->read_by.begin(), spec->read_by.end(), engine.name()) !=
             spec->read_by.end();
}

void refuse_keys_not_read(const model::Engine& engine,
                          const std::map<std::string, std::string>& given,
                          const std::string& origin, const std::string& key_prefix,
                          const std::string& who) {
  for (const auto& [key, value] : given) {
    if (engine_reads_key(engine, key)) continue;
    const std::string readers = verbs_of(find_key(key)->read_by);
    throw InputError(origin, key_prefix + key,
                     "no " + key_prefix + key + " for " + (who.empty() ? engine.verb() : who) +
                         " (the " + engine.name() + " engine does not read it" +
                         (readers.empty() ? "" : "; " + readers + " does") + ")",
                     "'" + value + "'");
  }
}

std::map<std::string, std::string> keys_read_by(const model::Engine& engine,
                                                const std::map<std::string, std::string>& keys) {
  std::map<std::string, std::string> read;
  for (const auto& [key, value] : keys)
    if (engine_reads_key(engine, key)) read.emplace(key, value);
  return read;
}

void set_simulator_arguments(const std::vector<std::string>& cfg,
                             const std::vector<std::string>& log) {
  sim::set_simgrid_arguments({cfg, log});
}

namespace {

/// A flag of a strategy's key (tau, servers, staleness_bound) that none of the job's strategies
/// reads is said once on stderr: the rows do not depend on it. (A note, not a refusal: studies
/// hand every configuration the same keys, whatever its strategy.)
void note_flags_no_strategy_reads(const model::Job& job,
                                  const std::map<std::string, std::string>& overrides) {
  const std::vector<std::string> chosen = job.list("strategies");
  for (const auto& [key, value] : overrides) {
    std::vector<std::string> readers;
    for (const std::string& name : model::strategy_names())
      if (model::strategy(name).uses(key)) readers.push_back(name);
    if (readers.empty()) continue;  // not a strategy's own key
    const bool read = std::any_of(chosen.begin(), chosen.end(), [&readers](const std::string& s) {
      return std::find(readers.begin(), readers.end(), s) != readers.end();
    });
    if (!read)
      model::notice_once(fmt::format("--{} {}: not read by the strategies run ({}), only by {}",
                                     key, value, fmt::join(chosen, ", "), fmt::join(readers, ", ")),
                         "strategy key " + key);
  }
}

}  // namespace

EngineOutput run_engine(const std::string& engine_name, const std::string& job_file,
                        const std::map<std::string, std::string>& overrides) {
  const model::Engine& chosen = engine(engine_name);
  const model::JobInputs inputs = load_inputs(job_file, overrides);
  note_flags_no_strategy_reads(inputs.job, overrides);
  EngineOutput out;
  out.context = make_context(inputs, chosen.verb(), chosen.name());
  out.rows = chosen.run(inputs, out.context);
  model::fill_speedups(out.rows);
  // A target in tokens: each predicted row says what it comes to (steps, tokens per second,
  // days, GPU-hours), in the table after the row and in JSON as "tokens". A measured row
  // (exec) ran its own steps, not the target's: it is left as it is.
  const auto* tokens = dynamic_cast<const model::TokenConvergence*>(inputs.convergence.get());
  if (tokens && chosen.capabilities().predicts)
    for (model::ResultRow& row : out.rows) {
      // Local SGD counts rounds of tau local steps; the others count steps.
      const model::Strategy* strategy = model::find_strategy(row.strategy);
      const long long steps =
          strategy && strategy->counts_rounds() ? row.rounds * row.tau : row.rounds;
      const model::TokenSummary summary =
          model::summarise_tokens(tokens->tokens(), steps, row.total_s, row.workers);
      row.extra["tokens"] = model::to_json(summary);
      row.note += (row.note.empty() ? "" : "; ") + model::to_text(summary);
    }
  return out;
}

child::Task engine_task(const model::Engine& engine, const std::string& job_file,
                        const std::map<std::string, std::string>& keys, const std::string& out_path,
                        const std::string& err_path) {
  child::Task task;
  task.args.push_back(engine.verb());
  if (!job_file.empty()) task.args.push_back(job_file);
  for (const auto& [key, value] : keys_read_by(engine, keys))
    task.args.push_back("--" + key + "=" + value);
  task.args.push_back("--json");
  task.out_path = out_path;
  task.err_path = err_path;
  return task;
}

model::ResultRow row_from_json(const nlohmann::json& j) {
  auto text = [&j](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto number = [&j](const char* key, double otherwise) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : otherwise;
  };
  model::ResultRow row;
  row.strategy = text("strategy");
  row.workers = static_cast<int>(number("workers", 1));
  row.tau = static_cast<int>(number("tau", 1));
  row.batch = number("batch", 0);
  row.collective = text("collective");
  row.split = text("split");
  row.round_s = number("round_s", 0);
  row.compute_s = number("compute_s", 0);
  row.comm_s = number("comm_s", 0);
  row.rounds = static_cast<long long>(number("rounds", 0));
  row.total_s = number("total_s", 0);
  row.speedup = number("speedup", 0);
  row.engine = text("engine");
  row.timing = text("timing");
  static const std::set<std::string> schema = {
      "strategy",  "workers", "tau",    "batch",   "collective", "split",  "round_s",
      "compute_s", "comm_s",  "rounds", "total_s", "speedup",    "engine", "timing"};
  for (const auto& [key, value] : j.items())
    if (!schema.count(key)) row.extra[key] = value;
  return row;
}

}  // namespace tauplan::study
