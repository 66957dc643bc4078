// strategy.cpp: the registry of strategies, make_plan, and their shared building blocks.
//
// Adding a strategy: one file with its class and factory, one line in registry() below (or,
// outside the tree, register_strategy() at run time: study/common/strategy_extension_test.cpp).
#include "model/ir/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/notice.hpp"
#include "model/base/registry.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/layout_memory.hpp"

namespace tauplan::model {

// Factories, each defined in its strategy's own file.
std::unique_ptr<Strategy> make_single_strategy();
std::unique_ptr<Strategy> make_sync_strategy();
std::unique_ptr<Strategy> make_local_sgd_strategy();
std::unique_ptr<Strategy> make_async_ps_strategy();
std::unique_ptr<Strategy> make_mesh_strategy();

namespace {

Registry<Strategy>& registry() {
  static Registry<Strategy> strategies("strategies", {
                                                         make_single_strategy,
                                                         make_sync_strategy,
                                                         make_local_sgd_strategy,
                                                         make_async_ps_strategy,
                                                         make_mesh_strategy,
                                                     });
  return strategies;
}

std::string gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

}  // namespace

bool Strategy::uses(const std::string& key) const {
  const std::vector<std::string> k = keys();
  return std::find(k.begin(), k.end(), key) != k.end();
}

double Strategy::job_batch(double per_worker_batch, int workers) const {
  return splits_batch() ? per_worker_batch * workers : per_worker_batch;
}

std::string Strategy::label(const StrategyOptions& options) const {
  std::string text = name();
  if (uses("workers")) text += fmt::format(" K={}", options.workers);
  if (uses("round_budget_s") && options.round_budget_s > 0)
    text += fmt::format(" budget={:g}s", options.round_budget_s);
  else if (uses("tau"))
    text += fmt::format(" tau={}", options.tau);
  if (uses("split") && options.split != BatchSplit::Even)
    text += std::string(" ") + to_string(options.split);
  return text;
}

double Strategy::convergence_steps(const Plan& plan, const ConvergenceModel& convergence) const {
  return counts_rounds() ? convergence.local_sgd_rounds(plan.batch, plan.workers, plan.tau)
                         : convergence.serial_steps(plan.batch);
}

void register_strategy(std::unique_ptr<Strategy> extension) {
  registry().add(std::move(extension));
}

const Strategy& strategy(const std::string& name, const std::string& file) {
  return registry().get(name, file);
}

const Strategy* find_strategy(const std::string& name) {
  return registry().find(name);
}

std::vector<std::string> strategy_names() {
  return registry().names();
}

std::vector<std::string> default_strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : registry().items())
    if (s->listed_by_default()) names.emplace_back(s->name());
  return names;
}

const Strategy& baseline_strategy() {
  for (const auto& s : registry().items())
    if (s->is_baseline()) return *s;
  throw std::logic_error("no baseline strategy registered");
}

long long rounds_from_steps(double steps, const std::string& file) {
  if (!(steps > 0) || !std::isfinite(steps))
    throw InputError(file, "convergence",
                     "a positive, finite number of steps from the convergence model",
                     fmt::format("{}", steps));
  // A step count within rounding noise of a whole number is that number (no spurious round).
  const double nearest = std::round(steps);
  return static_cast<long long>(std::abs(steps - nearest) < 1e-9 * nearest ? nearest
                                                                           : std::ceil(steps));
}

Plan make_plan(const std::string& name, const StrategyOptions& options, const Workload& workload,
               const Platform& platform, const ConvergenceModel& convergence) {
  const Strategy& chosen = strategy(name, options.file);
  StrategyOptions normalised = chosen.normalise(options);
  if (normalised.collective.empty() && chosen.uses("collective"))
    normalised.collective = default_collective();
  Plan plan = chosen.generate(normalised, workload, platform);
  plan.convergence_steps = chosen.convergence_steps(plan, convergence);
  if (plan.asynchronous) plan.staleness_cost = convergence.staleness_cost();
  plan.rounds = rounds_from_steps(plan.convergence_steps, options.file);
  return plan;
}

ResultRow result_header(const Plan& plan, const std::string& engine) {
  ResultRow row;
  row.strategy = plan.strategy;
  row.workers = plan.workers;
  row.tau = plan.tau;
  row.batch = plan.batch;
  row.collective = plan.collective;
  const Strategy* s = find_strategy(plan.strategy);
  row.split = s && s->uses("split") ? to_string(plan.split) : "";
  row.rounds = plan.rounds;
  row.engine = engine;
  return row;
}

std::vector<int> host_indices(const std::vector<std::string>& names, const Platform& platform,
                              const std::string& file, const std::string& key) {
  std::vector<int> chosen;
  for (const auto& name : names) {
    const int index = platform.find_host(name);
    if (index < 0)
      throw InputError(file, key, "hosts of platform " + platform.source_file, "'" + name + "'");
    if (std::find(chosen.begin(), chosen.end(), index) != chosen.end())
      throw InputError(file, key, "each host once", "'" + name + "' twice");
    chosen.push_back(index);
  }
  return chosen;
}

std::vector<int> choose_worker_hosts(const StrategyOptions& options, const Platform& platform) {
  if (options.workers < 1)
    throw InputError(options.origin_of("workers"), "a whole number >= 1",
                     std::to_string(options.workers));
  if (!options.hosts.empty()) {
    if (static_cast<int>(options.hosts.size()) != options.workers)
      throw InputError(options.origin_of("hosts"),
                       fmt::format("exactly workers={} host names (give --hosts with {} names of "
                                   "the platform, or --hosts '' to let tauplan pick its worker "
                                   "hosts)",
                                   options.workers, options.workers),
                       fmt::format("{} names", options.hosts.size()));
    const std::vector<int> chosen =
        host_indices(options.hosts, platform, options.origin_of("hosts").first,
                     options.origin_of("hosts").second);
    // A host the platform declares a parameter server (role=server) does not train: no engine
    // models one host doing both, and a plan with servers would take it as one.
    for (int host : chosen)
      if (platform.hosts[static_cast<size_t>(host)].role == HostRole::Server)
        throw InputError(options.origin_of("hosts"),
                         "worker hosts (not the platform's role=server hosts, which serve "
                         "parameters)",
                         "'" + platform.hosts[static_cast<size_t>(host)].name + "'");
    return chosen;
  }
  const std::vector<int> workers = platform.worker_hosts();
  if (options.workers > static_cast<int>(workers.size()))
    throw InputError(
        options.origin_of("workers"),
        fmt::format("at most {} (the worker hosts of {})", workers.size(), platform.source_file),
        std::to_string(options.workers));
  return {workers.begin(), workers.begin() + options.workers};
}

std::vector<double> split_batch(double batch, const std::vector<int>& hosts,
                                const Platform& platform, BatchSplit split) {
  const size_t k = hosts.size();
  std::vector<double> weights(k, 1.0);
  if (split == BatchSplit::Speed)
    for (size_t i = 0; i < k; ++i)
      weights[i] = platform.hosts[static_cast<size_t>(hosts[i])].speed_flops;
  const double total_weight = std::accumulate(weights.begin(), weights.end(), 0.0);
  // Largest-remainder rounding: whole samples, summing to the batch, each within one sample of
  // its exact share (ties go to the earlier worker, so an even split is deterministic).
  std::vector<double> samples(k);
  std::vector<std::pair<double, size_t>> remainders;
  double assigned = 0;
  for (size_t i = 0; i < k; ++i) {
    const double exact = batch * weights[i] / total_weight;
    samples[i] = std::floor(exact + 1e-9);
    assigned += samples[i];
    remainders.emplace_back(exact - samples[i], i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t r = 0; assigned < batch - 0.5 && r < k; ++r, assigned += 1)
    samples[remainders[r].second] += 1;
  return samples;
}

double effective_flop_per_sample(const StrategyOptions& options, const Workload& workload,
                                 const Platform& platform, const std::vector<int>& hosts) {
  if (options.compute_s < 0) return workload.flop_per_sample;
  double fastest = 0;
  for (int h : hosts)
    fastest = std::max(fastest, platform.hosts[static_cast<size_t>(h)].speed_flops);
  const double per_batch = options.compute_s - options.step_overhead_s;
  if (!(per_batch > 0))
    throw InputError(
        options.origin_of("compute_s"),
        fmt::format("C(b) greater than step_overhead_s ({:g} s)", options.step_overhead_s),
        fmt::format("{:g} s", options.compute_s));
  return per_batch * fastest / options.batch;
}

double step_overhead_on(const StrategyOptions& options, const Platform& platform, int host) {
  const Host& h = platform.hosts.at(static_cast<size_t>(host));
  const auto it = h.properties.find("step_overhead_s");
  if (it == h.properties.end()) return options.step_overhead_s;
  double value = -1;
  if (!parse_prop_number(it->second, value) || value < 0)
    throw InputError(platform.source_file, h.name + ": step_overhead_s", "a number of seconds >= 0",
                     "'" + it->second + "'");
  return value;
}

double pass_overhead_on(const Platform& platform, int host) {
  const Host& h = platform.hosts.at(static_cast<size_t>(host));
  const auto it = h.properties.find("pass_overhead_s");
  if (it == h.properties.end()) return 0;
  double value = -1;
  if (!parse_prop_number(it->second, value) || value < 0)
    throw InputError(platform.source_file, h.name + ": pass_overhead_s", "a number of seconds >= 0",
                     "'" + it->second + "'");
  return value;
}

double step_fixed_cost_on(const StrategyOptions& options, const Platform& platform, int host,
                          int passes) {
  return step_overhead_on(options, platform, host) + passes * pass_overhead_on(platform, host);
}

void check_fits_in_memory(const StrategyOptions& options, const Workload& workload,
                          const Platform& platform, int host, double samples) {
  if (!options.check_memory) return;
  const Host& h = platform.hosts[static_cast<size_t>(host)];
  if (h.gpu_memory_bytes <= 0) {
    notice_once("memory check skipped for host " + h.name + " of " + platform.source_file +
                    ": it has no gpu_model or gpu_memory_bytes prop",
                "memory check skipped");
    return;
  }
  const double needed = workload.memory_bytes(samples);
  if (needed <= h.gpu_memory_bytes) return;
  std::string layouts;
  if (workload.transformer) {
    // A model too large for data parallelism alone: name the smallest layouts that fit
    // (tensor inside a node, pipeline, ZeRO, recomputation; model/ir/layout_memory.hpp).
    FitSearch search;
    search.workers = std::max(options.workers, 1);
    search.batch = options.batch;
    search.memory_bytes = h.gpu_memory_bytes;
    for (const Host& other : platform.hosts)
      search.max_tensor += other.node == h.node && other.role == HostRole::Worker ? 1 : 0;
    std::vector<std::string> labels;
    for (const FittingLayout& f : smallest_fitting_layouts(workload, search, 3))
      labels.push_back(f.layout.label());
    layouts = labels.empty()
                  ? fmt::format("; no layout of {} workers fits either", search.workers)
                  : fmt::format("; layouts of {} workers that fit: {} (tauplan layout --fit)",
                                search.workers, fmt::join(labels, ", "));
  }
  throw InputError(options.origin_of("batch"),
                   fmt::format("a per-worker batch that fits in the {} of host {}",
                               gib(h.gpu_memory_bytes), h.name),
                   fmt::format("{:g} samples of {} needing {} ({} over){}", samples, workload.name,
                               gib(needed), gib(needed - h.gpu_memory_bytes), layouts));
}

double server_apply_flop(const Workload& workload) {
  constexpr double kSgdFlopPerParameter = 2;  // one multiply-add per parameter [derived]
  return workload.parameters * std::max(workload.update_flop_per_parameter, kSgdFlopPerParameter);
}

std::vector<int> choose_servers(const StrategyOptions& options, const Platform& platform) {
  const CollectiveAlgorithm& algorithm = collective_algorithm(options.collective, options.file);
  const int needed = algorithm.servers_needed();
  if (needed == 0) return {};
  const int wanted = needed > 0 ? needed : options.servers;
  if (wanted < 1)
    throw InputError(options.origin_of("servers"), "at least 1 server", std::to_string(wanted));
  const std::vector<int> servers = platform.server_hosts();
  if (static_cast<int>(servers.size()) < wanted)
    throw InputError(options.origin_of("collective"),
                     fmt::format("a platform with {} server host(s) (prop role=server) for '{}'",
                                 wanted, options.collective),
                     fmt::format("{} in {}", servers.size(), platform.source_file));
  return {servers.begin(), servers.begin() + wanted};
}

}  // namespace tauplan::model
