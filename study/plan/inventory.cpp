// inventory.cpp: the inventory loader, the target's convergence model, and the two builders of
// a selection's cluster (model::Platform in code, SimGrid XML); see inventory.hpp.
#include "study/plan/inventory.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/yaml_util.hpp"
#include "model/inputs/simgrid_xml.hpp"
#include "model/inputs/simgrid_xml_check.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/job.hpp"
#include "model/ir/strategy.hpp"
#include "model/ir/token_target.hpp"

namespace tauplan::study {

const std::vector<InventoryKey>& inventory_keys() {
  static const std::vector<InventoryKey> keys = {
      {"", "workload", "catalog name or workload file (relative to the inventory)"},
      {"", "target", "what the job must reach: accuracy (a convergence model) or tokens"},
      {"", "objective", "min-time (default), min-cost or min-cost-under-deadline"},
      {"", "deadline",
       "time the job must finish in, with a unit (12h), for min-cost-under-deadline"},
      {"", "deadline_confidence",
       "probability of meeting the deadline, in [0.5, 1) (none: in expectation)"},
      {"", "currency", "symbol printed before costs (default $)"},
      {"", "node_types", "list of node types that may be bought"},
      {"", "servers", "parameter-server VMs for the ps collective and async-ps"},
      {"", "search", "the configuration space searched"},
      {"", "recheck", "how many of the best are re-checked in SimGrid, and how"},
      {"node_types[]", "name", "short word used in host names (required)"},
      {"node_types[]", "gpu_model", "a GPU of model/catalog/gpus.yaml (required)"},
      {"node_types[]", "gpus_per_node", "GPUs in one node (default 1)"},
      {"node_types[]", "nodes", "nodes available (required)"},
      {"node_types[]", "price_per_hour", "price of one node-hour (required)"},
      {"node_types[]", "market", "on-demand (default) or revocable"},
      {"node_types[]", "revocations_per_hour", "revocable: revocations per node-hour"},
      {"node_types[]", "restart_s", "revocable: stall after a revocation, seconds"},
      {"node_types[]", "efficiency", "fraction of the GPU's peak a step reaches (default 0.5)"},
      {"node_types[]", "precision", "which peak of the GPU: fp32 (default), fp64, fp16, bf16"},
      {"node_types[]", "network", "the node's links (below)"},
      {"node_types[].network", "bandwidth", "the node's NIC, with a unit (25Gbps, 3.125GBps)"},
      {"node_types[].network", "latency", "one-way latency of the NIC, with a unit (2us)"},
      {"node_types[].network", "gpu_bandwidth", "GPU to GPU inside a node, with a unit (450GBps)"},
      {"node_types[].network", "gpu_latency", "GPU to GPU inside a node, with a unit (1.4us)"},
      {"servers", "max", "servers that may be used (required)"},
      {"servers", "price_per_hour", "price of one server-hour"},
      {"servers", "speed_flops", "a server's speed applying updates, flop/s"},
      {"servers", "network", "a server's link (below)"},
      {"servers.network", "bandwidth", "a server's link, with a unit"},
      {"servers.network", "latency", "a server's link latency, with a unit"},
      {"search", "strategies", "strategies searched (default: every multi-worker strategy)"},
      {"search", "collectives", "collective algorithms searched"},
      {"search", "batch_per_worker", "batch per worker (default 32, 64, 128)"},
      {"search", "tau", "local-sgd steps per round (default 1, 4, 16)"},
      {"search", "split", "sync batch splits: even, speed"},
      {"search", "servers", "parameter servers (default 1, 2, 4)"},
      {"search", "max_gpus", "the most GPUs a configuration may use (default 64)"},
      {"search", "step_overhead_s", "fixed seconds of every training step"},
      {"search", "round_budget_s", "local-sgd time budgets per round (none: not searched)"},
      {"search", "staleness_bound", "async-ps SSP bounds (default 0: unbounded)"},
      {"search", "tensor_parallel", "mesh: tensor sizes (default 1, 2, 4, 8)"},
      {"search", "pipeline_parallel", "mesh: pipeline stages (default 1, 2, 4, 8)"},
      {"search", "context_parallel", "mesh: context sizes (default 1)"},
      {"search", "expert_parallel", "mesh: expert sizes, MoE only (default 1-64)"},
      {"search", "micro_batch_size", "mesh: sequences per micro-batch (default 1, 2, 4)"},
      {"search", "zero_stage", "mesh: ZeRO stages (default 0, 1)"},
      {"search", "recompute", "mesh: none, selective, full (default all three)"},
      {"target", "accuracy", "label of what the convergence model was fitted for"},
      {"target", "convergence", "critical-batch, table or epochs"},
      {"target", "min_steps", "critical-batch: steps at a small batch"},
      {"target", "critical_batch", "critical-batch: the batch where steps stop halving"},
      {"target", "drift", "local-sgd: extra rounds per local step"},
      {"target", "convergence_table", "table: CSV of steps to target per batch"},
      {"target", "epochs", "epochs: passes over the dataset"},
      {"target", "dataset_samples", "epochs: samples in the dataset"},
      {"target", "staleness_cost", "async-ps: kappa of Na(b) (1 + kappa tau)"},
      {"target", "tokens", "a target in tokens (15T)"},
      {"target", "dataset_tokens", "epochs over a dataset of this many tokens"},
      {"recheck", "top", "candidates re-checked in SimGrid (default 10)"},
      {"recheck", "sim_rounds", "rounds simulated per candidate (default 50; 0: all)"},
      {"recheck", "network_model", "SimGrid network model (default CM02)"},
      {"recheck", "faults", "simulate revocations as faults (sim_rounds 0 only)"},
      {"recheck", "seed", "seed of the simulated faults"},
  };
  return keys;
}

namespace {

/// The keys of one section of inventory_keys(), for reject_unknown_keys.
std::vector<std::string> keys_of(const std::string& section) {
  std::vector<std::string> names;
  for (const InventoryKey& key : inventory_keys())
    if (section == key.section) names.push_back(key.name);
  return names;
}

}  // namespace

std::vector<std::string> default_search_strategies() {
  std::vector<std::string> names;
  for (const std::string& name : model::default_strategy_names())
    if (model::strategy(name).uses("workers")) names.push_back(name);
  return names;
}

std::vector<std::string> default_search_collectives() {
  std::vector<std::string> names;
  for (const std::string& name : model::collective_algorithm_names())
    if (model::collective_algorithm(name).searched_by_default()) names.push_back(name);
  return names;
}

namespace {

// Limits of inventory values beyond those of model/base/limits.hpp.
constexpr double kMaxPrice = 1e9;        // per node-hour, in the inventory's currency
constexpr double kMaxRatePerHour = 1e6;  // revocations per node-hour
constexpr double kMaxSeconds = 1e9;      // restart and step overhead
constexpr double kMaxDeadlineSeconds = 1e12;

std::string quoted(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  return node.IsSequence() ? "a list" : node.IsMap() ? "a map" : "nothing";
}

int whole_number(const YAML::Node& node, const std::string& origin, const std::string& key,
                 int min_value) {
  const double value = model::yaml_util::number(node, origin, key);
  if (value != std::floor(value) || value < min_value || value > 1e6)
    throw InputError(origin, key, fmt::format("a whole number >= {}", min_value), quoted(node));
  return static_cast<int>(value);
}

double non_negative(const YAML::Node& node, const std::string& origin, const std::string& key) {
  return model::yaml_util::positive(node, origin, key, true);
}

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A word usable in host names: letters, digits, '-' and '_', starting with a letter.
bool is_name_word(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

std::vector<std::string> words(const YAML::Node& node, const std::string& origin,
                               const std::string& key) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    out.push_back(node.Scalar());
  } else if (node.IsSequence() && node.size() > 0) {
    for (const auto& item : node)
      out.push_back(model::yaml_util::text(item, origin, key));
  } else {
    throw InputError(origin, key, "a non-empty list", quoted(node));
  }
  return out;
}

std::vector<int> whole_numbers(const YAML::Node& node, const std::string& origin,
                               const std::string& key, int min_value) {
  std::vector<int> out;
  if (node.IsScalar()) {
    out.push_back(whole_number(node, origin, key, min_value));
  } else if (node.IsSequence() && node.size() > 0) {
    for (const auto& item : node)
      out.push_back(whole_number(item, origin, key, min_value));
  } else {
    throw InputError(origin, key, "a non-empty list of whole numbers", quoted(node));
  }
  return out;
}

void parse_network(const YAML::Node& node, const std::string& origin, const std::string& prefix,
                   NetworkSpec& network, bool with_gpu_link) {
  if (!node.IsMap()) throw InputError(origin, prefix, "a map of network keys", quoted(node));
  model::yaml_util::reject_unknown_keys(
      node, keys_of(with_gpu_link ? "node_types[].network" : "servers.network"), origin,
      prefix + ".");
  // Units are explicit in an inventory, as in a platform file: `bandwidth: 400` could mean
  // bytes or bits per second, Gbps or GBps, and `latency: 2` seconds or microseconds, so a bare
  // number (other than a latency of 0) is refused rather than read in the base unit.
  auto require_unit = [&](const std::string& text, const std::string& k, const char* example) {
    double bare = 0;
    if (model::parse_number(text, bare) && bare != 0)
      throw InputError(origin, k, fmt::format("a number with its unit ({})", example),
                       "'" + text + "' (no unit)");
  };
  auto bandwidth = [&](const char* key, double& out) {
    if (!node[key]) return;
    const std::string k = prefix + "." + key;
    const std::string text = model::yaml_util::text(node[key], origin, k);
    require_unit(text, k, "e.g. 25Gbps, 3.125GBps");
    out = model::parse_bandwidth(text, origin, k);
    if (!(out >= model::kMinBandwidthBps && out <= model::kMaxBandwidthBps))
      throw InputError(origin, k,
                       fmt::format("a bandwidth in [{:g}, {:g}] B/s", model::kMinBandwidthBps,
                                   model::kMaxBandwidthBps),
                       quoted(node[key]));
  };
  auto latency = [&](const char* key, double& out) {
    if (!node[key]) return;
    const std::string k = prefix + "." + key;
    const std::string text = model::yaml_util::text(node[key], origin, k);
    require_unit(text, k, "e.g. 18us, 2ms");
    out = model::parse_seconds(text, origin, k);
    if (!(out >= 0 && out <= model::kMaxLatencySeconds))
      throw InputError(origin, k,
                       fmt::format("a latency in [0, {:g}] s", model::kMaxLatencySeconds),
                       quoted(node[key]));
  };
  bandwidth("bandwidth", network.bandwidth_Bps);
  latency("latency", network.latency_s);
  bandwidth("gpu_bandwidth", network.gpu_bandwidth_Bps);
  latency("gpu_latency", network.gpu_latency_s);
}

NodeType parse_node_type(const YAML::Node& node, const std::string& origin,
                         const std::string& prefix) {
  if (!node.IsMap()) throw InputError(origin, prefix, "a map describing a node type", quoted(node));
  model::yaml_util::reject_unknown_keys(node, keys_of("node_types[]"), origin, prefix + ".");
  auto key = [&prefix](const char* k) { return prefix + "." + k; };
  for (const char* required : {"name", "gpu_model", "nodes", "price_per_hour"})
    if (!node[required]) throw InputError(origin, key(required), "a value", "nothing");
  NodeType type;
  type.name = model::yaml_util::text(node["name"], origin, key("name"));
  // At most 128 characters: host names add "-<node>-gpu<index>" and stay within kMaxNameLength.
  if (!is_name_word(type.name) || type.name.size() > 128)
    throw InputError(origin, key("name"),
                     "a word of at most 128 letters, digits, '-' or '_' starting with a letter",
                     quoted(node["name"]));
  type.gpu_model = model::yaml_util::text(node["gpu_model"], origin, key("gpu_model"));
  const model::GpuSpec& gpu = model::gpu_spec(type.gpu_model, origin, key("gpu_model"));
  if (node["gpus_per_node"])
    type.gpus_per_node = whole_number(node["gpus_per_node"], origin, key("gpus_per_node"), 1);
  type.nodes = whole_number(node["nodes"], origin, key("nodes"), 1);
  type.price_per_hour = model::yaml_util::in_range(node["price_per_hour"], origin,
                                                   key("price_per_hour"), 0, kMaxPrice);
  if (node["market"]) {
    const std::string market = model::yaml_util::text(node["market"], origin, key("market"));
    if (market == "on-demand")
      type.market = Market::OnDemand;
    else if (market == "revocable")
      type.market = Market::Revocable;
    else
      throw InputError(origin, key("market"), "on-demand or revocable", quoted(node["market"]));
  }
  if (type.market == Market::Revocable) {
    if (!node["revocations_per_hour"])
      throw InputError(origin, key("revocations_per_hour"),
                       "a rate >= 0 (revocations per node-hour) for a revocable node type",
                       "nothing");
    type.revocations_per_hour = model::yaml_util::in_range(
        node["revocations_per_hour"], origin, key("revocations_per_hour"), 0, kMaxRatePerHour);
    if (node["restart_s"]) {
      type.restart_s =
          model::parse_seconds(model::yaml_util::text(node["restart_s"], origin, key("restart_s")),
                               origin, key("restart_s"));
      if (!(type.restart_s >= 0 && type.restart_s <= kMaxSeconds))
        throw InputError(origin, key("restart_s"), fmt::format("seconds in [0, {:g}]", kMaxSeconds),
                         quoted(node["restart_s"]));
    }
  } else {
    for (const char* k : {"revocations_per_hour", "restart_s"})
      if (node[k])
        throw InputError(origin, key(k), "no revocation keys for an on-demand node type",
                         quoted(node[k]) + " (set market: revocable)");
  }
  if (node["efficiency"]) {
    type.efficiency = model::yaml_util::positive(node["efficiency"], origin, key("efficiency"));
    if (type.efficiency > 1)
      throw InputError(origin, key("efficiency"), "a fraction of the peak in (0, 1]",
                       quoted(node["efficiency"]));
  }
  if (node["precision"])
    type.precision = model::yaml_util::text(node["precision"], origin, key("precision"));
  const double peak = gpu.peak_flops(type.precision);
  if (!(peak > 0))
    throw InputError(origin, key("precision"),
                     fmt::format("a precision the {} has a peak for ({})", gpu.model,
                                 fmt::join(model::precision_names(), ", ")),
                     "'" + type.precision + "'");
  type.speed_flops = peak * type.efficiency;
  type.memory_bytes = gpu.memory_bytes;
  if (node["network"]) parse_network(node["network"], origin, key("network"), type.network, true);
  return type;
}

model::BatchSplit parse_split(const std::string& word, const std::string& origin) {
  if (word == "even") return model::BatchSplit::Even;
  if (word == "speed") return model::BatchSplit::Speed;
  throw InputError(origin, "search.split", "even or speed", "'" + word + "'");
}

void parse_search(const YAML::Node& node, const std::string& origin, SearchSpace& search) {
  if (!node.IsMap()) throw InputError(origin, "search", "a map of search keys", quoted(node));
  model::yaml_util::reject_unknown_keys(node, keys_of("search"), origin, "search.");
  if (node["strategies"]) {
    search.strategies = words(node["strategies"], origin, "search.strategies");
    for (const auto& s : search.strategies)
      model::strategy(s, origin);  // throws InputError on an unknown strategy
  }
  if (node["collectives"]) {
    search.collectives = words(node["collectives"], origin, "search.collectives");
    for (const auto& c : search.collectives)
      model::collective_algorithm(c, origin);
  }
  if (node["batch_per_worker"])
    search.batch_per_worker =
        whole_numbers(node["batch_per_worker"], origin, "search.batch_per_worker", 1);
  if (node["tau"]) search.tau = whole_numbers(node["tau"], origin, "search.tau", 1);
  if (node["split"]) {
    search.splits.clear();
    for (const auto& w : words(node["split"], origin, "search.split"))
      search.splits.push_back(parse_split(w, origin));
  }
  if (node["servers"]) search.servers = whole_numbers(node["servers"], origin, "search.servers", 1);
  if (node["staleness_bound"])
    search.staleness_bound =
        whole_numbers(node["staleness_bound"], origin, "search.staleness_bound", 0);
  if (node["round_budget_s"]) {
    search.round_budget_s.clear();
    for (const auto& w : words(node["round_budget_s"], origin, "search.round_budget_s")) {
      const double budget = model::parse_seconds(w, origin, "search.round_budget_s");
      if (!(budget > 0))
        throw InputError(origin, "search.round_budget_s", "seconds > 0", "'" + w + "'");
      search.round_budget_s.push_back(budget);
    }
  }
  if (node["max_gpus"])
    search.max_gpus = whole_number(node["max_gpus"], origin, "search.max_gpus", 1);
  if (node["tensor_parallel"])
    search.tensor_parallel =
        whole_numbers(node["tensor_parallel"], origin, "search.tensor_parallel", 1);
  if (node["pipeline_parallel"])
    search.pipeline_parallel =
        whole_numbers(node["pipeline_parallel"], origin, "search.pipeline_parallel", 1);
  if (node["context_parallel"])
    search.context_parallel =
        whole_numbers(node["context_parallel"], origin, "search.context_parallel", 1);
  if (node["expert_parallel"])
    search.expert_parallel =
        whole_numbers(node["expert_parallel"], origin, "search.expert_parallel", 1);
  if (node["micro_batch_size"])
    search.micro_batch_size =
        whole_numbers(node["micro_batch_size"], origin, "search.micro_batch_size", 1);
  if (node["zero_stage"]) {
    search.zero_stage = whole_numbers(node["zero_stage"], origin, "search.zero_stage", 0);
    for (int z : search.zero_stage)
      if (z > 3)
        throw InputError(origin, "search.zero_stage", "ZeRO stages 0 to 3", std::to_string(z));
  }
  if (node["recompute"]) {
    search.recompute.clear();
    for (const auto& w : words(node["recompute"], origin, "search.recompute")) {
      if (w != "none" && w != "selective" && w != "full")
        throw InputError(origin, "search.recompute", "none, selective or full", "'" + w + "'");
      search.recompute.push_back(w == "full"        ? model::Recompute::Full
                                 : w == "selective" ? model::Recompute::Selective
                                                    : model::Recompute::None);
    }
  }
  if (node["step_overhead_s"]) {
    search.step_overhead_s = model::parse_seconds(
        model::yaml_util::text(node["step_overhead_s"], origin, "search.step_overhead_s"), origin,
        "search.step_overhead_s");
    if (!(search.step_overhead_s >= 0 && search.step_overhead_s <= kMaxSeconds))
      throw InputError(origin, "search.step_overhead_s",
                       fmt::format("seconds in [0, {:g}]", kMaxSeconds),
                       quoted(node["step_overhead_s"]));
  }
}

void parse_target(const YAML::Node& node, const Inventory& inventory, Target& target) {
  const std::string& origin = inventory.file;
  if (!node.IsMap()) throw InputError(origin, "target", "a map", quoted(node));
  model::yaml_util::reject_unknown_keys(node, keys_of("target"), origin, "target.");
  if (node["accuracy"])
    target.accuracy = model::yaml_util::text(node["accuracy"], origin, "target.accuracy");
  if (node["staleness_cost"])
    target.staleness_cost = non_negative(node["staleness_cost"], origin, "target.staleness_cost");
  // A target in tokens: `tokens` alone (no other target key), or `dataset_tokens` in place of
  // `dataset_samples` beside `epochs`. Either needs a workload with a sequence length.
  if (node["tokens"]) {
    for (const char* k : {"convergence", "epochs", "dataset_samples", "dataset_tokens", "min_steps",
                          "critical_batch", "drift", "convergence_table"})
      if (node[k])
        throw InputError(origin, "target.tokens",
                         fmt::format("target.tokens or target.{}, not both (a token target "
                                     "replaces the convergence model)",
                                     k),
                         fmt::format("both, target.{}: {}", k, quoted(node[k])));
    target.tokens = model::parse_tokens(
        model::yaml_util::text(node["tokens"], origin, "target.tokens"), origin, "target.tokens");
    target.sequence = token_sequence(inventory.workload, origin, "target.tokens");
    target.convergence = "tokens";
    return;
  }
  if (node["dataset_tokens"]) {
    if (node["dataset_samples"])
      throw InputError(origin, "target.dataset_tokens",
                       "target.dataset_tokens or target.dataset_samples, not both",
                       "both, target.dataset_samples: " + quoted(node["dataset_samples"]));
    if (node["convergence"] &&
        model::yaml_util::text(node["convergence"], origin, "target.convergence") != "epochs")
      throw InputError(origin, "target.dataset_tokens",
                       "target.dataset_tokens only with convergence: epochs",
                       "convergence: " + quoted(node["convergence"]));
    if (!node["epochs"])
      throw InputError(origin, "target.epochs", "a number > 0 (needed by target.dataset_tokens)",
                       "nothing");
    target.dataset_tokens = model::parse_tokens(
        model::yaml_util::text(node["dataset_tokens"], origin, "target.dataset_tokens"), origin,
        "target.dataset_tokens");
    target.sequence = token_sequence(inventory.workload, origin, "target.dataset_tokens");
  }
  target.convergence = node["convergence"] ? model::yaml_util::text(node["convergence"], origin,
                                                                    "target.convergence")
                                           : (node["epochs"] ? "epochs" : "critical-batch");
  if (target.convergence == "critical-batch") {
    for (const char* k : {"min_steps", "critical_batch"})
      if (!node[k])
        throw InputError(origin, std::string("target.") + k,
                         "a number > 0 (needed by convergence: critical-batch)", "nothing");
    target.min_steps = model::yaml_util::in_range(node["min_steps"], origin, "target.min_steps", 0,
                                                  model::kMaxConvergenceSteps, true);
    target.critical_batch = model::yaml_util::in_range(
        node["critical_batch"], origin, "target.critical_batch", 0, model::kMaxCriticalBatch, true);
    // Na(b) <= Smin (1 + Bcrit) for every batch b >= 1: within the step limit for all of them,
    // so that no configuration of the search fails on its step count.
    if (target.min_steps * (1 + target.critical_batch) > model::kMaxConvergenceSteps)
      throw InputError(origin, "target.min_steps, target.critical_batch",
                       fmt::format("min_steps x (1 + critical_batch) <= {:g} steps",
                                   model::kMaxConvergenceSteps),
                       fmt::format("{:g}", target.min_steps * (1 + target.critical_batch)));
    if (node["drift"]) {
      target.drift = non_negative(node["drift"], origin, "target.drift");
      if (target.drift > 1)
        throw InputError(origin, "target.drift", "a number in [0, 1]", quoted(node["drift"]));
    }
  } else if (target.convergence == "table") {
    if (!node["convergence_table"])
      throw InputError(origin, "target.convergence_table", "a CSV file batch,workers,tau,steps",
                       "nothing");
    const std::string raw = model::yaml_util::text(
        node["convergence_table"], origin, "target.convergence_table", model::kMaxPathLength);
    namespace fs = std::filesystem;
    target.table_path = fs::path(raw).is_absolute() || inventory.folder.empty()
                            ? raw
                            : (fs::path(inventory.folder) / raw).lexically_normal().string();
  } else if (target.convergence == "epochs") {
    for (const char* k : {"epochs", "dataset_samples"})
      if (!node[k] && !(target.dataset_tokens > 0 && std::string(k) == "dataset_samples"))
        throw InputError(origin, std::string("target.") + k,
                         "a number > 0 (needed by convergence: epochs)", "nothing");
    target.epochs = model::yaml_util::in_range(node["epochs"], origin, "target.epochs", 0,
                                               model::kMaxConvergenceSteps, true);
    if (target.dataset_tokens > 0) {
      target.dataset_samples = target.dataset_tokens / target.sequence;
      target.tokens = target.epochs * target.dataset_tokens;
    } else {
      target.dataset_samples =
          model::yaml_util::in_range(node["dataset_samples"], origin, "target.dataset_samples", 0,
                                     model::kMaxParameters, true);
    }
    // Na(b) = epochs x samples / b <= epochs x samples for every batch b >= 1.
    if (target.epochs * target.dataset_samples > model::kMaxConvergenceSteps)
      throw InputError(
          origin, "target.epochs, target.dataset_samples",
          fmt::format("epochs x dataset_samples <= {:g} samples", model::kMaxConvergenceSteps),
          fmt::format("{:g}", target.epochs * target.dataset_samples));
  } else {
    throw InputError(origin, "target.convergence", "critical-batch, table or epochs",
                     quoted(node["convergence"]));
  }
}

void parse_recheck(const YAML::Node& node, const std::string& origin, RecheckSettings& recheck) {
  if (!node.IsMap()) throw InputError(origin, "recheck", "a map", quoted(node));
  model::yaml_util::reject_unknown_keys(node, keys_of("recheck"), origin, "recheck.");
  if (node["top"]) recheck.top = whole_number(node["top"], origin, "recheck.top", 0);
  if (node["sim_rounds"])
    recheck.sim_rounds = whole_number(node["sim_rounds"], origin, "recheck.sim_rounds", 0);
  if (node["network_model"]) {
    recheck.network_model =
        model::yaml_util::text(node["network_model"], origin, "recheck.network_model");
    if (recheck.network_model != "CM02" && recheck.network_model != "LV08")
      throw InputError(origin, "recheck.network_model", "CM02 or LV08",
                       quoted(node["network_model"]));
  }
  if (node["faults"]) {
    const std::string f = lower(model::yaml_util::text(node["faults"], origin, "recheck.faults"));
    if (f != "true" && f != "false")
      throw InputError(origin, "recheck.faults", "true or false", quoted(node["faults"]));
    recheck.faults = f == "true";
  }
  if (node["seed"])
    recheck.seed =
        static_cast<unsigned long long>(whole_number(node["seed"], origin, "recheck.seed", 0));
}

// Routes of the two-level star: see inventory.hpp.
class NodeStarRoutes : public model::RouteOracle {
 public:
  struct HostLinks {
    int node = -1;    ///< index of the node (servers are nodes of their own)
    int gpu_up = -1;  ///< -1: the host sits directly on its NIC
    int gpu_down = -1;
    int nic_up = -1;
    int nic_down = -1;
  };
  NodeStarRoutes(std::vector<model::Link> links, std::vector<HostLinks> hosts)
      : links_(std::move(links)), hosts_(std::move(hosts)) {}

  model::Route route(int src_host, int dst_host) const override {
    model::Route route;
    route.bandwidth_Bps = std::numeric_limits<double>::infinity();
    if (src_host == dst_host) return route;
    const HostLinks& a = hosts_.at(static_cast<size_t>(src_host));
    const HostLinks& b = hosts_.at(static_cast<size_t>(dst_host));
    if (a.node == b.node) {
      route.links = {a.gpu_up, b.gpu_down};
    } else {
      if (a.gpu_up >= 0) route.links.push_back(a.gpu_up);
      route.links.push_back(a.nic_up);
      route.links.push_back(b.nic_down);
      if (b.gpu_down >= 0) route.links.push_back(b.gpu_down);
    }
    total_route(route, links_);
    return route;
  }

 private:
  std::vector<model::Link> links_;
  std::vector<HostLinks> hosts_;
};

/// `workload`: a catalog name, or a workload YAML file (relative to the inventory's folder when
/// one is there).
void parse_inventory_workload(const YAML::Node& root, const std::string& origin,
                              const std::string& folder, Inventory& inventory) {
  if (!root["workload"])
    throw InputError(origin, "workload", "a catalog workload name or a workload YAML file",
                     "nothing");
  inventory.workload_name =
      model::yaml_util::text(root["workload"], origin, "workload", model::kMaxPathLength);
  std::string name = inventory.workload_name;
  namespace fs = std::filesystem;
  const fs::path relative = fs::path(folder) / name;
  if (!folder.empty() && !fs::path(name).is_absolute() && fs::is_regular_file(relative))
    name = relative.lexically_normal().string();
  try {
    inventory.workload = model::load_workload(name);
  } catch (const InputError& e) {
    throw InputError(origin, "workload", e.what());
  }
}

/// `objective`, `deadline` and `deadline_confidence` (min-cost-under-deadline needs a deadline).
void parse_objective(const YAML::Node& root, const std::string& origin, Inventory& inventory) {
  const std::string objective = root["objective"]
                                    ? model::yaml_util::text(root["objective"], origin, "objective")
                                    : "min-time";
  if (objective == "min-time")
    inventory.objective = Objective::MinTime;
  else if (objective == "min-cost")
    inventory.objective = Objective::MinCost;
  else if (objective == "min-cost-under-deadline")
    inventory.objective = Objective::MinCostUnderDeadline;
  else
    throw InputError(origin, "objective", "min-time, min-cost or min-cost-under-deadline",
                     "'" + objective + "'");
  if (root["deadline"])
    inventory.deadline_s = parse_deadline(
        model::yaml_util::text(root["deadline"], origin, "deadline"), origin, "deadline");
  if (root["deadline_confidence"]) {
    inventory.deadline_confidence =
        model::yaml_util::number(root["deadline_confidence"], origin, "deadline_confidence");
    if (!(inventory.deadline_confidence >= 0.5 && inventory.deadline_confidence < 1))
      throw InputError(origin, "deadline_confidence", "a probability in [0.5, 1) (e.g. 0.95)",
                       quoted(root["deadline_confidence"]));
  }
  if (inventory.objective == Objective::MinCostUnderDeadline && inventory.deadline_s <= 0)
    throw InputError(origin, "deadline", "a duration (e.g. 12h) for min-cost-under-deadline",
                     "nothing");
}

/// `node_types`: a non-empty list, each name used once.
void parse_node_types(const YAML::Node& root, const std::string& origin, Inventory& inventory) {
  const YAML::Node types = root["node_types"];
  if (!types || !types.IsSequence() || types.size() == 0)
    throw InputError(origin, "node_types", "a non-empty list of node types",
                     types ? quoted(types) : "nothing");
  for (size_t i = 0; i < types.size(); ++i) {
    NodeType type = parse_node_type(types[i], origin, fmt::format("node_types[{}]", i));
    for (const auto& other : inventory.node_types)
      if (other.name == type.name)
        throw InputError(origin, fmt::format("node_types[{}].name", i), "a name used once",
                         "'" + type.name + "' twice");
    inventory.node_types.push_back(type);
  }
}

/// `servers`: the pool of parameter servers (max, price, speed, network).
void parse_servers(const YAML::Node& s, const std::string& origin, ServerPool& servers) {
  if (!s.IsMap()) throw InputError(origin, "servers", "a map", quoted(s));
  model::yaml_util::reject_unknown_keys(s, keys_of("servers"), origin, "servers.");
  if (!s["max"]) throw InputError(origin, "servers.max", "a whole number >= 0", "nothing");
  servers.max = whole_number(s["max"], origin, "servers.max", 0);
  if (s["price_per_hour"])
    servers.price_per_hour = model::yaml_util::in_range(s["price_per_hour"], origin,
                                                        "servers.price_per_hour", 0, kMaxPrice);
  if (s["speed_flops"]) {
    servers.speed_flops =
        model::yaml_util::in_range(s["speed_flops"], origin, "servers.speed_flops",
                                   model::kMinSpeedFlops, model::kMaxSpeedFlops);
    servers.speed_given = true;
  }
  if (s["network"]) {
    NetworkSpec network;
    network.bandwidth_Bps = servers.bandwidth_Bps;
    network.latency_s = servers.latency_s;
    parse_network(s["network"], origin, "servers.network", network, false);
    servers.bandwidth_Bps = network.bandwidth_Bps;
    servers.latency_s = network.latency_s;
  }
}

/// A strategy whose servers do work of their own (no collective: async-ps applies updates on
/// them) needs servers, and their speed: no silent default.
void check_server_strategies(const Inventory& inventory, const std::string& origin) {
  for (const auto& name : inventory.search.strategies) {
    const model::Strategy& s = model::strategy(name, origin);
    if (!s.uses("servers") || s.uses("collective")) continue;
    if (inventory.search.servers.empty())
      throw InputError(origin, "servers.max",
                       "at least 1 parameter server (and search.servers within it) for " + name,
                       std::to_string(inventory.servers.max));
    if (!inventory.servers.speed_given)
      throw InputError(origin, "servers.speed_flops",
                       "the parameter servers' processing speed in flop/s (" + name +
                           " applies every update on them)",
                       "nothing");
  }
}

}  // namespace

const char* to_string(Objective objective) {
  switch (objective) {
    case Objective::MinTime:
      return "min-time";
    case Objective::MinCost:
      return "min-cost";
    case Objective::MinCostUnderDeadline:
      return "min-cost-under-deadline";
  }
  return "?";
}

const char* to_string(Market market) {
  return market == Market::Revocable ? "revocable" : "on-demand";
}

double parse_deadline(const std::string& text, const std::string& origin, const std::string& key) {
  double bare = 0;
  if (model::parse_number(text, bare))
    throw InputError(origin, key, "a duration with its unit (e.g. 12h, 90min)", "'" + text + "'");
  const double seconds = model::parse_seconds(text, origin, key);
  if (!(seconds > 0 && seconds <= kMaxDeadlineSeconds))
    throw InputError(origin, key,
                     fmt::format("a duration in (0, {:g}] s (e.g. 12h)", kMaxDeadlineSeconds),
                     "'" + text + "'");
  return seconds;
}

Inventory load_inventory(const std::string& path) {
  const std::string text = model::yaml_util::read_file(path, "inventory");
  return parse_inventory_yaml(text, path, std::filesystem::path(path).parent_path().string());
}

Inventory parse_inventory_yaml(const std::string& text, const std::string& origin,
                               const std::string& folder) {
  Inventory inventory;
  inventory.file = origin;
  inventory.folder = folder;
  const YAML::Node root = model::yaml_util::parse(text, origin);
  if (!root.IsMap()) throw InputError(origin, "(top level)", "a map of inventory keys");
  model::yaml_util::reject_unknown_keys(root, keys_of(""), origin);

  parse_inventory_workload(root, origin, folder, inventory);
  if (!root["target"])
    throw InputError(origin, "target", "a target (convergence model or epochs)", "nothing");
  parse_target(root["target"], inventory, inventory.target);
  parse_objective(root, origin, inventory);
  if (root["currency"])
    inventory.currency = model::yaml_util::text(root["currency"], origin, "currency");
  parse_node_types(root, origin, inventory);
  if (root["servers"]) parse_servers(root["servers"], origin, inventory.servers);

  if (root["search"]) parse_search(root["search"], origin, inventory.search);
  // Server counts beyond the pool are not searched; without servers, `ps` is not either.
  auto& counts = inventory.search.servers;
  counts.erase(std::remove_if(counts.begin(), counts.end(),
                              [&](int c) { return c > inventory.servers.max; }),
               counts.end());
  if (root["recheck"]) parse_recheck(root["recheck"], origin, inventory.recheck);
  check_server_strategies(inventory, origin);
  return inventory;
}

EpochsConvergence::EpochsConvergence(double epochs, double dataset_samples, std::string origin)
    : epochs_(epochs), samples_(dataset_samples), origin_(std::move(origin)) {}

namespace {
double checked_epoch_steps(double steps, const std::string& origin) {
  if (steps > 0 && steps <= model::kMaxConvergenceSteps) return steps;
  throw InputError(origin, "target.epochs, target.dataset_samples",
                   fmt::format("epochs x dataset_samples / batch in (0, {:g}] steps",
                               model::kMaxConvergenceSteps),
                   fmt::format("{:g}", steps));
}
}  // namespace

double EpochsConvergence::serial_steps(double batch) const {
  return checked_epoch_steps(epochs_ * samples_ / batch, origin_);
}

double EpochsConvergence::local_sgd_rounds(double batch, int workers, int tau) const {
  return checked_epoch_steps(epochs_ * samples_ / (batch * workers * tau), origin_);
}

double EpochsConvergence::unequal_local_rounds(double batch, const std::vector<int>& steps) const {
  double total = 0;  // local steps of all workers in one round
  for (int h : steps)
    total += h;
  return epochs_ * samples_ / (batch * total);
}

std::string EpochsConvergence::describe() const {
  return fmt::format("epochs: {:g} epochs of {:g} samples (Na(b) = epochs x samples / b)", epochs_,
                     samples_);
}

std::unique_ptr<model::ConvergenceModel> target_convergence(const Inventory& inventory) {
  const Target& t = inventory.target;
  if (t.convergence == "tokens") {
    auto model = std::make_unique<model::TokenConvergence>(t.tokens, t.sequence, inventory.file,
                                                           "target.tokens");
    model->set_staleness_cost(t.staleness_cost);
    return model;
  }
  if (t.convergence == "epochs") {
    auto model = std::make_unique<EpochsConvergence>(t.epochs, t.dataset_samples, inventory.file);
    model->set_staleness_cost(t.staleness_cost);
    return model;
  }
  if (t.convergence == "table") {
    auto model = std::make_unique<model::MeasuredTable>(
        model::yaml_util::read_file(t.table_path, "target.convergence_table"), t.table_path);
    model->set_staleness_cost(t.staleness_cost);
    return model;
  }
  auto model = std::make_unique<model::CriticalBatch>(t.min_steps, t.critical_batch, t.drift,
                                                      inventory.file);
  model->set_staleness_cost(t.staleness_cost);
  return model;
}

int Selection::gpus(const Inventory& inventory) const {
  int total = 0;
  for (size_t t = 0; t < nodes.size(); ++t)
    total += nodes[t] * inventory.node_types[t].gpus_per_node;
  return total;
}

std::string node_name(const NodeType& type, int index) {
  return type.name + "-" + std::to_string(index);
}

model::Platform make_selection_platform(const Inventory& inventory, const Selection& selection) {
  model::Platform platform;
  platform.source_file = "<inventory " + inventory.file + ">";
  std::vector<NodeStarRoutes::HostLinks> host_links;
  auto add_link = [&platform](const std::string& name, double bandwidth, double latency) {
    const int up = static_cast<int>(platform.links.size());
    for (const char* direction : {"_UP", "_DOWN"}) {
      model::Link link;
      link.name = name + direction;
      link.bandwidth_Bps = bandwidth;
      link.latency_s = latency;
      link.sharing = model::LinkSharing::SplitDuplex;
      platform.links.push_back(link);
    }
    return up;
  };
  int node_index = 0;
  for (size_t t = 0; t < selection.nodes.size(); ++t) {
    const NodeType& type = inventory.node_types[t];
    for (int n = 0; n < selection.nodes[t]; ++n, ++node_index) {
      const std::string node = node_name(type, n);
      const int nic = add_link(node + "-nic", type.network.bandwidth_Bps, type.network.latency_s);
      for (int g = 0; g < type.gpus_per_node; ++g) {
        model::Host host;
        host.name = node + "-gpu" + std::to_string(g);
        host.speed_flops = type.speed_flops;
        host.gpu_model = type.gpu_model;
        host.gpu_memory_bytes = type.memory_bytes;
        host.node = node;
        // As the re-check's platform XML says them (the compute profile times only its precision).
        host.properties = {{"precision", type.precision},
                           {"efficiency", model::simgrid_xml::number(type.efficiency)}};
        NodeStarRoutes::HostLinks links;
        links.node = node_index;
        links.nic_up = nic;
        links.nic_down = nic + 1;
        if (type.gpus_per_node > 1) {
          const int gpu = add_link(host.name + "-link", type.network.gpu_bandwidth_Bps,
                                   type.network.gpu_latency_s);
          links.gpu_up = gpu;
          links.gpu_down = gpu + 1;
        }
        platform.hosts.push_back(host);
        host_links.push_back(links);
      }
    }
  }
  for (int s = 0; s < selection.servers; ++s, ++node_index) {
    model::Host host;
    host.name = "server" + std::to_string(s);
    host.speed_flops = inventory.servers.speed_flops;
    host.node = host.name;
    host.role = model::HostRole::Server;
    const int nic =
        add_link(host.name + "-nic", inventory.servers.bandwidth_Bps, inventory.servers.latency_s);
    NodeStarRoutes::HostLinks links;
    links.node = node_index;
    links.nic_up = nic;
    links.nic_down = nic + 1;
    platform.hosts.push_back(host);
    host_links.push_back(links);
  }
  platform.routes = std::make_shared<NodeStarRoutes>(platform.links, std::move(host_links));
  platform.source_hash = model::fnv1a_hex(platform.source_file);
  return platform;
}

std::string selection_platform_xml(const Inventory& inventory, const Selection& selection) {
  namespace sx = model::simgrid_xml;
  sx::Platform xml;
  sx::Zone& world = xml.root;
  world.id = "world";
  world.routing = "Floyd";
  auto split_link = [](const std::string& id, double bandwidth, double latency) {
    return sx::Link{id, bandwidth, latency, "SPLITDUPLEX"};
  };
  auto up_route = [](const std::string& src, const std::string& dst, const std::string& link) {
    return sx::Route{src, dst, {{link, "UP"}}};
  };
  std::string summary;
  for (size_t t = 0; t < selection.nodes.size(); ++t) {
    const NodeType& type = inventory.node_types[t];
    if (selection.nodes[t] == 0) continue;
    summary += fmt::format("   {} x {} ({} x {}, {} node-hour {}{:g}{})\n", selection.nodes[t],
                           type.name, type.gpus_per_node, type.gpu_model,
                           type.market == Market::Revocable ? "revocable," : "on-demand,",
                           inventory.currency, type.price_per_hour,
                           type.market == Market::Revocable
                               ? fmt::format(", {:g} revocations per node-hour, restart {:g} s",
                                             type.revocations_per_hour, type.restart_s)
                               : "");
    for (int n = 0; n < selection.nodes[t]; ++n) {
      const std::string node = node_name(type, n);
      world.links.push_back(
          split_link(node + "-nic", type.network.bandwidth_Bps, type.network.latency_s));
      const bool multi = type.gpus_per_node > 1;
      if (multi) {
        world.routers.push_back(node + "-r");
        world.routes.push_back(up_route(node + "-r", "switch", node + "-nic"));
      }
      for (int g = 0; g < type.gpus_per_node; ++g) {
        const std::string host = node + "-gpu" + std::to_string(g);
        world.hosts.push_back({host,
                               type.speed_flops,
                               {{"gpu_model", type.gpu_model},
                                {"gpu_memory_bytes", sx::number(type.memory_bytes)},
                                {"precision", type.precision},
                                {"efficiency", sx::number(type.efficiency)},
                                {"node", node},
                                {"role", "worker"}}});
        if (multi) {
          world.links.push_back(split_link(host + "-link", type.network.gpu_bandwidth_Bps,
                                           type.network.gpu_latency_s));
          world.routes.push_back(up_route(host, node + "-r", host + "-link"));
        } else {
          world.routes.push_back(up_route(host, "switch", node + "-nic"));
        }
      }
    }
  }
  for (int s = 0; s < selection.servers; ++s) {
    const std::string host = "server" + std::to_string(s);
    world.hosts.push_back(
        {host, inventory.servers.speed_flops, {{"node", host}, {"role", "server"}}});
    world.links.push_back(
        split_link(host + "-nic", inventory.servers.bandwidth_Bps, inventory.servers.latency_s));
    world.routes.push_back(up_route(host, "switch", host + "-nic"));
  }
  world.routers.push_back("switch");
  // Floyd is cubic in the zone's netpoints: a selection of thousands of GPUs is routed with
  // Dijkstra (the same shortest paths: every pair has one), its routes cached as they are used.
  if (world.hosts.size() + world.routers.size() > model::kMaxDenseNetpoints)
    world.routing = "DijkstraCache";
  if (selection.servers > 0)
    summary += fmt::format("   {} parameter server(s) ps0.. at {}{:g} per hour\n",
                           selection.servers, inventory.currency, inventory.servers.price_per_hour);
  xml.comment = fmt::format(
      " Generated by tauplan plan from {} (study/plan/inventory.cpp). Nodes:\n{}"
      " Topology: every node's NIC (SPLITDUPLEX) into one non-blocking router \"switch\"; in a\n"
      " multi-GPU node each GPU has its own SPLITDUPLEX link to the node's router <node>-r, so\n"
      " GPU to GPU inside a node is <gpu>-link UP, <gpu'>-link DOWN, and across nodes <gpu>-link\n"
      " UP, <node>-nic UP, <node'>-nic DOWN, <gpu'>-link DOWN (the routes model/ computes in "
      "code).\n"
      " Speed = catalog peak[precision] x efficiency. Routing: Floyd up to 2048 hosts and\n"
      " routers, Dijkstra (with a cache) beyond.\n",
      inventory.file, summary);
  return sx::to_xml(xml);
}

std::vector<RevocableNode> revocable_nodes(const Inventory& inventory, const Selection& selection) {
  std::vector<RevocableNode> out;
  for (size_t t = 0; t < selection.nodes.size(); ++t) {
    const NodeType& type = inventory.node_types[t];
    if (type.market != Market::Revocable || type.revocations_per_hour <= 0) continue;
    for (int n = 0; n < selection.nodes[t]; ++n)
      out.push_back(
          {node_name(type, n) + "-gpu0", type.revocations_per_hour / 3600.0, type.restart_s});
  }
  return out;
}

}  // namespace tauplan::study
