// strategy.cpp: the registry of strategy generators, make_plan, and their shared building blocks.
//
// Adding a strategy: one file with its generator and factory, one line in registry() below.
#include "model/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "model/collective.hpp"
#include "model/error.hpp"

namespace tauplan::model {
namespace {

const std::vector<std::unique_ptr<StrategyGenerator>>& registry() {
  static const std::vector<std::unique_ptr<StrategyGenerator>> generators = [] {
    std::vector<std::unique_ptr<StrategyGenerator>> all;
    all.push_back(make_single_strategy());
    all.push_back(make_sync_strategy());
    all.push_back(make_local_sgd_strategy());
    return all;
  }();
  return generators;
}

std::string gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

}  // namespace

const StrategyGenerator& strategy_generator(const std::string& name, const std::string& file) {
  for (const auto& generator : registry())
    if (name == generator->name()) return *generator;
  std::string names;
  for (const auto& n : strategy_names())
    names += (names.empty() ? "" : ", ") + n;
  throw InputError(file, "strategies", "one of " + names, "'" + name + "'");
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& generator : registry())
    names.emplace_back(generator->name());
  return names;
}

Plan make_plan(const std::string& strategy, const StrategyOptions& options,
               const Workload& workload, const Platform& platform,
               const ConvergenceModel& convergence) {
  Plan plan = strategy_generator(strategy, options.file).generate(options, workload, platform);
  if (plan.strategy == "local-sgd")
    plan.convergence_steps = convergence.local_sgd_rounds(plan.batch, plan.workers, plan.tau);
  else
    plan.convergence_steps = convergence.serial_steps(plan.batch);
  if (!(plan.convergence_steps > 0) || !std::isfinite(plan.convergence_steps))
    throw InputError(options.file, "convergence",
                     "a positive, finite number of steps from the convergence model",
                     fmt::format("{}", plan.convergence_steps));
  // A step count within rounding noise of a whole number is that number (no spurious extra round).
  const double nearest = std::round(plan.convergence_steps);
  plan.rounds = static_cast<long long>(std::abs(plan.convergence_steps - nearest) < 1e-9 * nearest
                                           ? nearest
                                           : std::ceil(plan.convergence_steps));
  return plan;
}

std::vector<int> choose_worker_hosts(const StrategyOptions& options, const Platform& platform) {
  if (options.workers < 1)
    throw InputError(options.file, "workers", "a whole number >= 1",
                     std::to_string(options.workers));
  if (!options.hosts.empty()) {
    if (static_cast<int>(options.hosts.size()) != options.workers)
      throw InputError(options.file, "hosts",
                       fmt::format("exactly workers={} host names", options.workers),
                       std::to_string(options.hosts.size()));
    std::vector<int> chosen;
    for (const auto& name : options.hosts) {
      const int index = platform.find_host(name);
      if (index < 0)
        throw InputError(options.file, "hosts", "hosts of platform " + platform.source_file,
                         "'" + name + "'");
      if (std::find(chosen.begin(), chosen.end(), index) != chosen.end())
        throw InputError(options.file, "hosts", "each host once", "'" + name + "' twice");
      chosen.push_back(index);
    }
    return chosen;
  }
  const std::vector<int> workers = platform.worker_hosts();
  if (options.workers > static_cast<int>(workers.size()))
    throw InputError(
        options.file, "workers",
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
        options.file, "compute_s",
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

void check_fits_in_memory(const StrategyOptions& options, const Workload& workload,
                          const Platform& platform, int host, double samples) {
  if (!options.check_memory) return;
  const Host& h = platform.hosts[static_cast<size_t>(host)];
  if (h.gpu_memory_bytes <= 0) return;
  const double needed = workload.memory_bytes(samples);
  if (needed <= h.gpu_memory_bytes) return;
  throw InputError(options.file, "batch",
                   fmt::format("a per-worker batch that fits in the {} of host {}",
                               gib(h.gpu_memory_bytes), h.name),
                   fmt::format("{:g} samples of {} needing {} ({} over)", samples, workload.name,
                               gib(needed), gib(needed - h.gpu_memory_bytes)));
}

std::vector<int> choose_servers(const StrategyOptions& options, const Platform& platform) {
  const CollectiveAlgorithm& algorithm = collective_algorithm(options.collective, options.file);
  const int needed = algorithm.servers_needed();
  if (needed == 0) return {};
  const int wanted = needed > 0 ? needed : options.servers;
  if (wanted < 1)
    throw InputError(options.file, "servers", "at least 1 server", std::to_string(wanted));
  const std::vector<int> servers = platform.server_hosts();
  if (static_cast<int>(servers.size()) < wanted)
    throw InputError(options.file, "collective",
                     fmt::format("a platform with {} server host(s) (prop role=server) for '{}'",
                                 wanted, options.collective),
                     fmt::format("{} in {}", servers.size(), platform.source_file));
  return {servers.begin(), servers.begin() + wanted};
}

}  // namespace tauplan::model
