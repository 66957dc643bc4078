// planner.cpp: enumeration, analytic evaluation, Pareto frontier and ranking (see planner.hpp).
#include "study/plan/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>

#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/layout.hpp"
#include "model/ir/layout_cost.hpp"
#include "model/ir/layout_memory.hpp"
#include "model/ir/strategy.hpp"
#include "study/common/revocation.hpp"

namespace tauplan::study {

const char* to_string(Bottleneck bottleneck) {
  switch (bottleneck) {
    case Bottleneck::Compute:
      return "compute";
    case Bottleneck::Communication:
      return "communication";
    case Bottleneck::Straggler:
      return "straggler";
    case Bottleneck::Memory:
      return "memory";
    case Bottleneck::Revocations:
      return "revocations";
  }
  return "?";
}

double PlanConfig::job_batch() const {
  return model::strategy(strategy).job_batch(batch_per_worker, gpus);
}

namespace {

struct SelectionCosts {
  double price_per_hour = 0;  ///< nodes only
  double rate_per_s = 0;
  double restart_s = 0;
  double min_memory_bytes = 0;
  double peak_flops = 0;  ///< the GPUs' dense peaks at their precision, summed
};

SelectionCosts selection_costs(const Inventory& inventory, const Selection& selection) {
  SelectionCosts c;
  c.min_memory_bytes = std::numeric_limits<double>::infinity();
  for (size_t t = 0; t < selection.nodes.size(); ++t) {
    if (selection.nodes[t] == 0) continue;
    const NodeType& type = inventory.node_types[t];
    c.price_per_hour += selection.nodes[t] * type.price_per_hour;
    c.min_memory_bytes = std::min(c.min_memory_bytes, type.memory_bytes);
    c.peak_flops += static_cast<double>(selection.nodes[t]) * type.gpus_per_node *
                    model::gpu_spec(type.gpu_model, inventory.file).peak_flops(type.precision);
    if (type.market == Market::Revocable && type.revocations_per_hour > 0) {
      c.rate_per_s += selection.nodes[t] * type.revocations_per_hour / 3600.0;
      c.restart_s = std::max(c.restart_s, type.restart_s);
    }
  }
  return c;
}

/// What one evaluation needs besides the configuration: the Plan's workers and the timing.
struct Outcome {
  model::RoundTiming timing;
  long long rounds = 0;
  double convergence_steps = 0;
  int steps_per_round = 1;
  const std::vector<int>* hosts = nullptr;
  const std::vector<double>* samples = nullptr;
};

/// The largest batch of the search that fits in the smallest GPU of a selection.
int largest_fitting_batch(const Inventory& inventory, const SelectionCosts& costs) {
  int best = 0;
  for (int b : inventory.search.batch_per_worker)
    if (inventory.workload.memory_bytes(b) <= costs.min_memory_bytes) best = std::max(best, b);
  return best;
}

Evaluation finish_evaluation(const Inventory& inventory, const PlanConfig& config,
                             const model::Platform& platform, const Outcome& o,
                             const SelectionCosts& costs, int largest_fitting) {
  const model::RoundTiming& timing = o.timing;
  Evaluation e;
  e.config = config;
  e.round_s = timing.round_s;
  e.compute_s = timing.compute_s;
  e.comm_s = timing.comm_s;
  e.rounds = o.rounds;
  e.convergence_steps = o.convergence_steps;
  e.failure_free_s = static_cast<double>(o.rounds) * timing.round_s;

  e.price_per_hour = costs.price_per_hour + config.servers * inventory.servers.price_per_hour;
  e.revocations_per_hour = costs.rate_per_s * 3600.0;
  e.restart_s = costs.restart_s;
  const ExpectedTime expected =
      expected_total_time(timing.round_s, o.rounds, costs.rate_per_s, costs.restart_s);
  e.time_s = expected.mean_s;
  e.time_stddev_s = expected.stddev_s;
  e.expected_revocations = expected.expected_revocations;
  e.cost = e.price_per_hour * e.time_s / 3600.0;

  // Parts of the time: the mean worker's compute, the wait for the slowest, exposed comm. The
  // wait is the share of the critical compute by which the mean worker's step (samples x flop
  // per sample / speed, the same formula for every worker) falls short of the slowest's: zero
  // on identical workers, whatever the critical compute holds besides model flop
  // (recomputation, a profile's per-op times).
  const double steps = std::max(o.steps_per_round, 1);
  const std::vector<int>& hosts = *o.hosts;
  double sum = 0, slowest_step = 0;
  for (size_t w = 0; w < hosts.size(); ++w) {
    const double speed = platform.hosts[static_cast<size_t>(hosts[w])].speed_flops;
    const double samples = o.samples->empty() ? 0 : (*o.samples)[w];
    const double step =
        inventory.search.step_overhead_s + samples * inventory.workload.flop_per_sample / speed;
    sum += step;
    slowest_step = std::max(slowest_step, step);
  }
  const double mean_step = hosts.empty() ? 0 : sum / static_cast<double>(hosts.size());
  double round_samples = 0, largest_samples = 0;
  for (size_t w = 0; w < hosts.size() && w < o.samples->size(); ++w) {
    round_samples += steps * (*o.samples)[w];
    largest_samples = std::max(largest_samples, (*o.samples)[w]);
  }
  e.model_flops =
      timing.round_s > 0 ? round_samples * inventory.workload.flop_per_sample / timing.round_s : 0;
  e.peak_flops = costs.peak_flops;
  e.memory_per_gpu_bytes = inventory.workload.memory_bytes(largest_samples);
  const double critical_compute = timing.compute_s * steps;
  // (A shortfall below 1e-9 is the rounding of the mean's sum: identical workers.)
  const double shortfall = slowest_step > 0 ? 1.0 - mean_step / slowest_step : 0.0;
  const double straggler = shortfall > 1e-9 ? critical_compute * shortfall : 0.0;
  const auto rounds = static_cast<double>(o.rounds);
  e.compute_part_s = rounds * (critical_compute - straggler);
  e.straggler_part_s = rounds * straggler;
  e.comm_part_s = rounds * timing.comm_s;
  e.revocation_part_s = e.time_s - e.failure_free_s;

  // The next batch of the search would not fit in the smallest GPU of the selection.
  const auto& batches = inventory.search.batch_per_worker;
  const bool larger_exists = std::any_of(batches.begin(), batches.end(),
                                         [&](int b) { return b > config.batch_per_worker; });
  e.memory_capped = config.batch_per_worker == largest_fitting && larger_exists;

  const std::pair<double, Bottleneck> parts[] = {{e.compute_part_s, Bottleneck::Compute},
                                                 {e.straggler_part_s, Bottleneck::Straggler},
                                                 {e.comm_part_s, Bottleneck::Communication},
                                                 {e.revocation_part_s, Bottleneck::Revocations}};
  e.bottleneck =
      std::max_element(std::begin(parts), std::end(parts), [](const auto& a, const auto& b) {
        return a.first < b.first;
      })->second;
  if (e.bottleneck == Bottleneck::Compute && e.memory_capped) e.bottleneck = Bottleneck::Memory;
  return e;
}

/// The configuration's options, normalised by its strategy (as make_plan normalises them).
model::StrategyOptions options_for(const Inventory& inventory, const PlanConfig& config) {
  model::StrategyOptions options;
  options.file = inventory.file;
  options.workers = config.gpus;
  options.batch = config.job_batch();
  options.tau = config.tau;
  options.round_budget_s = config.round_budget_s;
  options.staleness_bound = config.staleness_bound;
  options.split = config.split;
  options.collective = config.collective;
  options.servers = std::max(config.servers, 1);
  options.step_overhead_s = inventory.search.step_overhead_s;
  options.check_memory = true;
  options.layout = config.layout;
  return model::strategy(config.strategy, inventory.file).normalise(options);
}

/// A mesh configuration costed by the closed form (see planner.hpp): InputError for a layout
/// check_layout refuses (its key) or one that does not fit (key "batch").
Evaluation evaluate_mesh(const Inventory& inventory, const PlanConfig& config,
                         const model::Platform& platform,
                         const model::ConvergenceModel& convergence, const SelectionCosts& costs,
                         int largest_fitting) {
  const model::Workload& workload = inventory.workload;
  const double batch = config.job_batch();
  check_layout(config.layout, workload, batch, config.gpus, inventory.file);
  const model::LayoutMemory memory = layout_memory(workload, config.layout, batch);
  if (!memory.fits(costs.min_memory_bytes))
    throw InputError(inventory.file, "batch", "a layout that fits in the GPUs' memory",
                     config.layout.label());
  const model::MeshPlacement placement = place_mesh(config.layout, platform, {}, inventory.file);
  const model::LayoutTime time =
      layout_time(workload, config.layout, batch, platform, placement,
                  model::LayoutTimeOptions{inventory.search.step_overhead_s});
  Outcome o;
  o.timing.round_s = time.iteration_s;
  double slowest_compute = 0;
  for (const model::StageTime& stage : time.stages)
    slowest_compute = std::max(slowest_compute, stage.compute_s + stage.elementwise_s);
  const model::Layout& l = config.layout;
  o.timing.compute_s =
      (l.micro_batches + (l.pipeline - 1.0) / l.virtual_stages) * slowest_compute + time.update_s;
  o.timing.comm_s = std::max(0.0, time.iteration_s - o.timing.compute_s);
  model::Plan counts;  // what the convergence model reads: the global batch and the workers
  counts.strategy = config.strategy;
  counts.workers = config.gpus;
  counts.batch = batch;
  o.convergence_steps = model::strategy(config.strategy).convergence_steps(counts, convergence);
  o.rounds = model::rounds_from_steps(o.convergence_steps, inventory.file);
  // Each GPU's share of the step's flop, as finish_evaluation's mean worker reads it.
  const std::vector<double> shares(placement.hosts.size(), batch / config.gpus);
  o.hosts = &placement.hosts;
  o.samples = &shares;
  Evaluation e = finish_evaluation(inventory, config, platform, o, costs, largest_fitting);
  e.memory_per_gpu_bytes = memory.peak_bytes;  // with the reserve
  return e;
}

/// One Plan built and compiled per (selection, strategy, collective, servers); the batch, tau,
/// staleness bound and split of each configuration only change the compute ops' work, the rounds
/// and the plan's own fields (its staleness bound, read here from the recosted plan), so those
/// ops are re-costed in place (with the generators' own arithmetic and memory check) instead of
/// building a new Plan. planner_test.cpp checks that this equals evaluate_config exactly.
class Family {
 public:
  Family(const Inventory& inventory, const PlanConfig& base, const model::Platform& platform,
         const model::ConvergenceModel& convergence)
      : inventory_(inventory),
        platform_(platform),
        convergence_(convergence),
        strategy_(model::strategy(base.strategy, inventory.file)) {
    plan_ = make_plan(base.strategy, options_for(inventory, base), inventory.workload, platform,
                      convergence);
    try {
      compiled_ = compile(plan_, platform);
    } catch (const InputError&) {
      // The collective cannot run on these workers (hierarchical on uneven nodes): every
      // configuration that fits in memory fails the same way (key "collective").
      runnable_ = false;
      return;
    }
    scratch_ = compiled_;
    // The compute ops, by their index in compile()'s (topological) order.
    order_ = plan_.topological_order();
    for (size_t i = 0; i < order_.size(); ++i)
      if (plan_.op(order_[i]).kind == model::OpKind::Compute) compute_ops_.push_back(i);
  }

  enum class Status { Ok, Memory, Collective };

  /// Evaluates one configuration of the family: Memory when a worker's samples do not fit in
  /// its GPU (as check_fits_in_memory would throw, and before anything else, as the strategies
  /// check), Collective when the family's collective cannot run; throws InputError as make_plan
  /// would for the rest (convergence).
  Status evaluate(const PlanConfig& config, Outcome& o) {
    const model::Workload& workload = inventory_.workload;
    const model::StrategyOptions options = options_for(inventory_, config);
    strategy_.recost(plan_, options, workload, platform_);
    // check_fits_in_memory's test, without building its message for every misfit.
    for (size_t w = 0; w < plan_.worker_hosts.size(); ++w) {
      const model::Host& host = platform_.hosts[static_cast<size_t>(plan_.worker_hosts[w])];
      if (host.gpu_memory_bytes > 0 &&
          workload.memory_bytes(plan_.worker_samples[w]) > host.gpu_memory_bytes)
        return Status::Memory;
    }
    if (!runnable_) return Status::Collective;
    scratch_.duration_s = compiled_.duration_s;
    scratch_.steps_per_round = plan_.steps_per_round;
    scratch_.staleness_bound = plan_.staleness_bound;
    for (size_t i : compute_ops_) {
      const model::Op& op = plan_.op(order_[i]);
      scratch_.duration_s[i] = op_duration_s(op, plan_, platform_);
      scratch_.step_fraction[i] = op.step_fraction * op.steps;
    }
    o.timing = tauplan::model::evaluate(scratch_);
    o.steps_per_round = scratch_.steps_per_round;
    o.convergence_steps = strategy_.convergence_steps(plan_, convergence_);
    o.rounds = model::rounds_from_steps(o.convergence_steps, inventory_.file);
    o.hosts = &plan_.worker_hosts;
    o.samples = &plan_.worker_samples;
    return Status::Ok;
  }

 private:
  const Inventory& inventory_;
  const model::Platform& platform_;
  const model::ConvergenceModel& convergence_;
  const model::Strategy& strategy_;
  model::Plan plan_;
  model::CompiledPlan compiled_;
  model::CompiledPlan scratch_;
  std::vector<model::OpId> order_;   ///< compile()'s order of the plan's ops
  std::vector<size_t> compute_ops_;  ///< compiled indices of the compute ops
  bool runnable_ = true;
};

}  // namespace

Evaluation evaluate_config(const Inventory& inventory, const PlanConfig& config,
                           const model::Platform& platform,
                           const model::ConvergenceModel& convergence) {
  if (model::strategy(config.strategy, inventory.file).uses("tensor_parallel")) {
    const SelectionCosts costs = selection_costs(inventory, config.selection);
    return evaluate_mesh(inventory, config, platform, convergence, costs,
                         largest_fitting_batch(inventory, costs));
  }
  const model::StrategyOptions options = options_for(inventory, config);
  const model::Plan plan =
      make_plan(config.strategy, options, inventory.workload, platform, convergence);
  Outcome o;
  o.timing = evaluate(compile(plan, platform));
  o.rounds = plan.rounds;
  o.convergence_steps = plan.convergence_steps;
  o.steps_per_round = plan.steps_per_round;
  o.hosts = &plan.worker_hosts;
  o.samples = &plan.worker_samples;
  const SelectionCosts costs = selection_costs(inventory, config.selection);
  return finish_evaluation(inventory, config, platform, o, costs,
                           largest_fitting_batch(inventory, costs));
}

namespace {

/// All node selections: every count 0..available per type (not all zero), at most max_gpus GPUs.
std::vector<Selection> enumerate_selections(const Inventory& inventory) {
  std::vector<Selection> out;
  const size_t types = inventory.node_types.size();
  std::vector<int> counts(types, 0);
  for (;;) {
    size_t t = 0;
    while (t < types && counts[t] == inventory.node_types[t].nodes)
      counts[t++] = 0;
    if (t == types) break;
    ++counts[t];
    Selection s;
    s.nodes = counts;
    const int gpus = s.gpus(inventory);
    if (gpus <= inventory.search.max_gpus) out.push_back(std::move(s));
  }
  return out;
}

bool homogeneous(const Inventory& inventory, const Selection& selection) {
  double speed = -1;
  for (size_t t = 0; t < selection.nodes.size(); ++t) {
    if (selection.nodes[t] == 0) continue;
    const double s = inventory.node_types[t].speed_flops;
    if (speed >= 0 && s != speed) return false;
    speed = s;
  }
  return true;
}

/// Every layout of the search whose mesh has `base.gpus` workers, for each batch per worker:
/// data = K / (t p c); expert sizes only for a mixture of experts (with sequence parallelism
/// when t > 1, as check_layout requires).
std::vector<PlanConfig> mesh_configs(const SearchSpace& space, const PlanConfig& base,
                                     const model::Workload& workload) {
  const bool moe = workload.transformer && workload.transformer->is_moe();
  const std::vector<int> no_experts = {1};
  std::vector<PlanConfig> out;
  for (int b : space.batch_per_worker)
    for (int t : space.tensor_parallel)
      for (int p : space.pipeline_parallel)
        for (int c : space.context_parallel) {
          if (base.gpus % (t * p * c) != 0) continue;
          const int d = base.gpus / (t * p * c);
          const long long replica_batch = static_cast<long long>(b) * base.gpus / d;
          for (int e : moe ? space.expert_parallel : no_experts) {
            if ((static_cast<long long>(t) * c * d) % e != 0) continue;
            for (int size : space.micro_batch_size) {
              if (replica_batch % size != 0) continue;
              for (int zero : space.zero_stage) {
                if (zero > 0 && d * c == 1) continue;  // nothing to shard over: ZeRO 0's layout
                for (model::Recompute recompute : space.recompute) {
                  PlanConfig config = base;
                  config.batch_per_worker = b;
                  config.layout.data = d;
                  config.layout.tensor = t;
                  config.layout.pipeline = p;
                  config.layout.context = c;
                  config.layout.expert = e;
                  config.layout.sequence_parallel = moe && t > 1;
                  config.layout.micro_batches = static_cast<int>(replica_batch / size);
                  config.layout.zero_stage = zero;
                  config.layout.recompute = recompute;
                  out.push_back(config);
                }
              }
            }
          }
        }
  return out;
}

/// One node selection of the search: its platform (with the largest server count searched) and
/// what every configuration on it shares.
struct SelectionSearch {
  SelectionSearch(const Inventory& inv, const model::ConvergenceModel& model, const Selection& base,
                  int max_servers)
      : inventory(inv),
        convergence(model),
        platform(make_selection_platform(inv, with_servers(base, max_servers))),
        gpus(base.gpus(inv)),
        nodes(std::accumulate(base.nodes.begin(), base.nodes.end(), 0)),
        same_speed(homogeneous(inv, base)),
        costs(selection_costs(inv, base)),
        largest_fitting(largest_fitting_batch(inv, costs)) {}

  static Selection with_servers(Selection selection, int servers) {
    selection.servers = servers;
    return selection;
  }

  const Inventory& inventory;
  const model::ConvergenceModel& convergence;
  const model::Platform platform;
  const int gpus;
  const int nodes;
  const bool same_speed;  ///< every GPU of the selection as fast
  const SelectionCosts costs;
  const int largest_fitting;
};

/// Evaluates the configurations of one (strategy, collective, servers), which share a Plan (see
/// Family) with `shared_plans`, into `result`.
void run_family(const SelectionSearch& sel, const std::vector<PlanConfig>& family,
                bool shared_plans, PlanSearch& result) {
  if (family.empty()) return;
  std::unique_ptr<Family> shared;
  if (shared_plans) try {
      PlanConfig first = family.front();
      for (const PlanConfig& c : family)
        first.batch_per_worker = std::min(first.batch_per_worker, c.batch_per_worker);
      shared = std::make_unique<Family>(sel.inventory, first, sel.platform, sel.convergence);
    } catch (const InputError&) {
      // The smallest batch does not fit, or the collective cannot run: evaluate one by one.
    }
  for (const PlanConfig& c : family) {
    ++result.stats.configurations;
    try {
      Outcome o;
      if (shared) {
        const Family::Status status = shared->evaluate(c, o);
        if (status != Family::Status::Ok) {
          ++(status == Family::Status::Memory ? result.stats.infeasible_memory
                                              : result.stats.infeasible_other);
          continue;
        }
        result.evaluations.push_back(
            finish_evaluation(sel.inventory, c, sel.platform, o, sel.costs, sel.largest_fitting));
      } else
        result.evaluations.push_back(
            evaluate_config(sel.inventory, c, sel.platform, sel.convergence));
    } catch (const InputError& e) {
      if (e.key() == "batch")
        ++result.stats.infeasible_memory;
      else
        ++result.stats.infeasible_other;
    }
  }
}

/// A mesh strategy: every layout of the selection's K GPUs (see planner.hpp), into `result`.
void search_mesh(const SelectionSearch& sel, const PlanConfig& mesh, PlanSearch& result) {
  for (const PlanConfig& c : mesh_configs(sel.inventory.search, mesh, sel.inventory.workload)) {
    ++result.stats.configurations;
    try {
      result.evaluations.push_back(evaluate_mesh(sel.inventory, c, sel.platform, sel.convergence,
                                                 sel.costs, sel.largest_fitting));
    } catch (const InputError& e) {
      ++(e.key() == "batch" ? result.stats.infeasible_memory : result.stats.infeasible_other);
    }
  }
}

/// Collectives with their server counts; one worker needs no collective (the first
/// peer-to-peer one stands for all).
std::vector<std::pair<std::string, int>> collective_choices(const Inventory& inventory, int gpus) {
  const SearchSpace& space = inventory.search;
  std::vector<std::pair<std::string, int>> collectives;
  for (const auto& name : space.collectives) {
    const int needed = model::collective_algorithm(name, inventory.file).servers_needed();
    if (needed == 0) {
      collectives.emplace_back(name, 0);
      if (gpus == 1) break;
    } else if (gpus > 1) {
      for (int s : space.servers)
        if (needed < 0 || s == needed) collectives.emplace_back(name, s);
    }
  }
  return collectives;
}

/// Local steps of a strategy: each tau, then each time budget (tau ignored).
std::vector<std::pair<int, double>> local_step_choices(const model::Strategy& s,
                                                       const SearchSpace& space) {
  const std::vector<int> one_tau{1};
  std::vector<std::pair<int, double>> local_steps;
  for (int tau : s.uses("tau") ? space.tau : one_tau)
    local_steps.emplace_back(tau, 0.0);
  if (s.uses("round_budget_s"))
    for (double budget : space.round_budget_s)
      local_steps.emplace_back(1, budget);
  return local_steps;
}

/// A strategy other than a mesh on one selection: a family per (collective, servers), of every
/// batch, local steps, staleness bound and split. `config` carries the selection and is left
/// with the last configuration's values (as the next strategy finds it).
void search_strategy(const SelectionSearch& sel, const std::string& name, const model::Strategy& s,
                     const std::vector<std::pair<std::string, int>>& collectives, bool shared_plans,
                     PlanConfig& config, PlanSearch& result) {
  const SearchSpace& space = sel.inventory.search;
  const bool even_listed = std::find(space.splits.begin(), space.splits.end(),
                                     model::BatchSplit::Even) != space.splits.end();
  const std::vector<model::BatchSplit> even_only{model::BatchSplit::Even};
  const std::vector<std::pair<std::string, int>> one_worker{{"", 0}};
  // A strategy with servers of its own and no collective (async-ps): each server count.
  std::vector<std::pair<std::string, int>> own_servers;
  if (sel.gpus > 1 || !s.uses("collective"))
    for (int count : space.servers)
      own_servers.emplace_back("", count);
  const auto& server_choices = s.uses("collective") ? collectives
                               : s.uses("servers")  ? own_servers
                                                    : one_worker;
  const std::vector<std::pair<int, double>> local_steps = local_step_choices(s, space);
  const std::vector<int> unbounded{0};
  config.strategy = name;
  std::vector<PlanConfig> family;
  for (const auto& [collective, servers] : server_choices) {
    config.collective = collective;
    config.servers = servers;
    family.clear();
    for (int b : space.batch_per_worker) {
      config.batch_per_worker = b;
      for (const auto& [tau, budget] : local_steps) {
        config.tau = tau;
        config.round_budget_s = budget;
        for (int bound : s.uses("staleness_bound") ? space.staleness_bound : unbounded) {
          config.staleness_bound = bound;
          for (model::BatchSplit split : s.uses("split") ? space.splits : even_only) {
            if (split == model::BatchSplit::Speed && sel.same_speed && even_listed)
              continue;  // identical to the even split
            config.split = split;
            family.push_back(config);
          }
        }
      }
    }
    run_family(sel, family, shared_plans, result);
  }
}

/// Every configuration of one node selection, into `result`.
void search_selection(const Inventory& inventory, const model::ConvergenceModel& convergence,
                      const Selection& base, int max_servers, bool shared_plans,
                      PlanSearch& result) {
  const SelectionSearch sel(inventory, convergence, base, max_servers);
  const std::vector<std::pair<std::string, int>> collectives =
      collective_choices(inventory, sel.gpus);

  PlanConfig config;
  config.selection = base;
  config.gpus = sel.gpus;
  for (const auto& name : inventory.search.strategies) {
    const model::Strategy& s = model::strategy(name, inventory.file);
    if (s.uses("tensor_parallel")) {  // mesh: every layout of the K GPUs (see planner.hpp)
      PlanConfig mesh = config;
      mesh.strategy = name;
      search_mesh(sel, mesh, result);
      continue;
    }
    // A strategy without workers (the baseline) runs on one GPU: one-node selections only.
    if (!s.uses("workers") && sel.nodes != 1) continue;
    search_strategy(sel, name, s, collectives, shared_plans, config, result);
  }
}

/// The evaluations' indices, best first for the inventory's objective; sets objective_met (and
/// nearest when the deadline is missed).
std::vector<size_t> objective_order(const Inventory& inventory, const std::vector<double>& time,
                                    const std::vector<double>& cost, PlanSearch& result) {
  const auto& ev = result.evaluations;
  std::vector<size_t> order(ev.size());
  std::iota(order.begin(), order.end(), 0);
  auto by_time = [&](size_t a, size_t b) {
    return time[a] != time[b] ? time[a] < time[b] : cost[a] < cost[b];
  };
  auto by_cost = [&](size_t a, size_t b) {
    return cost[a] != cost[b] ? cost[a] < cost[b] : time[a] < time[b];
  };
  if (inventory.objective == Objective::MinTime) {
    std::stable_sort(order.begin(), order.end(), by_time);
    result.objective_met = !order.empty();
  } else if (inventory.objective == Objective::MinCost) {
    std::stable_sort(order.begin(), order.end(), by_cost);
    result.objective_met = !order.empty();
  } else {
    // Meets the deadline: in expectation, or with the inventory's confidence.
    const double z = inventory.deadline_confidence > 0
                         ? normal_quantile_two_sided(2 * inventory.deadline_confidence - 1)
                         : 0.0;
    const auto met_end = std::stable_partition(order.begin(), order.end(), [&](size_t i) {
      return time[i] + z * ev[i].time_stddev_s <= inventory.deadline_s;
    });
    std::stable_sort(order.begin(), met_end, by_cost);
    std::stable_sort(met_end, order.end(), by_time);
    result.objective_met = met_end != order.begin();
    if (!result.objective_met && !order.empty()) result.nearest = static_cast<long>(order.front());
  }
  return order;
}

/// The frontier, the ranking (the top `ranking_size` for the objective) and the best.
void rank_evaluations(const Inventory& inventory, std::size_t ranking_size, PlanSearch& result) {
  const auto& ev = result.evaluations;
  std::vector<double> time(ev.size()), cost(ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    time[i] = ev[i].time_s;
    cost[i] = ev[i].cost;
  }
  result.frontier = pareto_frontier(time, cost);
  const std::vector<size_t> order = objective_order(inventory, time, cost, result);
  // The ranking skips configurations equivalent to a better-ranked one (same nodes, same time
  // and cost: e.g. ring and hierarchical on single-GPU nodes), so that the re-check is not spent
  // on duplicates.
  for (size_t i : order) {
    if (result.ranking.size() >= ranking_size) break;
    const bool duplicate = std::any_of(result.ranking.begin(), result.ranking.end(), [&](size_t j) {
      return time[i] == time[j] && cost[i] == cost[j] &&
             ev[i].config.selection.nodes == ev[j].config.selection.nodes;
    });
    if (!duplicate) result.ranking.push_back(i);
  }
  if (result.objective_met) result.best = static_cast<long>(result.ranking.front());
}

}  // namespace

bool dominates(double time_a, double cost_a, double time_b, double cost_b) {
  return time_a <= time_b && cost_a <= cost_b && (time_a < time_b || cost_a < cost_b);
}

std::vector<std::size_t> pareto_frontier(const std::vector<double>& time,
                                         const std::vector<double>& cost) {
  std::vector<std::size_t> order(time.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return time[a] != time[b] ? time[a] < time[b] : cost[a] < cost[b];
  });
  std::vector<std::size_t> frontier;
  double best_cost = std::numeric_limits<double>::infinity();
  for (std::size_t i : order)
    if (cost[i] < best_cost) {
      frontier.push_back(i);
      best_cost = cost[i];
    }
  return frontier;
}

PlanSearch search_plans(const Inventory& inventory, std::size_t ranking_size, bool shared_plans) {
  const auto start = std::chrono::steady_clock::now();
  PlanSearch result;
  const std::unique_ptr<model::ConvergenceModel> convergence = target_convergence(inventory);
  const SearchSpace& space = inventory.search;
  const int max_servers =
      space.servers.empty() ? 0 : *std::max_element(space.servers.begin(), space.servers.end());
  for (const Selection& base : enumerate_selections(inventory)) {
    ++result.stats.subsets;
    search_selection(inventory, *convergence, base, max_servers, shared_plans, result);
  }
  result.stats.feasible = result.evaluations.size();
  rank_evaluations(inventory, ranking_size, result);
  result.stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string describe_selection(const Inventory& inventory, const Selection& selection) {
  std::string out;
  for (size_t t = 0; t < selection.nodes.size(); ++t) {
    if (selection.nodes[t] == 0) continue;
    out += fmt::format("{}{} x {}", out.empty() ? "" : " + ", selection.nodes[t],
                       inventory.node_types[t].name);
  }
  return out;
}

std::string describe_strategy(const PlanConfig& config) {
  const model::Strategy& s = model::strategy(config.strategy);
  if (!s.uses("workers")) return fmt::format("{}, batch {}", s.name(), config.batch_per_worker);
  std::string text = config.strategy;
  if (s.uses("tensor_parallel"))
    return fmt::format("{} {}, {}/worker", text, config.layout.label(), config.batch_per_worker);
  if (s.uses("collective")) {
    text += " " + config.collective;
    if (config.servers > 0) text += fmt::format(" x{}", config.servers);
  } else if (s.uses("servers")) {
    text += fmt::format(", {} server{}", config.servers, config.servers == 1 ? "" : "s");
  }
  if (s.uses("round_budget_s") && config.round_budget_s > 0)
    text += fmt::format(", budget {:g} s", config.round_budget_s);
  else if (s.uses("tau"))
    text += fmt::format(", tau {}", config.tau);
  if (s.uses("staleness_bound") && config.staleness_bound > 0)
    text += fmt::format(", staleness bound {}", config.staleness_bound);
  text += fmt::format(", {}/worker", config.batch_per_worker);
  if (s.uses("split") && config.split == model::BatchSplit::Speed) text += ", split speed";
  return text;
}

std::string candidate_job_yaml(const Inventory& inventory, const Evaluation& evaluation,
                               const std::string& platform_file) {
  const PlanConfig& c = evaluation.config;
  const model::StrategyOptions options = options_for(inventory, c);
  namespace fs = std::filesystem;
  std::string workload = inventory.workload_name;
  {
    const fs::path relative = fs::path(inventory.folder) / workload;
    if (fs::is_regular_file(relative))
      workload = fs::absolute(relative).lexically_normal().string();
    else if (fs::is_regular_file(workload))
      workload = fs::absolute(workload).lexically_normal().string();
  }
  std::string yaml = fmt::format(
      "# Re-check of a `tauplan plan` candidate: {} (K={}), {}.\n"
      "# Generated from {}; run: tauplan simulate <this file> --json\n"
      "platform: {}\n"
      "workload: {}\n"
      "strategies: [{}]\n"
      "workers: {}\n"
      "batch: {:g}\n"
      "tau: {}\n"
      "split: {}\n",
      describe_selection(inventory, c.selection), c.gpus, describe_strategy(c), inventory.file,
      platform_file, workload, c.strategy, options.workers, options.batch, options.tau,
      to_string(options.split));
  if (model::strategy(c.strategy).uses("tensor_parallel")) {
    yaml += fmt::format(
        "tensor_parallel: {}\npipeline_parallel: {}\ndata_parallel: {}\nmicro_batches: {}\n"
        "pipeline_schedule: {}\nzero_stage: {}\nrecompute: {}\n",
        c.layout.tensor, c.layout.pipeline, c.layout.data, c.layout.micro_batches,
        to_string(c.layout.schedule), c.layout.zero_stage, to_string(c.layout.recompute));
    if (c.layout.context > 1) yaml += fmt::format("context_parallel: {}\n", c.layout.context);
    if (c.layout.expert > 1) yaml += fmt::format("expert_parallel: {}\n", c.layout.expert);
    if (c.layout.sequence_parallel) yaml += "sequence_parallel: true\n";
  } else if (!c.collective.empty()) {
    yaml += fmt::format("collective: {}\n", c.collective);
  }
  if (c.servers > 0) yaml += fmt::format("servers: {}\n", c.servers);
  if (c.round_budget_s > 0) yaml += fmt::format("round_budget_s: {:.17g}\n", c.round_budget_s);
  if (c.staleness_bound > 0) yaml += fmt::format("staleness_bound: {}\n", c.staleness_bound);
  if (model::strategy(c.strategy).uses("staleness_bound"))
    yaml += fmt::format("staleness_cost: {:.17g}\n", inventory.target.staleness_cost);
  yaml += fmt::format("step_overhead_s: {:.17g}\n", inventory.search.step_overhead_s);
  const Target& t = inventory.target;
  if (t.convergence == "critical-batch") {
    yaml += fmt::format(
        "convergence: critical-batch\nmin_steps: {:.17g}\ncritical_batch: {:.17g}\ndrift: "
        "{:.17g}\n",
        t.min_steps, t.critical_batch, t.drift);
  } else if (t.convergence == "table") {
    yaml += fmt::format("convergence: table\nconvergence_table: {}\n",
                        fs::absolute(t.table_path).lexically_normal().string());
  } else {
    // Epochs: the counts the planner used, as fixed counts (iterations for single and sync,
    // rounds for local-sgd).
    yaml += fmt::format("convergence: fixed\niterations: {:.17g}\n", evaluation.convergence_steps);
    if (model::strategy(c.strategy).counts_rounds())
      yaml += fmt::format("rounds: {:.17g}\n", evaluation.convergence_steps);
  }
  const RecheckSettings& r = inventory.recheck;
  yaml += fmt::format("seed: {}\nnetwork_model: {}\nsim_rounds: {}\n", r.seed, r.network_model,
                      r.sim_rounds);
  const auto revocable = revocable_nodes(inventory, c.selection);
  if (!revocable.empty() && !(r.faults && r.sim_rounds == 0))
    yaml +=
        "# Revocable nodes: tauplan plan applies the revocation closed form (model/\n"
        "# revocation.hpp) to the simulated round; simulated faults need every round\n"
        "# simulated (recheck: {faults: true, sim_rounds: 0}).\n";
  if (r.faults && r.sim_rounds == 0 && !revocable.empty()) {
    yaml +=
        "# Revocations: each revocable node fails at its rate (on its first GPU host; a\n"
        "# failure of any host restarts the round, as a revocation of the node does).\n";
    yaml += "failures:\n";
    for (const auto& node : revocable)
      yaml += fmt::format("  - \"{}~{:.17g}s\"\n", node.first_host, 1.0 / node.rate_per_s);
    yaml += fmt::format("failure_restart_s: {:.17g}\n", evaluation.restart_s);
  }
  return yaml;
}

}  // namespace tauplan::study
