// sim_job.cpp: the simulator's job keys and their conversion to options (see sim_job.hpp).
#include "sim/sim_job.hpp"

#include <cmath>
#include <cstdlib>
#include <utility>

#include "model/base/error.hpp"

namespace tauplan::sim {
namespace {

model::KeySpec key(const char* name, model::KeyType type, const std::string& default_value,
                   std::string help) {
  model::KeySpec spec;
  spec.name = name;
  spec.type = type;
  spec.default_value = default_value;
  spec.help = std::move(help);
  return spec;
}

/// A plain decimal number filling the whole text, or NaN.
double parse_plain_number(const std::string& text) {
  if (text.empty()) return std::nan("");
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value)) return std::nan("");
  return value;
}

}  // namespace

std::vector<model::KeySpec> sim_job_keys() {
  using model::KeyType;
  std::vector<model::KeySpec> keys;
  auto& network = keys.emplace_back(
      key("network_model", KeyType::Text, "CM02",
          "simulate: SimGrid network model; CM02 is pure alpha-beta (closed forms hold), LV08 is "
          "SimGrid's TCP-calibrated default"));
  network.choices = network_model_choices();
  auto& cross = keys.emplace_back(
      key("crosstraffic", KeyType::Text, "auto",
          "simulate: flows also load the reverse path with 5% of their size (auto: off for "
          "CM02, on for LV08)"));
  cross.choices = {"auto", "on", "off"};
  auto& gamma = keys.emplace_back(
      key("tcp_gamma", KeyType::Bytes, "1000000000000",
          "simulate: SimGrid's TCP window (network/TCP-gamma); large so that fast links are "
          "not capped at gamma / (2 latency)"));
  gamma.min_value = 0;
  gamma.min_exclusive = true;
  auto& mode = keys.emplace_back(
      key("sim_mode", KeyType::Text, "step",
          "simulate: step runs every step of a collective as its own flows; coarse merges the "
          "steps of a phase into one flow per pair (for large sweeps)"));
  mode.choices = {"step", "coarse"};
  auto& rounds = keys.emplace_back(
      key("sim_rounds", KeyType::Integer, "0",
          "simulate: rounds to simulate (0: all); the rest are extrapolated from the mean "
          "simulated round (failures need 0)"));
  rounds.min_value = 0;
  auto& jitter = keys.emplace_back(
      key("latency_jitter", KeyType::Real, "0",
          "simulate: each simulated round, every link's latency x (1 + J u), u seeded uniform in "
          "[-1, 1): the mean round over schedules that turn on near-ties of latency (0: off; "
          "synchronous strategies alone, sim_mode step, no latency_file; use with tens to "
          "hundreds of sim_rounds)"));
  jitter.min_value = 0;
  jitter.max_value = 0.5;
  keys.push_back(key("sim_reuse_steps", KeyType::Boolean, "true",
                     "simulate: run the first of a collective's identical steps as flows and "
                     "reuse its time for the rest when no other traffic can interfere (same "
                     "result, much faster); false runs every step"));
  keys.push_back(key("stragglers", KeyType::TextList, "",
                     "simulate: slowed hosts, HOST:FACTOR:FRACTION (step time x FACTOR on a "
                     "seeded random FRACTION of its steps), e.g. gpu-3:2:0.1; HOST:FACTOR slows "
                     "every step"));
  keys.push_back(key("failures", KeyType::TextList, "",
                     "simulate: failing hosts, HOST@TIME (once, e.g. gpu-3@30s) or HOST~MTBF "
                     "(seeded exponential gaps, e.g. *~2h for every worker)"));
  auto& restart = keys.emplace_back(
      key("failure_restart_s", KeyType::Seconds, "60",
          "simulate: stall after a failure before the round restarts from the last averaged "
          "parameters"));
  restart.min_value = 0;
  keys.push_back(key("beside_hosts", KeyType::TextList, "",
                     "simulate: worker hosts of a copy of this job running at the same time "
                     "(flows share links); the analytic engine predicts the job alone"));
  auto& phases = keys.emplace_back(
      key("beside_phases", KeyType::Integer, "8",
          "simulate: offsets (evenly spaced over one round) at which the copy starts; the row "
          "is the mean over them"));
  phases.min_value = 1;
  keys.push_back(
      key("trace", KeyType::Path, "",
          "simulate, measure: write a Chrome trace here (relative to the current folder; one "
          "track per worker; open in Perfetto)"));
  // Who reads them: the simulator; the trace also exec, which writes one too; beside_hosts also
  // the analytic engine, which says in its context that it leaves the other job out.
  for (model::KeySpec& spec : keys) {
    spec.read_by = {"simgrid"};
    if (spec.name == "trace") spec.read_by.push_back("exec");
    if (spec.name == "beside_hosts") spec.read_by.push_back("analytic");
  }
  return keys;
}

NetworkOptions network_options(const model::Job& job) {
  NetworkOptions network;
  network.origin = job.file;
  if (job.has("network_model")) network.model = job.text("network_model");
  if (job.has("crosstraffic")) network.crosstraffic = job.text("crosstraffic");
  if (job.has("tcp_gamma")) network.tcp_gamma_bytes = job.real("tcp_gamma");
  return network;
}

SimOptions sim_options(const model::Job& job) {
  SimOptions options;
  options.origin = job.file;
  for (const char* key :
       {"sim_rounds", "latency_jitter", "stragglers", "failures", "beside_hosts", "beside_phases"})
    if (job.from_flag(key)) options.keys_from_command_line.insert(key);
  if (job.has("sim_mode"))
    options.granularity =
        job.text("sim_mode") == "coarse" ? Granularity::Coarse : Granularity::Step;
  if (job.has("sim_rounds")) options.sim_rounds = job.integer("sim_rounds");
  if (job.has("latency_jitter")) options.latency_jitter = job.real("latency_jitter");
  if (job.has("sim_reuse_steps")) options.reuse_steps = job.boolean("sim_reuse_steps");
  if (job.has("stragglers"))
    for (const std::string& entry : job.list("stragglers"))
      options.stragglers.push_back(parse_straggler(entry, options.origin_of("stragglers")));
  if (job.has("failures"))
    for (const std::string& entry : job.list("failures"))
      options.failures.push_back(parse_failure(entry, options.origin_of("failures")));
  if (job.has("failure_restart_s")) options.restart_s = job.real("failure_restart_s");
  if (job.has("beside_hosts")) options.beside_hosts = job.list("beside_hosts");
  if (job.has("beside_phases"))
    options.beside_phases = static_cast<int>(job.integer("beside_phases"));
  if (job.has("seed")) options.seed = static_cast<unsigned long long>(job.integer("seed"));
  return options;
}

Straggler parse_straggler(const std::string& text,
                          const std::pair<std::string, std::string>& where) {
  const auto& [file, key] = where;
  const std::string expected =
      "HOST:FACTOR:FRACTION with FACTOR from 1e-4 to 1e4 and FRACTION in [0, 1] (e.g. "
      "gpu-3:2:0.1), or "
      "HOST:FACTOR (every step)";
  const auto first = text.find(':');
  if (first == std::string::npos || first == 0)
    throw InputError(file, key, expected, "'" + text + "'");
  const auto second = text.find(':', first + 1);
  Straggler straggler;
  straggler.host = text.substr(0, first);
  straggler.factor = parse_plain_number(
      text.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1));
  straggler.fraction =
      second == std::string::npos ? 1.0 : parse_plain_number(text.substr(second + 1));
  // A host 10^4 times slower is as good as gone; beyond, a round's time swamps its parts in
  // double precision (a factor of 1e15 printed a 500 ms exchange as 0 or 500 ms).
  constexpr double kMaxFactor = 1e4;
  if (!(straggler.factor >= 1 / kMaxFactor && straggler.factor <= kMaxFactor) ||
      !(straggler.fraction >= 0 && straggler.fraction <= 1))
    throw InputError(file, key, expected, "'" + text + "'");
  return straggler;
}

Failure parse_failure(const std::string& text, const std::pair<std::string, std::string>& where) {
  const auto& [file, key] = where;
  const std::string expected = "HOST@TIME or HOST~MTBF (e.g. gpu-3@30s, *~2h)";
  const auto at = text.find('@');
  const auto tilde = text.find('~');
  if ((at == std::string::npos) == (tilde == std::string::npos))
    throw InputError(file, key, expected, "'" + text + "'");
  const auto split = at != std::string::npos ? at : tilde;
  Failure failure;
  failure.host = text.substr(0, split);
  if (failure.host.empty()) throw InputError(file, key, expected, "'" + text + "'");
  const double seconds = model::parse_seconds(text.substr(split + 1), file, key);
  if (at != std::string::npos) {
    if (!(seconds >= 0)) throw InputError(file, key, "a failure time >= 0", text);
    failure.at_s = seconds;
  } else {
    if (!(seconds > 0)) throw InputError(file, key, "an MTBF > 0", text);
    failure.mtbf_s = seconds;
  }
  return failure;
}

}  // namespace tauplan::sim
