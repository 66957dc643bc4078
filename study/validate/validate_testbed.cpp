// validate_testbed.cpp: the study behind `tauplan validate --testbed` (see validate_testbed.hpp).
#include "study/validate/validate_testbed.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "exec/calibrate.hpp"
#include "exec/cpu_steal.hpp"
#include "exec/job_keys.hpp"
#include "exec/server_probe.hpp"
#include "model/analytic/bottleneck_baseline.hpp"
#include "model/base/yaml_util.hpp"
#include "model/convergence/validation.hpp"
#include "model/inputs/calibration.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/result.hpp"
#include "model/ir/strategy.hpp"
#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/gnuplot.hpp"
#include "study/common/inputs.hpp"
#include "study/testbed/network_probe.hpp"
#include "study/testbed/testbed_control.hpp"
#include "study/validate/validate_baseline.hpp"
#include "study/validate/validate_support.hpp"

namespace tauplan::study {
namespace {

namespace fs = std::filesystem;
namespace yu = model::yaml_util;
using nlohmann::json;
using validation::EngineRow;
using validation::kNaN;
using validation::pct_or_na;

/// Measurements of one row, or network calibrations of one group, at most: a spoiled one
/// (MeasurementError), or with --max-steal one taken under more steal than that, is taken again.
constexpr int kStealAttempts = 3;

/// The simulator's latency jitter on a calibrated testbed platform: 5%, about the resolution of a
/// calibrated link latency (the fifth matrix's three calibrations split the NIC links' latencies
/// up to 1.4-4.9% apart; experiments/testbed/README.md, "Near-ties"). Chosen looking at that
/// matrix's three runs (training set): at 1% its ring of 8 still moved 2.1%, at 5% no row over
/// 0.45%; the striped ring of 12's mean moved under 1% for any amplitude from 0.2% to 5%.
constexpr double kTestbedLatencyJitter = 0.05;
/// Rounds simulated with it: the mean of 256 draws.
constexpr int kTestbedJitterRounds = 256;

/// The engines every configuration is predicted by, in report order.
/// The engines a testbed validation predicts with, chosen by capability: every registered
/// engine that predicts, at each network model it takes (analytic, simgrid_cm02, simgrid_lv08),
/// each run in a child process.
const std::vector<Predictor>& testbed_engines() {
  static const std::vector<Predictor> engines =
      predictors(NetworkModels::Each, RunsIn::ChildProcess);
  return engines;
}

/// The index in testbed_engines() of the first engine whose capabilities pass `wanted`.
size_t first_engine(bool (*wanted)(const model::EngineCapabilities&)) {
  return first_predictor(testbed_engines(), wanted, "validate --testbed");
}

/// The closed form (an engine that shares the process: analytic): it predicts on each
/// calibration alone, and its compute is the baseline's.
size_t closed_form_engine() {
  return closed_form_predictor(testbed_engines(), "validate --testbed");
}

/// The first engine that models contention (simgrid CM02): the table's time to target, the
/// runs' repeated errors, and the wait of a job that starts beside another.
size_t contention_engine() {
  return first_engine([](const model::EngineCapabilities& can) { return can.models_contention; });
}

/// The engines that also predict on the probed network (--probe-network): each at its default
/// network model (analytic and simgrid CM02; LV08 is hundreds of percent off on this testbed
/// either way), as indices into testbed_engines().
std::vector<size_t> probed_engines() {
  std::vector<size_t> out;
  for (size_t e = 0; e < testbed_engines().size(); ++e)
    if (testbed_engines()[e].default_model) out.push_back(e);
  return out;
}

/// A report's short name of an engine: its network model when it has one ("CM02"), else its
/// label ("analytic").
std::string column_name(const Predictor& p) {
  return p.network_model.empty() ? p.label : p.network_model;
}

/// An engine as the report's text names it: "analytic", "simgrid CM02".
std::string display_name(const Predictor& p) {
  return std::string(p.engine->name()) + (p.network_model.empty() ? "" : " " + p.network_model);
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words)
    out += (out.empty() ? "" : ",") + w;
  return out;
}

/// What the servers of `config` compute per call: "combine" (ps: the mean of the pushes), "apply"
/// (async-ps: one apply per update), or "" (no servers, or the SparkNet driver, whose averaging
/// is left out of the model).
std::string server_processing_of(const TestbedConfig& config) {
  if (model::strategy(config.strategy).asynchronous()) return "apply";
  if (config.collective == model::parameter_server_collective()) return "combine";
  return "";
}

/// The compute of K workers stepping at once, fitted to C(b) = intercept + b x per-sample and
/// moved so that it passes through the median at the configuration's per-worker batch.
struct ComputeCalibration {
  std::vector<exec::StepPoint> steps;
  double per_worker_batch = 0;
  double step_s = 0;  ///< C(per-worker batch), as written into the platform
  double intercept_s = 0;
  double per_sample_s = 0;
  /// The server ranks' processing (exec/server_probe.hpp), one per server host of the
  /// configuration in order (seconds per message handled and per byte combined or applied; the
  /// points are not kept); empty when it has none or they do no processing of their own.
  std::vector<exec::ServerProbeFit> servers;
};

/// One configuration, with everything measured and predicted about it.
struct Row {
  const TestbedGroup* group = nullptr;
  TestbedConfig config;
  double batch = 0;  ///< the job's (global for sync, per worker for local SGD)
  std::string platform, platform_before, platform_after;
  ComputeCalibration before, after;
  double predicted_wait_s = 0;  ///< predicted comm on the calibrated network (CM02: a copy)
  EngineRow measured;           ///< the mean over the testbed runs
  std::vector<EngineRow> measured_runs;  ///< each testbed run's
  std::vector<EngineRow> engines;        ///< by testbed_engines()
  EngineRow analytic_before, analytic_after;
  /// On the probed network (validate --probe-network): its platform and the predictions of
  /// the probed_engines() on it, in their order.
  std::string platform_probed;
  std::vector<EngineRow> probed;
  double rounds_loo = kNaN, rounds_group = kNaN, rounds_fit = kNaN;
  /// Rounds to target of the same configuration at each convergence seed (threads on this
  /// machine), NaN where a seed missed the target; empty with one seed.
  std::vector<double> seed_rounds;
  /// The rounds to target the predictions are held to: the mean over the seeds, or the testbed
  /// run's own with one seed (NaN when not reached).
  double rounds_truth = kNaN;
  /// The bottleneck-link baseline of the round's collective (with the copy beside it, both jobs'
  /// flows) on the group's nominal network; null `nominal` when none was computed.
  std::shared_ptr<const model::Platform> nominal;
  model::BottleneckBaseline baseline;
  /// The hypervisor's share of the CPU time during the row's measurement and its compute
  /// calibrations (exec/cpu_steal.hpp); -1 unknown (a replay).
  double steal_fraction = -1;
  /// With --max-steal: the steal of each earlier measurement of the row, set aside for it.
  std::vector<double> steal_set_aside;
};

/// The measured time to target: the testbed run's mean round (its time to target over its rounds)
/// x the rounds truth; NaN when either is missing.
double measured_time_to_target_s(const Row& row) {
  const EngineRow& m = row.measured;
  return m.reached ? m.total_s / m.rounds * row.rounds_truth : kNaN;
}

/// Rounds to target at each seed, null where the target was missed.
json seeds_json(const std::vector<double>& rounds) {
  json out = json::array();
  for (double r : rounds)
    out.push_back(validation::number_or_null(r));
  return out;
}

// --- the matrix -------------------------------------------------------------------------------

/// Testbed runs of a configuration (`runs`, at the top of the matrix or in a configuration).
int parse_runs(const YAML::Node& node, const std::string& file, const std::string& key) {
  const double runs = yu::in_range(node, file, key, 1, 20);
  if (runs != std::floor(runs))
    throw InputError(file, key, "a whole number of testbed runs", fmt::format("{}", runs));
  return static_cast<int>(runs);
}

TestbedConfig parse_config(const YAML::Node& node, const std::string& file,
                           const std::string& where, const std::string& platform_file,
                           const PlatformHosts& platform, int default_runs) {
  if (!node.IsMap())
    throw InputError(file, where, "a map of strategy, collective, hosts, ...", "something else");
  yu::reject_unknown_keys(node,
                          {"strategy", "tau", "batch", "collective", "servers", "hosts", "beside",
                           "contended", "runs", "note"},
                          file, where + ".");
  TestbedConfig c;
  c.runs = default_runs;
  if (!node["strategy"])
    throw InputError(file, where + ".strategy", "sync or local-sgd", "nothing");
  c.strategy = yu::text(node["strategy"], file, where + ".strategy");
  const model::Strategy& strategy = model::strategy(c.strategy, file);
  const bool asynchronous = strategy.asynchronous();
  if (strategy.splits_model() || strategy.is_baseline() ||
      !(asynchronous || strategy.splits_batch() || strategy.counts_rounds()))
    throw InputError(file, where + ".strategy",
                     "a data-parallel strategy (barrier-aligned rounds of K workers: sync, "
                     "local-sgd; or asynchronous parameter servers: async-ps)",
                     c.strategy);
  if (node["tau"]) {
    const double tau = yu::in_range(node["tau"], file, where + ".tau", 1, 4096);
    if (tau != std::floor(tau))
      throw InputError(file, where + ".tau", "a whole number of local steps",
                       fmt::format("{}", tau));
    c.tau = static_cast<int>(tau);
  }
  if (c.tau > 1 && !strategy.counts_rounds())
    throw InputError(file, where + ".tau", "1 (tau is for strategies of local steps)",
                     std::to_string(c.tau));
  if (node["batch"]) {
    c.batch = yu::in_range(node["batch"], file, where + ".batch", 1, 65536);
    if (c.batch != std::floor(c.batch))
      throw InputError(file, where + ".batch", "a whole number of samples",
                       fmt::format("{}", c.batch));
  }
  // Servers: 0 none, > 0 that many, -1 the `servers` key (a server collective or asynchronous
  // parameter servers, whose pulls and pushes are the plan's own: no collective).
  int needed = -1;
  if (asynchronous) {
    if (node["collective"])
      throw InputError(file, where + ".collective",
                       "none for an asynchronous strategy (its pulls and pushes go to the servers)",
                       yu::text(node["collective"], file, where + ".collective"));
  } else {
    if (!node["collective"])
      throw InputError(file, where + ".collective", "a collective algorithm", "nothing");
    c.collective = yu::text(node["collective"], file, where + ".collective");
    needed = model::collective_algorithm(c.collective, file).servers_needed();
  }
  if (node["servers"]) {
    const double s = yu::in_range(node["servers"], file, where + ".servers", 1, 16);
    if (s != std::floor(s))
      throw InputError(file, where + ".servers", "a whole number >= 1", fmt::format("{}", s));
    c.servers = static_cast<int>(s);
  }
  // One worker is a configuration only through servers (its pushes and pulls cross the network).
  const size_t fewest = needed == 0 ? 2 : 1;
  if (!node["hosts"] || !node["hosts"].IsSequence() || node["hosts"].size() < fewest)
    throw InputError(file, where + ".hosts",
                     fmt::format("a list of at least {} worker host(s)", fewest), "fewer");
  std::set<std::string> seen;  // across hosts and beside: one rank per host
  auto worker_hosts = [&](const YAML::Node& list, const std::string& key) {
    std::vector<std::string> names;
    for (const YAML::Node& h : list) {
      const std::string name = yu::text(h, file, key);
      const auto found = std::find_if(platform.begin(), platform.end(),
                                      [&name](const auto& host) { return host.first == name; });
      if (found == platform.end()) throw InputError(file, key, "hosts of " + platform_file, name);
      if (found->second != "worker")
        throw InputError(file, key, "worker hosts (role worker)", name);
      if (!seen.insert(name).second)
        throw InputError(file, key, "each host once (in hosts and beside)", name + " twice");
      names.push_back(name);
    }
    return names;
  };
  c.hosts = worker_hosts(node["hosts"], where + ".hosts");
  if (node["beside"]) {
    if (!node["beside"].IsSequence() || node["beside"].size() != node["hosts"].size())
      throw InputError(
          file, where + ".beside",
          fmt::format("a list of {} worker hosts (a copy of the configuration)", c.hosts.size()),
          node["beside"].IsSequence() ? std::to_string(node["beside"].size()) + " hosts"
                                      : "no list");
    if (needed != 0)
      throw InputError(file, where + ".beside",
                       "a configuration whose collective uses no servers (a copy would need "
                       "servers of its own)",
                       c.collective);
    c.beside = worker_hosts(node["beside"], where + ".beside");
  }
  const int servers = needed == 0 ? 0 : needed > 0 ? needed : c.servers;
  std::vector<std::string> server_hosts;
  for (const auto& [name, role] : platform)
    if (role == "server") server_hosts.push_back(name);
  if (static_cast<int>(server_hosts.size()) < servers)
    throw InputError(
        file, where + ".servers",
        fmt::format("at most the {} server host(s) of {}", server_hosts.size(), platform_file),
        std::to_string(servers));
  c.server_hosts.assign(server_hosts.begin(), server_hosts.begin() + servers);
  if (needed == 0) c.servers = 1;  // unused by the algorithm; the job key's default
  if (node["contended"]) {
    const std::string v = yu::text(node["contended"], file, where + ".contended");
    if (v != "true" && v != "false")
      throw InputError(file, where + ".contended", "true or false", v);
    c.contended = v == "true";
  }
  if (node["runs"]) c.runs = parse_runs(node["runs"], file, where + ".runs");
  if (node["note"]) c.note = yu::text(node["note"], file, where + ".note", 400);
  return c;
}

}  // namespace

TestbedMatrix load_testbed_matrix(const std::string& file, const DescribePlatform& describe) {
  const YAML::Node root = yu::parse(yu::read_file(file, "--testbed"), file);
  if (!root.IsMap()) throw InputError(file, "groups", "a map with a list of groups", "no map");
  yu::reject_unknown_keys(root, {"groups", "runs"}, file);
  const int default_runs = root["runs"] ? parse_runs(root["runs"], file, "runs") : 1;
  const YAML::Node groups = root["groups"];
  if (!groups || !groups.IsSequence() || groups.size() == 0)
    throw InputError(file, "groups", "a list of at least one group", "none");
  TestbedMatrix matrix;
  matrix.file = file;
  std::set<std::string> names;
  for (size_t g = 0; g < groups.size(); ++g) {
    const YAML::Node node = groups[g];
    const std::string where = fmt::format("groups[{}]", g);
    if (!node.IsMap()) throw InputError(file, where, "a map of name, platform, configs", "other");
    yu::reject_unknown_keys(node, {"name", "platform", "scale", "hosts", "configs"}, file,
                            where + ".");
    TestbedGroup group;
    if (!node["name"] || !node["platform"] || !node["configs"])
      throw InputError(file, where, "name, platform and configs", "some missing");
    group.name = yu::text(node["name"], file, where + ".name");
    if (!names.insert(group.name).second)
      throw InputError(file, where + ".name", "a name used once", group.name + " twice");
    const std::string platform = yu::text(node["platform"], file, where + ".platform", 4096);
    const fs::path resolved = fs::path(platform).is_absolute()
                                  ? fs::path(platform)
                                  : fs::path(file).parent_path() / platform;
    if (!fs::is_regular_file(resolved))
      throw InputError(file, where + ".platform", "a platform file (relative to the matrix)",
                       platform);
    group.platform = resolved.lexically_normal().string();
    if (node["scale"]) group.scale = yu::in_range(node["scale"], file, where + ".scale", 1, 1e4);
    PlatformHosts loaded = describe(group.platform);
    if (node["hosts"]) {
      // The testbed holds only these hosts: the configurations may use no other.
      if (!node["hosts"].IsSequence() || node["hosts"].size() < 2)
        throw InputError(file, where + ".hosts", "a list of at least 2 hosts of the platform",
                         "fewer");
      PlatformHosts kept;
      for (const YAML::Node& h : node["hosts"]) {
        const std::string name = yu::text(h, file, where + ".hosts");
        const auto found = std::find_if(loaded.begin(), loaded.end(),
                                        [&name](const auto& host) { return host.first == name; });
        if (found == loaded.end())
          throw InputError(file, where + ".hosts", "hosts of " + group.platform, name);
        group.hosts.push_back(name);
        kept.push_back(*found);
      }
      // In the platform's order, as the servers are chosen.
      PlatformHosts ordered;
      for (const auto& host : loaded)
        if (std::find(kept.begin(), kept.end(), host) != kept.end()) ordered.push_back(host);
      loaded = ordered;
    }
    const YAML::Node configs = node["configs"];
    if (!configs.IsSequence() || configs.size() == 0)
      throw InputError(file, where + ".configs", "a list of at least one configuration", "none");
    std::set<std::string> config_names;
    for (size_t i = 0; i < configs.size(); ++i) {
      TestbedConfig c = parse_config(
          configs[i], file, fmt::format("{}.configs[{}]", where, i),
          group.hosts.empty() ? group.platform : group.platform + " in the group's hosts", loaded,
          default_runs);
      c.name = fmt::format(
          "{}: {}{}{}{} K={}{}{}", group.name, c.strategy,
          model::strategy(c.strategy).counts_rounds() ? fmt::format(" tau={}", c.tau) : "",
          c.collective.empty() ? "" : " " + c.collective,
          c.server_hosts.empty() ? "" : fmt::format(" s={}", c.server_hosts.size()), c.hosts.size(),
          c.batch > 0 ? fmt::format(" b={:g}", c.batch) : "", c.beside.empty() ? "" : " + a copy");
      if (!config_names.insert(joined(c.hosts) + " " + c.name).second)
        throw InputError(file, fmt::format("{}.configs[{}]", where, i), "each configuration once",
                         c.name + " twice");
      group.configs.push_back(c);
      if (!c.beside.empty()) {
        // The copy, as a row of its own: the same configuration with the two host lists swapped.
        TestbedConfig copy = c;
        std::swap(copy.hosts, copy.beside);
        copy.is_copy = true;
        copy.name = c.name.substr(0, c.name.size() - std::string(" + a copy").size()) + " (copy)";
        group.configs.push_back(copy);
      }
    }
    matrix.groups.push_back(group);
  }
  return matrix;
}

namespace {

// --- measuring --------------------------------------------------------------------------------

/// Brings a testbed up for a group and down again when it goes out of scope (also on a throw).
class LiveTestbed {
 public:
  LiveTestbed(const TestbedGroup& group, const std::string& prefix, const std::string& stem)
      : prefix_(prefix) {
    // In a child: SimGrid loads one platform per process, and each group has its own.
    child::Task up{
        {"testbed", "up", group.platform, "--prefix", prefix}, stem + ".out", stem + ".err"};
    if (!group.hosts.empty()) {
      up.args.push_back("--hosts");
      up.args.push_back(joined(group.hosts));
    }
    if (group.scale > 0) {
      up.args.push_back("--scale");
      up.args.push_back(fmt::format("{:.17g}", group.scale));
    }
    validation::run_children({up}, 1, "");
    state_ = tb::require_up(prefix);
  }
  ~LiveTestbed() {
    try {
      std::ostringstream sink;
      testbed_down(prefix_, false, sink);
    } catch (const std::exception& e) {
      std::cerr << "validate: testbed down " << prefix_ << ": " << e.what() << "\n";
    }
  }
  LiveTestbed(const LiveTestbed&) = delete;
  LiveTestbed& operator=(const LiveTestbed&) = delete;
  const tb::State& state() const { return state_; }

 private:
  std::string prefix_;
  tb::State state_;
};

/// C(b) through the measured steps: the slope of their least-squares line (the per-sample cost),
/// moved to pass through the median at the configuration's per-worker batch.
ComputeCalibration compute_from(const std::vector<exec::StepPoint>& steps,
                                double per_worker_batch) {
  const int b = std::max(1, static_cast<int>(std::lround(per_worker_batch)));
  ComputeCalibration c;
  c.steps = steps;
  c.per_worker_batch = per_worker_batch;
  std::vector<double> x, y;
  for (const exec::StepPoint& p : c.steps) {
    x.push_back(p.batch);
    y.push_back(p.seconds);
    if (p.batch == b) c.step_s = p.seconds;
  }
  const model::LinearFit fit = model::fit_line(x, y, "validate: compute calibration");
  c.per_sample_s = fit.slope > 0 ? fit.slope : c.step_s / b;
  c.intercept_s = std::max(0.0, c.step_s - b * c.per_sample_s);
  return c;
}

ComputeCalibration mean_of(const ComputeCalibration& x, const ComputeCalibration& y) {
  ComputeCalibration m = x;
  for (size_t i = 0; i < m.steps.size() && i < y.steps.size(); ++i)
    m.steps[i].seconds = 0.5 * (x.steps[i].seconds + y.steps[i].seconds);
  m.step_s = 0.5 * (x.step_s + y.step_s);
  m.per_sample_s = 0.5 * (x.per_sample_s + y.per_sample_s);
  m.intercept_s = std::max(0.0, m.step_s - x.per_worker_batch * m.per_sample_s);
  for (size_t i = 0; i < m.servers.size() && i < y.servers.size(); ++i) {
    m.servers[i].seconds_per_message =
        0.5 * (x.servers[i].seconds_per_message + y.servers[i].seconds_per_message);
    m.servers[i].seconds_per_byte =
        0.5 * (x.servers[i].seconds_per_byte + y.servers[i].seconds_per_byte);
  }
  return m;
}

/// A server host's processing as calibrated: its speed as on the testbed platform, and its
/// seconds per message and per byte as work at that speed (model/ir/server_work.hpp's props),
/// less the optimizer's flop per byte that the engines charge an asynchronous apply already
/// (exec::server_work_at; 0 for a sync combine).
tb::HostCompute server_compute(const tb::Spec& spec, const std::string& host,
                               const exec::ServerProbeFit& fit, double optimizer_flop_per_byte,
                               const std::string& which) {
  const auto it = std::find_if(spec.hosts.begin(), spec.hosts.end(),
                               [&](const tb::SpecHost& h) { return h.name == host; });
  tb::HostCompute out;
  out.speed_flops = it != spec.hosts.end() ? it->speed_flops : 0;
  const exec::ServerWork work = exec::server_work_at(fit, out.speed_flops, optimizer_flop_per_byte);
  out.props = {
      {"server_flop_per_message", fmt::format("{:.9g}", work.flop_per_message)},
      {"server_flop_per_byte", fmt::format("{:.9g}", work.flop_per_byte)},
      {"server_processing_from",
       fmt::format("{}: {:.4g} s per message + {:.4g} s per byte, timed on the server's rank "
                   "(exec/server_probe.hpp) at this speed{}",
                   which, fit.seconds_per_message, fit.seconds_per_byte,
                   optimizer_flop_per_byte > 0
                       ? fmt::format(", less {:.4g} flop per byte of the optimizer's apply that "
                                     "the engines charge already",
                                     optimizer_flop_per_byte)
                       : std::string())}};
  return out;
}

/// One host's compute as calibrated: the speed that makes the workload's step take C(b), with
/// the calibration's terms in props.
tb::HostCompute host_compute(const ComputeCalibration& compute, const model::Workload& workload,
                             size_t workers) {
  model::Calibration cal;
  cal.workload = workload.name;
  cal.flop_per_sample = workload.flop_per_sample;
  cal.update_flop = workload.parameters * workload.update_flop_per_parameter;
  cal.step_intercept_s = compute.intercept_s;
  cal.per_sample_s = compute.per_sample_s;
  tb::HostCompute host;
  host.speed_flops = cal.speed_flops();
  host.props = {{"step_overhead_s", fmt::format("{:.9g}", cal.step_overhead_s())},
                {"step_intercept_s", fmt::format("{:.9g}", cal.step_intercept_s)},
                {"per_sample_s", fmt::format("{:.9g}", cal.per_sample_s)},
                {"compute_calibrated_with", fmt::format("{} workers stepping at once", workers)}};
  return host;
}

/// Where the probed platforms' hosts come from.
constexpr const char* kProbedHostsFrom =
    "the testbed's host list (names, roles, nodes: who the hosts are, as the matrix names them; "
    "their speeds and props as on the calibrated platform); the links and routes were probed";

/// The calibrated network with the configuration's workers' compute, and, when a copy of it runs
/// beside it, the copy's workers' compute from the copy's own calibration.
std::string write_platform(const tb::Spec& spec, tb::NetworkCalibration network,
                           const TestbedConfig& config, const ComputeCalibration& compute,
                           const ComputeCalibration* beside_compute,
                           const model::Workload& workload, const std::string& path,
                           const std::string& which, const tb::ProbedTopology* probed = nullptr) {
  for (const std::string& h : config.hosts)
    network.compute[h] = host_compute(compute, workload, config.hosts.size());
  // An asynchronous apply's optimizer arithmetic, per byte (the engines charge it every apply).
  const double optimizer_flop_per_byte =
      server_processing_of(config) == "apply" && workload.gradient_bytes() > 0
          ? model::server_apply_flop(workload) / workload.gradient_bytes()
          : 0;
  for (size_t i = 0; i < compute.servers.size() && i < config.server_hosts.size(); ++i)
    network.compute[config.server_hosts[i]] = server_compute(
        spec, config.server_hosts[i], compute.servers[i], optimizer_flop_per_byte, which);
  if (beside_compute != nullptr)
    for (const std::string& h : config.beside)
      network.compute[h] = host_compute(*beside_compute, workload, config.beside.size());
  network.compute_method = fmt::format(
      "{} ({}): {} ranks of this machine stepping at once (forward, backward, update), median "
      "wall-clock seconds at per-worker batches {}; C(b) = {:.6g} s + b x {:.6g} s through the "
      "median at b = {:g}{}",
      which, workload.name, config.hosts.size(),
      [&] {
        std::string b;
        for (const exec::StepPoint& p : compute.steps)
          b += (b.empty() ? "" : ",") + std::to_string(p.batch);
        return b;
      }(),
      compute.intercept_s, compute.per_sample_s, compute.per_worker_batch,
      beside_compute != nullptr
          ? fmt::format("; the copy's hosts ({}) from the copy's calibration, taken at the same "
                        "time: C(b) = {:.6g} s + b x {:.6g} s",
                        joined(config.beside), beside_compute->intercept_s,
                        beside_compute->per_sample_s)
          : "");
  write_text(path, probed == nullptr
                       ? tb::calibrated_platform_xml(spec, network)
                       : tb::probed_platform_xml(*probed, spec.hosts, network, kProbedHostsFrom));
  return path;
}

// --- predicting -------------------------------------------------------------------------------

/// The job keys of one configuration: the job flags given to validate, then what the matrix says.
std::map<std::string, std::string> config_keys(const TestbedValidateRequest& a, const Row& row,
                                               const std::string& platform) {
  std::map<std::string, std::string> keys = a.overrides;
  keys["platform"] = platform;
  keys["strategies"] = row.config.strategy;
  keys["workers"] = std::to_string(row.config.hosts.size());
  keys["hosts"] = joined(row.config.hosts);
  keys["tau"] = std::to_string(row.config.tau);
  if (!row.config.collective.empty()) keys["collective"] = row.config.collective;
  keys["servers"] = std::to_string(row.config.servers);
  keys["timing"] = "concurrent";
  keys["batch"] = fmt::format("{:g}", row.batch);
  return keys;
}

child::Task engine_child(const TestbedValidateRequest& a, const Row& row, const Predictor& e,
                         const std::string& platform, const std::string& stem) {
  std::map<std::string, std::string> keys = config_keys(a, row, platform);
  // The copy beside it: simgrid runs it, predict leaves it out (and says so in its context).
  if (!row.config.beside.empty()) keys["beside_hosts"] = joined(row.config.beside);
  if (!e.network_model.empty()) keys["network_model"] = e.network_model;
  // An engine that takes a network model is the simulator: it runs a few rounds of the plan.
  // A synchronous job alone runs its rounds with the links' latencies jittered by the
  // calibration's resolution, the mean over the schedules a near-tie picks
  // (sim/latency_jitter.hpp).
  if (!e.engine->capabilities().network_models.empty()) {
    if (!model::strategy(row.config.strategy).asynchronous() && row.config.beside.empty()) {
      keys["latency_jitter"] = fmt::format("{:g}", kTestbedLatencyJitter);
      keys["sim_rounds"] = std::to_string(kTestbedJitterRounds);
    } else {
      keys["sim_rounds"] = validation::simulated_rounds(row.config.strategy);
    }
  }
  return engine_task(*e.engine, a.job_file, keys, stem + ".json", stem + ".err");
}

/// The measure of one configuration, as MPI ranks across the live testbed.
child::Task measure_child(const TestbedValidateRequest& a, const Row& row,
                          const std::string& prefix, const std::string& stem) {
  std::map<std::string, std::string> keys = config_keys(a, row, row.group->platform);
  keys["communicator"] = "mpi";
  child::Task inner = engine_task(engine("exec"), a.job_file, keys, stem + ".json", stem + ".err");
  std::vector<std::string> ranks = row.config.hosts;
  ranks.insert(ranks.end(), row.config.server_hosts.begin(), row.config.server_hosts.end());
  child::Task task;
  task.args = {"testbed", "run",         "--prefix", prefix,
               "--hosts", joined(ranks), "--",       child::self_executable()};
  task.args.insert(task.args.end(), inner.args.begin(), inner.args.end());
  task.out_path = inner.out_path;
  task.err_path = inner.err_path;
  return task;
}

/// The compute calibration of one configuration: its ranks (workers and servers) on their hosts,
/// the workers stepping in rounds, every rank waiting `wait_s` between them.
child::Task compute_probe_child(const TestbedValidateRequest& a, const Row& row,
                                const std::string& prefix, const std::vector<int>& batches,
                                int steps_per_round, double wait_s, const std::string& out) {
  std::vector<std::string> ranks = row.config.hosts;
  ranks.insert(ranks.end(), row.config.server_hosts.begin(), row.config.server_hosts.end());
  child::Task task;
  task.args = {"testbed", "run",           "--prefix", prefix,
               "--hosts", joined(ranks),   "--",       child::self_executable(),
               "testbed", "compute-probe", a.job_file};
  for (const auto& [key, value] : a.overrides)
    task.args.push_back("--" + key + "=" + value);
  std::string b;
  for (int v : batches)
    b += (b.empty() ? "" : ",") + std::to_string(v);
  const std::vector<std::string> rest = {"--computing-ranks",
                                         std::to_string(row.config.hosts.size()),
                                         "--batches",
                                         b,
                                         "--steps-per-round",
                                         std::to_string(steps_per_round),
                                         "--probe-rounds",
                                         std::to_string(a.calibration_rounds),
                                         "--wait",
                                         fmt::format("{:.6f}", wait_s),
                                         "--probe-out",
                                         out};
  task.args.insert(task.args.end(), rest.begin(), rest.end());
  const std::string processing = server_processing_of(row.config);
  if (!processing.empty() && !row.config.server_hosts.empty())
    task.args.insert(task.args.end(), {"--server-processing", processing});
  task.out_path = out + ".out";
  task.err_path = out + ".err";
  return task;
}

std::string scatter_script(double lo, double hi) {
  std::string body = fmt::format(
      "set title 'tauplan validate --testbed: predicted against measured (MPI ranks across the "
      "emulated network)'\n"
      "set xlabel 'measured (s)'\nset ylabel 'predicted (s)'\n"
      "set logscale xy\nset xrange [{0}:{1}]\nset yrange [{0}:{1}]\n"
      "set key top left\nset grid\nset datafile separator ','\n"
      "plot x title 'y = x' with lines lc rgb '#888888'",
      lo, hi);
  // Each engine's round, the baseline's, and the contention engine's time to target.
  std::size_t series = 0;
  for (const Predictor& e : testbed_engines())
    body += fmt::format(
        ", \\\n  'testbed-validation.csv' using 'round_measured_s':'round_{}_s' title 'round, "
        "{}' with points {}",
        e.label, display_name(e), point_style(series++));
  body += fmt::format(
      ", \\\n  '' using 'round_measured_s':'round_baseline_s' title 'round, bottleneck "
      "baseline' with points {}",
      point_style(series++));
  const Predictor& contention = testbed_engines()[contention_engine()];
  body += fmt::format(
      ", \\\n  '' using 'time_measured_s':'time_group_out_{}_s' title 'time to target, {} "
      "(leave-group-out)' with points {}",
      contention.label, display_name(contention), point_style(series));
  return two_terminals("validate", "scatter", "900,700", body);
}

/// The output of `tauplan testbed describe ARGS...` in a child (SimGrid loads one platform per
/// process).
json describe_in_child_json(const std::vector<std::string>& args) {
  const fs::path dir = fs::temp_directory_path();
  const std::string stem = (dir / fmt::format("tauplan-describe-{}", getpid())).string();
  child::Task task{{"testbed", "describe"}, stem + ".json", stem + ".err"};
  task.args.insert(task.args.end(), args.begin(), args.end());
  std::string out;
  try {
    out = validation::run_children({task}, 1, "")[0];
  } catch (...) {
    fs::remove(stem + ".json");
    fs::remove(stem + ".err");
    throw;
  }
  fs::remove(stem + ".json");
  fs::remove(stem + ".err");
  return json::parse(out);
}

PlatformHosts describe_in_child(const std::string& platform) {
  PlatformHosts hosts;
  const json doc = describe_in_child_json({platform});
  for (const json& h : doc.at("hosts"))
    hosts.emplace_back(h.at("name").get<std::string>(), h.at("role").get<std::string>());
  return hosts;
}

/// The testbed a group brings up, as `testbed up` would make it, without bringing it up.
tb::Spec spec_in_child(const TestbedGroup& group, const std::string& prefix) {
  std::vector<std::string> args = {group.platform, "--spec", "--prefix", prefix};
  if (!group.hosts.empty()) args.insert(args.end(), {"--hosts", joined(group.hosts)});
  if (group.scale > 0) args.insert(args.end(), {"--scale", fmt::format("{:.17g}", group.scale)});
  return tb::spec_from_json(describe_in_child_json(args).at("spec"));
}

// --- the run, step by step --------------------------------------------------------------------

/// What the run works from, checked: the matrix, the job, its workload and its batch.
struct Inputs {
  TestbedMatrix matrix;
  model::Job job;
  model::Workload workload;
  double batch = 0;  ///< the job's (a row's unless the matrix gives the row its own)
};

/// Rejects the job flags validate --testbed sets itself from the matrix.
void reject_keys_set_by_validate(const TestbedValidateRequest& a) {
  static const std::set<std::string> set_by_validate = {
      "platform",   "strategies",  "workers",       "hosts",        "tau",
      "collective", "servers",     "timing",        "communicator", "network_model",
      "sim_rounds", "single_host", "latency_jitter"};
  for (const auto& [key, value] : a.overrides)
    if (set_by_validate.count(key))
      throw InputError(
          "command line", "--" + key,
          "no value (validate --testbed takes it from the matrix " + a.matrix_file + ")", value);
}

/// Reads and checks the matrix, the flags and the job (InputError), then the rights a testbed
/// needs.
Inputs checked_inputs(const TestbedValidateRequest& a) {
  TestbedMatrix matrix = load_testbed_matrix(a.matrix_file, describe_in_child);
  reject_keys_set_by_validate(a);
  model::Job job = model::load_job(a.job_file, all_job_keys(), a.overrides);
  const exec::ExecSettings settings = exec::exec_settings(job);
  if (settings.device != exec::Device::Cpu)
    throw InputError(job.file, "device", "cpu (the testbed's hosts are this machine's cores)",
                     "cuda");
  if (settings.train.combine != exec::CombineRule::Mean)
    throw InputError(job.file, "combine", "mean", exec::to_string(settings.train.combine));
  if (!(settings.train.target_accuracy > 0))
    throw InputError(job.file, "target_accuracy", "a target (time to target is validated)");
  if (a.convergence_seeds < 1 || a.convergence_seeds > 100)
    throw InputError("command line", "--convergence-seeds", "a whole number from 1 to 100",
                     std::to_string(a.convergence_seeds));
  if (a.calibration_rounds < 1 || a.calibration_rounds > 1000)
    throw InputError("command line", "--calibration-rounds", "a whole number from 1 to 1000",
                     std::to_string(a.calibration_rounds));
  model::Workload workload = load_job_workload(job);
  const exec::Dataset data = exec::load_dataset(settings.data);
  const exec::MlpShape shape = exec::mlp_shape(settings.hidden, data);
  if (std::fabs(workload.parameters - static_cast<double>(shape.parameters())) >
      0.01 * workload.parameters)
    throw InputError(job.file, "hidden",
                     fmt::format("the MLP of workload {} ({:g} parameters): its flop per sample "
                                 "turns the measured step into a speed",
                                 workload.name, workload.parameters),
                     fmt::format("an MLP of {} parameters", shape.parameters()));
  const double batch = static_cast<double>(job.integer("batch"));
  if (!a.replay.empty()) {
    // Replayed: measurements from that folder, predictions into another.
    if (!fs::is_regular_file(fs::path(a.replay) / "testbed-validation.json"))
      throw InputError("command line", "--replay",
                       "the --out folder of an earlier validate --testbed (its "
                       "testbed-validation.json, runs/ and platforms/)",
                       a.replay);
    if (fs::weakly_canonical(a.replay) == fs::weakly_canonical(a.out))
      throw InputError("command line", "--out", "a folder other than --replay's", a.out);
  } else {
    require_testbed_rights();
  }
  return {std::move(matrix), std::move(job), std::move(workload), batch};
}

/// The shared state of one run: the request, its checked inputs, the rows and what was measured.
struct Validation {
  Validation(const TestbedValidateRequest& request, Inputs inputs)
      : a(request), in(std::move(inputs)), out_dir(request.out) {}
  Validation(const Validation&) = delete;  // the rows point into in.matrix
  Validation& operator=(const Validation&) = delete;

  const TestbedValidateRequest& a;
  const Inputs in;
  const fs::path out_dir;
  std::vector<Row> rows;          ///< one per configuration, the matrix's order
  json networks = json::array();  ///< each group's calibrated network
  /// Each group's probed network (validate --probe-network), by group name.
  std::map<std::string, tb::ProbedTopology> probed;
  std::vector<std::vector<std::string>> measured;  ///< per row, each testbed run's output
  json replayed_results;  ///< validate --replay: the earlier run's results, in its row order
};

/// The stem of row i's files in DIR/runs.
std::string run_stem(const Validation& v, size_t i) {
  return (v.out_dir / "runs" / fmt::format("{:02}", i)).string();
}

/// Children run at once when predicting and training off the testbed.
int parallel_jobs(const TestbedValidateRequest& a) {
  return a.jobs > 0 ? a.jobs : std::max(1u, std::thread::hardware_concurrency());
}

/// One row per configuration of the matrix, in its order, each with its batch.
std::vector<Row> rows_of(const TestbedMatrix& matrix, double batch) {
  std::vector<Row> rows;
  for (const TestbedGroup& group : matrix.groups)
    for (const TestbedConfig& config : group.configs) {
      Row row;
      row.group = &group;
      row.config = config;
      row.batch = config.batch > 0 ? config.batch : batch;
      rows.push_back(row);
    }
  return rows;
}

/// The round's communication as the engines predict it on the calibrated network: how long the
/// ranks wait between compute phases in the compute calibration (with a copy beside it, as
/// simgrid CM02 predicts it: the analytic engine leaves the copy out), within [0, 5] s.
double predicted_wait_s(const Validation& v, const std::vector<size_t>& together,
                        const std::string& network_only) {
  const size_t first = together.front();
  const Row& row = v.rows[first];
  const Predictor& wait_engine =
      testbed_engines()[together.size() > 1 ? contention_engine() : closed_form_engine()];
  double wait_s =
      validation::parse_row(
          validation::run_children(
              {engine_child(v.a, row, wait_engine, network_only, run_stem(v, first) + "-wait")}, 1,
              "")[0],
          "predict (wait) " + row.config.name)
          .comm_s;
  if (!(wait_s >= 0)) wait_s = 0;
  return std::min(wait_s, 5.0);
}

/// A row's batch per worker (sync splits the global batch over its K workers).
double per_worker_batch(const Row& row) {
  const bool splits = model::strategy(row.config.strategy).splits_batch();
  return splits ? row.batch / static_cast<double>(row.config.hosts.size()) : row.batch;
}

/// A compute probe's output (`testbed compute-probe --probe-out`): its steps fitted at the row's
/// per-worker batch, and its servers' processing when it timed them.
ComputeCalibration read_compute(const std::string& path, double per_worker) {
  const json doc = json::parse(read_text(path));
  std::vector<exec::StepPoint> steps;
  for (const json& p : doc.at("steps"))
    steps.push_back({p.at("batch").get<int>(), p.at("seconds").get<double>()});
  ComputeCalibration c = compute_from(steps, per_worker);
  if (doc.contains("servers"))
    for (const json& server : doc.at("servers")) {
      exec::ServerProbeFit fit;
      fit.seconds_per_message = server.at("seconds_per_message").get<double>();
      fit.seconds_per_byte = server.at("seconds_per_byte").get<double>();
      c.servers.push_back(fit);
    }
  return c;
}

/// Calibrates compute for the configurations of `together` at once (their ranks load the same
/// cores) at per-worker batches b and 2b; `which` (before, after) names the files.
std::vector<ComputeCalibration> probe_compute(const Validation& v,
                                              const std::vector<size_t>& together, double wait_s,
                                              const std::string& which) {
  const Row& row = v.rows[together.front()];
  const double per_worker = per_worker_batch(row);
  const int steps_per_round =
      model::strategy(row.config.strategy).counts_rounds() ? row.config.tau : 1;
  const int b = std::max(1, static_cast<int>(std::lround(per_worker)));
  std::vector<child::Task> tasks;
  for (size_t i : together)
    tasks.push_back(compute_probe_child(v.a, v.rows[i], v.a.prefix, {b, 2 * b}, steps_per_round,
                                        wait_s, run_stem(v, i) + "-compute-" + which + ".json"));
  validation::run_children(tasks, static_cast<int>(tasks.size()), "");
  std::vector<ComputeCalibration> out;
  for (size_t i : together)
    out.push_back(read_compute(run_stem(v, i) + "-compute-" + which + ".json", per_worker));
  return out;
}

/// The configuration's testbed runs (with its copy, both at once), each run's output kept.
void measure_runs(Validation& v, const std::vector<size_t>& together) {
  const int runs = v.rows[together.front()].config.runs;
  for (int run = 0; run < runs; ++run) {
    // Run 1 writes NN-measure.json, run r > 1 NN-measure-run<r>.json. With a copy, odd runs
    // launch the copy first: which job a run slows more depends on their start.
    std::vector<size_t> order = together;
    if (run % 2 == 1) std::reverse(order.begin(), order.end());
    std::vector<child::Task> measures;
    for (size_t i : order)
      measures.push_back(
          measure_child(v.a, v.rows[i], v.a.prefix,
                        run_stem(v, i) + "-measure" +
                            (run == 0 ? std::string() : fmt::format("-run{}", run + 1))));
    if (runs > 1) std::cerr << fmt::format("validate:   testbed run {}/{}\n", run + 1, runs);
    const std::vector<std::string> outputs =
        validation::run_children(measures, static_cast<int>(measures.size()), "");
    for (size_t j = 0; j < order.size(); ++j)
      v.measured[order[j]].push_back(outputs[j]);
  }
}

/// Writes the platforms of the rows of `together`: the calibrated network with the workers'
/// compute from the mean of the two calibrations, and from each alone.
void write_row_platforms(Validation& v, const tb::Spec& spec, const tb::NetworkCalibration& network,
                         const std::vector<size_t>& together) {
  for (size_t j = 0; j < together.size(); ++j) {
    Row& r = v.rows[together[j]];
    const Row* twin = together.size() > 1 ? &v.rows[together[1 - j]] : nullptr;
    const std::string base = (v.out_dir / "platforms" / fmt::format("{:02}", together[j])).string();
    const ComputeCalibration mean = mean_of(r.before, r.after);
    const ComputeCalibration twin_mean =
        twin != nullptr ? mean_of(twin->before, twin->after) : ComputeCalibration();
    r.platform = write_platform(
        spec, network, r.config, mean, twin != nullptr ? &twin_mean : nullptr, v.in.workload,
        base + ".xml", "mean of the calibrations before and after the measurement");
    r.platform_before =
        write_platform(spec, network, r.config, r.before, twin != nullptr ? &twin->before : nullptr,
                       v.in.workload, base + "-before.xml", "calibration before the measurement");
    r.platform_after =
        write_platform(spec, network, r.config, r.after, twin != nullptr ? &twin->after : nullptr,
                       v.in.workload, base + "-after.xml", "calibration after the measurement");
    const auto probed = v.probed.find(r.group->name);
    if (probed != v.probed.end())
      r.platform_probed = write_platform(
          spec, network, r.config, mean, twin != nullptr ? &twin_mean : nullptr, v.in.workload,
          base + "-probed.xml", "mean of the calibrations before and after the measurement",
          &probed->second);
  }
}

/// Measures row `next` (with the copy beside it, the next row, at the same time): the wait,
/// compute calibrated before, the testbed runs, compute calibrated after, the row's platforms.
void measure_configuration(Validation& v, const tb::Spec& spec,
                           const tb::NetworkCalibration& network, const std::string& network_only,
                           size_t next) {
  std::vector<size_t> together = {next};
  if (!v.rows[next].config.beside.empty()) together.push_back(next + 1);
  const Row& row = v.rows[next];
  std::cerr << fmt::format("validate: [{}/{}] {} on {}{}\n", next + 1, v.rows.size(),
                           row.config.name, joined(row.config.hosts),
                           together.size() > 1 ? " and " + joined(row.config.beside) : "");
  const double wait_s = predicted_wait_s(v, together, network_only);
  for (int attempt = 1;; ++attempt) {
    const exec::StealMeter steal;
    for (size_t i : together)
      v.measured[i].clear();  // an attempt set aside leaves nothing behind
    const std::vector<ComputeCalibration> before = probe_compute(v, together, wait_s, "before");
    measure_runs(v, together);
    const std::vector<ComputeCalibration> after = probe_compute(v, together, wait_s, "after");
    const double stolen = steal.fraction();
    for (size_t j = 0; j < together.size(); ++j) {
      Row& r = v.rows[together[j]];
      r.predicted_wait_s = wait_s;
      r.before = before[j];
      r.after = after[j];
      r.steal_fraction = stolen;
    }
    std::cerr << fmt::format("validate:   steal {} of the CPU time during this row{}\n",
                             exec::describe_steal(stolen),
                             stolen > exec::kStealWarningFraction
                                 ? " (high: the emulated links ran slower than shaped at times)"
                                 : "");
    if (!(v.a.max_steal >= 0 && stolen > v.a.max_steal) || attempt == kStealAttempts) break;
    std::cerr << fmt::format(
        "validate:   above --max-steal {}: measuring the row again ({} of {})\n",
        exec::describe_steal(v.a.max_steal), attempt + 1, kStealAttempts);
    for (size_t i : together)
      v.rows[i].steal_set_aside.push_back(stolen);
  }
  write_row_platforms(v, spec, network, together);
}

/// Routes between a testbed's hosts, from its Spec (every ordered pair of distinct hosts).
class SpecRoutes : public model::RouteOracle {
 public:
  SpecRoutes(const tb::Spec& spec, const std::vector<model::Link>& links) {
    for (const tb::SpecRoute& r : spec.routes) {
      model::Route& route = routes_[{r.src, r.dst}];
      route.links = r.links;
      model::total_route(route, links);
    }
  }
  model::Route route(int src, int dst) const override {
    const auto found = routes_.find({src, dst});
    if (found != routes_.end()) return found->second;
    model::Route none;  // a host to itself
    model::total_route(none, {});
    return none;
  }

 private:
  std::map<std::pair<int, int>, model::Route> routes_;
};

/// The testbed's network as the baseline sees it: its hosts in rank order, its links at the numbers
/// the testbed shapes them to (the platform file's at the testbed's scale: bandwidth / scale,
/// latency x scale; nominal, not calibrated) and its routes.
model::Platform nominal_platform(const tb::Spec& spec) {
  model::Platform p;
  p.source_file = spec.platform_file;
  p.source_hash = spec.platform_hash;
  for (const tb::SpecHost& h : spec.hosts) {
    model::Host host;
    host.name = h.name;
    host.node = h.node;
    host.speed_flops = h.speed_flops;
    host.role = h.role == "server" ? model::HostRole::Server : model::HostRole::Worker;
    p.hosts.push_back(host);
  }
  for (const tb::SpecLink& l : spec.links)
    p.links.push_back({l.name, l.bandwidth_Bps, l.latency_s,
                       l.sharing == tb::Sharing::FatPipe  ? model::LinkSharing::FatPipe
                       : l.sharing == tb::Sharing::Shared ? model::LinkSharing::Shared
                                                          : model::LinkSharing::SplitDuplex});
  p.routes = std::make_shared<SpecRoutes>(spec, p.links);
  return p;
}

/// The baseline of rows [first, first + count) on the group's nominal network: each row's
/// collective of the workload's gradient bytes over its workers (and servers), with the copy beside
/// it (its hosts' call at once) when it has one.
void row_baselines(Validation& v, const tb::Spec& spec, size_t first, size_t count) {
  const auto nominal = std::make_shared<const model::Platform>(nominal_platform(spec));
  auto indices = [&spec](const std::vector<std::string>& names) {
    std::vector<int> out;
    for (const std::string& name : names)
      out.push_back(spec.find_host(name));
    return out;
  };
  for (size_t i = first; i < first + count; ++i) {
    Row& row = v.rows[i];
    // An asynchronous row has no collective round: no baseline (left out of its summary).
    if (row.config.collective.empty()) continue;
    model::CollectiveCall call;
    call.payload = model::strategy(row.config.strategy).counts_rounds()
                       ? model::CollectivePayload::Parameters
                       : model::CollectivePayload::Gradients;
    call.bytes = v.in.workload.gradient_bytes();
    call.hosts = indices(row.config.hosts);
    call.servers = indices(row.config.server_hosts);
    std::vector<model::CollectiveCall> jobs = {call};
    if (!row.config.beside.empty()) {
      jobs.push_back(call);
      jobs.back().hosts = indices(row.config.beside);
    }
    const bool all_found = std::all_of(jobs.begin(), jobs.end(), [](const auto& job) {
      return std::count(job.hosts.begin(), job.hosts.end(), -1) +
                 std::count(job.servers.begin(), job.servers.end(), -1) ==
             0;
    });
    if (!all_found) continue;  // not on the testbed: no baseline (the measurement fails anyway)
    row.nominal = nominal;
    row.baseline = validation::collective_baseline(row.config.collective, jobs, *nominal);
  }
}

/// A group's network calibration (`testbed calibrate --mpi`). One that the machine spoiled
/// (MeasurementError: under heavy steal a route's messages or transfers can come out not growing
/// with their size, or its smallest messages no slower than their bytes), or with --max-steal one
/// taken under more steal than that, is taken again, up to kStealAttempts in all; each is logged
/// and why it was set aside kept in `failed` (the JSON's networks[].failed_calibrations). The last
/// attempt is kept whatever its steal.
tb::NetworkCalibration calibrate_group_network(const TestbedValidateRequest& a,
                                               const tb::State& state,
                                               std::vector<std::string>& failed) {
  const double max_steal = a.max_steal;
  TestbedCalibrateRequest calibrate;
  calibrate.prefix = a.prefix;
  calibrate.mpi = true;
  calibrate.queued_window = a.queued_window;
  for (int attempt = 1;; ++attempt) {
    std::string why;
    try {
      tb::NetworkCalibration network = measure_testbed(calibrate, state);
      if (!(max_steal >= 0 && network.steal_fraction > max_steal) || attempt == kStealAttempts)
        return network;
      why = "steal " + exec::describe_steal(network.steal_fraction) + " above --max-steal " +
            exec::describe_steal(max_steal);
    } catch (const MeasurementError& e) {
      if (attempt == kStealAttempts) throw;
      why = e.what();
    }
    failed.push_back(why);
    std::cerr << fmt::format(
        "validate: the network calibration is set aside ({}); measuring "
        "again ({} of {})\n",
        why, attempt + 1, kStealAttempts);
  }
}

/// Brings a group's testbed up, calibrates its network and measures its configurations (`next`:
/// the group's first row, moved past its last); the testbed comes down on the way out.
void measure_group(Validation& v, const TestbedGroup& group, size_t& next) {
  std::cerr << "validate: testbed " << v.a.prefix << " up on " << group.platform << "\n";
  const LiveTestbed testbed(group, v.a.prefix,
                            (v.out_dir / "runs" / ("testbed-up-" + group.name)).string());
  std::vector<std::string> failed;
  const tb::NetworkCalibration network = calibrate_group_network(v.a, testbed.state(), failed);
  std::cerr << fmt::format(
      "validate: network calibrated in {:.0f} s, MPI latency factor {:.4g}, "
      "steal {}\n",
      network.seconds, network.mpi_latency_factor, exec::describe_steal(network.steal_fraction));
  for (const std::string& warning : network.warnings)
    std::cerr << "validate:   calibration warning: " << warning << "\n";
  json n = tb::to_json(network, testbed.state().spec);
  n["group"] = group.name;
  n["failed_calibrations"] = failed;
  if (v.a.probe_network) {
    v.probed[group.name] = probe_testbed(testbed.state(), tb::TopologyProbeRequest());
    n["probed"] = tb::to_json(v.probed[group.name]);
  }
  v.networks.push_back(n);
  // The calibrated network alone (the testbed platform's compute): what the round's
  // communication is predicted on before compute is calibrated.
  const std::string network_only =
      (v.out_dir / "platforms" / (group.name + "-network.xml")).string();
  write_text(network_only, tb::calibrated_platform_xml(testbed.state().spec, network));
  row_baselines(v, testbed.state().spec, next, group.configs.size());
  for (size_t c = 0; c < group.configs.size(); ++c, ++next) {
    // A configuration with a copy beside it and the copy (the next row) run together.
    if (v.rows[next].config.is_copy) continue;
    measure_configuration(v, testbed.state().spec, network, network_only, next);
  }
}

/// Reads a group's measurements from an earlier run's folder (validate --replay) instead of
/// measuring: each row's testbed runs, compute calibrations and platforms as that run wrote them
/// (the platforms hold its network and compute calibrations; no model code made them), and the
/// group's testbed as `testbed up` would make it (for the baseline on the nominal network).
void replay_group(Validation& v, const TestbedGroup& group, size_t& next) {
  const fs::path dir = v.a.replay;
  row_baselines(v, spec_in_child(group, v.a.prefix), next, group.configs.size());
  for (size_t c = 0; c < group.configs.size(); ++c, ++next) {
    Row& r = v.rows[next];
    const std::string stem = (dir / "runs" / fmt::format("{:02}", next)).string();
    const std::string platform = (dir / "platforms" / fmt::format("{:02}", next)).string();
    for (int run = 0; run < r.config.runs; ++run)
      v.measured[next].push_back(
          read_text(stem + "-measure" +
                    (run == 0 ? std::string() : fmt::format("-run{}", run + 1)) + ".json"));
    r.before = read_compute(stem + "-compute-before.json", per_worker_batch(r));
    r.after = read_compute(stem + "-compute-after.json", per_worker_batch(r));
    const std::pair<std::string*, const char*> files[] = {{&r.platform, ".xml"},
                                                          {&r.platform_before, "-before.xml"},
                                                          {&r.platform_after, "-after.xml"}};
    for (const auto& [path, suffix] : files) {
      *path = platform + suffix;
      if (!fs::exists(*path))
        throw InputError(v.a.replay, "platforms", "the row platforms validate wrote there",
                         "no " + *path);
    }
    if (fs::exists(platform + "-probed.xml")) r.platform_probed = platform + "-probed.xml";
    r.predicted_wait_s = kNaN;
    // The steal the earlier run measured under (absent in runs recorded before it was).
    if (next < v.replayed_results.size()) {
      const json& earlier_row = v.replayed_results[next];
      const auto steal = earlier_row.find("cpu_steal_fraction");
      if (steal != earlier_row.end() && steal->is_number()) r.steal_fraction = steal->get<double>();
    }
  }
}

/// Predicts and simulates every configuration on its platforms, the testbed down, and reads each
/// row's measured and predicted times.
void predict_and_simulate(Validation& v) {
  std::vector<Row>& rows = v.rows;
  const std::vector<Predictor>& engines = testbed_engines();
  const Predictor& closed_form = engines[closed_form_engine()];
  const std::vector<size_t> probed = probed_engines();
  std::vector<child::Task> tasks;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string stem = run_stem(v, i);
    for (const Predictor& e : engines)
      tasks.push_back(engine_child(v.a, rows[i], e, rows[i].platform, stem + "-" + e.label));
    tasks.push_back(engine_child(v.a, rows[i], closed_form, rows[i].platform_before,
                                 stem + "-" + closed_form.label + "-before"));
    tasks.push_back(engine_child(v.a, rows[i], closed_form, rows[i].platform_after,
                                 stem + "-" + closed_form.label + "-after"));
  }
  const size_t per_row = engines.size() + 2;
  std::vector<size_t> probed_rows;  // the probed engines on the probed network, after the rest
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].platform_probed.empty()) {
      probed_rows.push_back(i);
      for (size_t e : probed)
        tasks.push_back(engine_child(v.a, rows[i], engines[e], rows[i].platform_probed,
                                     run_stem(v, i) + "-" + engines[e].label + "-probed"));
    }
  const auto predicted =
      validation::run_children(tasks, parallel_jobs(v.a), "predict and simulate");
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& row = rows[i];
    for (size_t run = 0; run < v.measured[i].size(); ++run)
      row.measured_runs.push_back(validation::parse_row(
          v.measured[i][run], fmt::format("measure {} (run {})", row.config.name, run + 1)));
    row.measured = validation::mean_over_runs(row.measured_runs);
    row.engines.clear();
    for (size_t e = 0; e < engines.size(); ++e)
      row.engines.push_back(validation::parse_row(predicted[per_row * i + e],
                                                  engines[e].label + " " + row.config.name));
    row.analytic_before = validation::parse_row(predicted[per_row * i + engines.size()],
                                                closed_form.label + " (before) " + row.config.name);
    row.analytic_after = validation::parse_row(predicted[per_row * i + engines.size() + 1],
                                               closed_form.label + " (after) " + row.config.name);
  }
  for (size_t p = 0; p < probed_rows.size(); ++p) {
    Row& row = rows[probed_rows[p]];
    row.probed.clear();
    for (size_t k = 0; k < probed.size(); ++k)
      row.probed.push_back(
          validation::parse_row(predicted[per_row * rows.size() + probed.size() * p + k],
                                engines[probed[k]].label + " (probed) " + row.config.name));
  }
}

/// Rounds to target over seeds. One run's rounds to target are one draw: at seed 1..5 the same
/// configuration takes from 7 to 9 rounds (local SGD, tau = 16) or from 158 to 200 (sync, a
/// global batch of 64), so a single seed is a noisy truth for a convergence prediction. The
/// rounds of sync and local SGD do not depend on the network (the same arithmetic, whatever
/// carries the bytes: the first seed's run here gives the testbed run's rounds, checked in
/// settle_rounds_truth), so each configuration (not a copy) is also trained at
/// `convergence_seeds` seeds on threads on this machine, the testbed down.
void train_seeds(Validation& v) {
  if (v.a.convergence_seeds <= 1) return;
  const long long first_seed = v.in.job.integer("seed");
  std::vector<child::Task> seed_tasks;
  std::vector<size_t> seed_row;
  for (size_t i = 0; i < v.rows.size(); ++i) {
    if (v.rows[i].config.is_copy) continue;
    for (int s = 0; s < v.a.convergence_seeds; ++s) {
      std::map<std::string, std::string> keys =
          config_keys(v.a, v.rows[i], v.rows[i].group->platform);
      keys["communicator"] = "threads";
      keys.erase("timing");
      keys["seed"] = std::to_string(first_seed + s);
      const std::string stem =
          (v.out_dir / "runs" / fmt::format("{:02}-seed-{}", i, first_seed + s)).string();
      seed_tasks.push_back(
          engine_task(engine("exec"), v.a.job_file, keys, stem + ".json", stem + ".err"));
      seed_row.push_back(i);
    }
  }
  const auto outputs =
      validation::run_children(seed_tasks, parallel_jobs(v.a), "rounds to target over seeds");
  for (size_t t = 0; t < seed_tasks.size(); ++t) {
    const EngineRow r = validation::parse_row(
        outputs[t], "rounds to target (seed run) " + v.rows[seed_row[t]].config.name);
    v.rows[seed_row[t]].seed_rounds.push_back(r.reached ? r.rounds : kNaN);
  }
}

/// How often the first seed gave the testbed run's rounds, over the rows where both reached.
struct SeedCheck {
  int agrees = 0;
  int compared = 0;
};

/// Sets each row's rounds truth: the mean over its seeds, or the testbed run's own with one seed;
/// a copy takes its twin's. NaN when the testbed run or a seed missed the target.
SeedCheck settle_rounds_truth(std::vector<Row>& rows) {
  SeedCheck check;
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& row = rows[i];
    if (row.config.is_copy) {
      row.seed_rounds = rows[i - 1].seed_rounds;
      row.rounds_truth = row.measured.reached ? rows[i - 1].rounds_truth : kNaN;
      continue;
    }
    if (row.seed_rounds.empty()) {
      row.rounds_truth = row.measured.reached ? row.measured.rounds : kNaN;
      continue;
    }
    if (row.measured.reached && std::isfinite(row.seed_rounds.front())) {
      ++check.compared;
      if (row.seed_rounds.front() == row.measured.rounds) ++check.agrees;
    }
    double sum = 0;
    for (double r : row.seed_rounds)
      sum += r;
    row.rounds_truth = row.measured.reached ? sum / static_cast<double>(row.seed_rounds.size())
                                            : kNaN;  // NaN when a seed missed the target
  }
  return check;
}

/// Rounds to target: the convergence fit without each configuration (and without its group);
/// returns the fit's report. A copy trains the same model on the same data with the same seed as
/// its twin: the same run as far as convergence goes, so it is left out of the fit (it would
/// leave nothing out) and takes its twin's fitted rounds.
json fit_rounds(std::vector<Row>& rows) {
  std::vector<validation::ConvergenceRow> convergence;
  std::vector<size_t> fitted_row;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    if (row.config.is_copy) continue;
    fitted_row.push_back(i);
    validation::ConvergenceRow c;
    const model::Strategy& strategy = model::strategy(row.config.strategy);
    c.counts_rounds = strategy.counts_rounds();
    c.asynchronous = strategy.asynchronous();
    c.staleness = row.measured.staleness;
    c.predicted_staleness = row.engines[closed_form_engine()].staleness;
    c.batch = row.batch;
    c.workers = static_cast<int>(row.config.hosts.size());
    c.tau = row.config.tau;
    c.reached = row.measured.reached && std::isfinite(row.rounds_truth);
    c.rounds = row.rounds_truth;
    convergence.push_back(c);
  }
  const json fit_report = validation::fit_convergence(convergence);
  for (size_t j = 0; j < fitted_row.size(); ++j) {
    Row& row = rows[fitted_row[j]];
    row.rounds_loo = convergence[j].rounds_loo;
    row.rounds_group = convergence[j].rounds_group;
    row.rounds_fit = convergence[j].rounds_fit;
  }
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i].config.is_copy) {
      rows[i].rounds_loo = rows[i - 1].rounds_loo;
      rows[i].rounds_group = rows[i - 1].rounds_group;
      rows[i].rounds_fit = rows[i - 1].rounds_fit;
    }
  return fit_report;
}

// --- the report -------------------------------------------------------------------------------

/// Every row's errors against its measurement, its results JSON and its CSV line.
struct Tables {
  std::vector<validation::EngineSeries> errors;  ///< per engine, in testbed_engines()' order
  std::vector<double> round_before, round_after, rounds_loo_err, rounds_group_err;
  /// The bottleneck-link baseline's round and its error, and whether its flows share a link.
  std::vector<double> baseline_round, baseline_round_err;
  std::vector<bool> baseline_contended;
  json results = json::array();
  std::string csv;
};

/// A CSV cell: the number, or empty when not finite.
std::string csv_cell(double v) {
  return std::isfinite(v) ? fmt::format("{:.9g}", v) : std::string();
}

/// The CSV's header line.
std::string csv_header() {
  std::string csv =
      "config,group,strategy,workers,tau,collective,servers,contended,reached,"
      "round_measured_s,compute_measured_s,comm_measured_s,time_measured_s,"
      "rounds_measured,rounds_loo,rounds_group_out";
  for (const Predictor& e : testbed_engines())
    csv += fmt::format(",round_{0}_s,compute_{0}_s,comm_{0}_s,time_loo_{0}_s,time_group_out_{0}_s",
                       e.label);
  return csv +
         ",round_baseline_s,comm_baseline_s,baseline_contended,round_start_lateness_median_s,"
         "round_start_lateness_max_s\n";
}

/// A row's errors per engine, added to the tables and its CSV line; returns the engines' JSON.
json tabulate_engines(Tables& t, const Row& row, double time_measured) {
  json per_engine = json::object();
  for (size_t e = 0; e < testbed_engines().size(); ++e) {
    const EngineRow& p = row.engines[e];
    per_engine[testbed_engines()[e].label] = t.errors[e].add(
        p, row.measured, row.rounds_loo, row.rounds_group, time_measured, row.config.contended);
    t.csv += fmt::format(",{},{},{},{},{}", csv_cell(p.round_s), csv_cell(p.compute_s),
                         csv_cell(p.comm_s), csv_cell(row.rounds_loo * p.round_s),
                         csv_cell(row.rounds_group * p.round_s));
  }
  return per_engine;
}

/// A row's bottleneck-link baseline, added to the tables and its CSV line; returns its JSON (null
/// when the row has none).
json tabulate_baseline(Tables& t, const Row& row) {
  const EngineRow& analytic = row.engines[closed_form_engine()];
  const double round_s =
      row.nominal ? model::baseline_round_s(analytic.round_s, analytic.comm_s, row.baseline.comm_s)
                  : kNaN;
  t.baseline_round.push_back(round_s);
  t.baseline_round_err.push_back(model::relative_error(round_s, row.measured.round_s));
  t.baseline_contended.push_back(row.nominal && row.baseline.contended());
  t.csv += fmt::format(",{},{},{}", csv_cell(round_s),
                       csv_cell(row.nominal ? row.baseline.comm_s : kNaN),
                       row.nominal ? (row.baseline.contended() ? "1" : "0") : "");
  if (!row.nominal) return nullptr;
  return validation::baseline_row_json(row.baseline, *row.nominal, round_s,
                                       t.baseline_round_err.back());
}

/// Each testbed run of a row: its times and each engine's round error against it.
json testbed_runs_json(const Row& row) {
  json runs = json::array();
  for (const EngineRow& run : row.measured_runs) {
    json r = {{"compute_s", validation::number_or_null(run.compute_s)},
              {"comm_s", validation::number_or_null(run.comm_s)},
              {"round_s", validation::number_or_null(run.round_s)},
              {"rounds", validation::number_or_null(run.reached ? run.rounds : kNaN)},
              {"total_s", validation::number_or_null(run.reached ? run.total_s : kNaN)}};
    r.update(validation::round_start_json(run));
    for (size_t e = 0; e < testbed_engines().size(); ++e)
      r["error_round_" + testbed_engines()[e].label] =
          validation::number_or_null(model::relative_error(row.engines[e].round_s, run.round_s));
    runs.push_back(r);
  }
  return runs;
}

/// A row's measured times (the mean over its testbed runs) and rounds to target.
json measured_json(const Row& row) {
  const EngineRow& m = row.measured;
  json out = {
      {"compute_s", validation::number_or_null(m.compute_s)},
      {"comm_s", validation::number_or_null(m.comm_s)},
      {"round_s", validation::number_or_null(m.round_s)},
      {"comm_share", validation::number_or_null(m.round_s > 0 ? m.comm_s / m.round_s : kNaN)},
      {"rounds", validation::number_or_null(row.rounds_truth)},
      {"time_to_target_s", validation::number_or_null(measured_time_to_target_s(row))},
      {"rounds_testbed_run", validation::number_or_null(m.reached ? m.rounds : kNaN)},
      {"time_to_target_testbed_run_s", validation::number_or_null(m.reached ? m.total_s : kNaN)}};
  // How late the rounds started past the agreed instant (the runs' mean median, largest max).
  out.update(validation::round_start_json(m));
  return out;
}

/// A row's predictions on the probed network (null without --probe-network).
json probed_row_json(const Row& row) {
  if (row.platform_probed.empty()) return nullptr;
  json out = {{"platform", row.platform_probed}};
  const std::vector<size_t> probed = probed_engines();
  for (size_t k = 0; k < probed.size(); ++k)
    out[testbed_engines()[probed[k]].label] = {
        {"round_s", validation::number_or_null(row.probed[k].round_s)},
        {"comm_s", validation::number_or_null(row.probed[k].comm_s)},
        {"error_round", validation::number_or_null(
                            model::relative_error(row.probed[k].round_s, row.measured.round_s))}};
  return out;
}

/// The summary of the probed network's predictions beside the given platform's, over the rows
/// that have both (null without --probe-network).
json probed_summary_json(const std::vector<Row>& rows) {
  json out = {{"network",
               "each group's network probed (calibrate --network: round trips of every pair, "
               "a tree by neighbour joining, capacities from concurrent flows; no platform file "
               "read), latencies x the group's MPI latency factor, the same compute as the given "
               "platform's rows"}};
  bool any = false;
  const std::vector<size_t> probed_indices = probed_engines();
  for (size_t k = 0; k < probed_indices.size(); ++k) {
    const size_t e = probed_indices[k];
    std::vector<double> probed, given, probed_contended, given_contended;
    for (const Row& row : rows) {
      if (row.platform_probed.empty()) continue;
      any = true;
      probed.push_back(model::relative_error(row.probed[k].round_s, row.measured.round_s));
      given.push_back(model::relative_error(row.engines[e].round_s, row.measured.round_s));
      if (row.config.contended) {
        probed_contended.push_back(probed.back());
        given_contended.push_back(given.back());
      }
    }
    const json median_probed = validation::median_abs_or_null(probed);
    const json median_given = validation::median_abs_or_null(given);
    out[testbed_engines()[e].label] = {
        {"median_abs_error_round", median_probed},
        {"max_abs_error_round", validation::max_abs_or_null(probed)},
        {"median_abs_error_round_contended", validation::median_abs_or_null(probed_contended)},
        {"given_median_abs_error_round", median_given},
        {"given_max_abs_error_round", validation::max_abs_or_null(given)},
        {"given_median_abs_error_round_contended", validation::median_abs_or_null(given_contended)},
        {"median_points_above_given",
         median_probed.is_number() && median_given.is_number()
             ? json(100 * (median_probed.get<double>() - median_given.get<double>()))
             : json(nullptr)}};
  }
  return any ? out : json(nullptr);
}

/// A row's entry in the report's results.
json row_json(const Row& row, const json& per_engine, double error_before, double error_after,
              const json& baseline) {
  const EngineRow& m = row.measured;
  return {
      {"config", row.config.name},
      {"group", row.group->name},
      {"strategy", row.config.strategy},
      {"workers", row.config.hosts.size()},
      {"hosts", row.config.hosts},
      {"server_hosts", row.config.server_hosts},
      {"tau", row.config.tau},
      {"batch", row.batch},
      {"collective", row.config.collective},
      {"contended", row.config.contended},
      {"note", row.config.note},
      {"beside", row.config.beside},
      {"copy_of_the_row_before", row.config.is_copy},
      {"platform", row.platform},
      {"reached_target", m.reached},
      {"cpu_steal_fraction", row.steal_fraction >= 0 ? json(row.steal_fraction) : json(nullptr)},
      {"cpu_steal_set_aside", row.steal_set_aside},
      {"testbed_runs", testbed_runs_json(row)},
      {"measured", measured_json(row)},
      {"compute_calibration",
       {{"per_worker_batch", row.before.per_worker_batch},
        {"wait_s", row.predicted_wait_s},
        {"step_before_s", row.before.step_s},
        {"step_after_s", row.after.step_s}}},
      {"engines", per_engine},
      {"probed_network", probed_row_json(row)},
      {"baseline", baseline},
      {"round_s_by_calibration",
       {{"analytic_before", validation::number_or_null(row.analytic_before.round_s)},
        {"analytic_after", validation::number_or_null(row.analytic_after.round_s)},
        {"error_analytic_before", validation::number_or_null(error_before)},
        {"error_analytic_after", validation::number_or_null(error_after)}}},
      {"rounds",
       {{"measured", validation::number_or_null(row.rounds_truth)},
        {"testbed_run", validation::number_or_null(m.reached ? m.rounds : kNaN)},
        {"seeds", seeds_json(row.seed_rounds)},
        {"leave_one_out", validation::number_or_null(row.rounds_loo)},
        {"leave_group_out", validation::number_or_null(row.rounds_group)},
        {"fitted", validation::number_or_null(row.rounds_fit)}}}};
}

/// Every row's errors against its measurement, as the report's results and the CSV.
Tables tabulate(const std::vector<Row>& rows) {
  Tables t;
  for (const Predictor& e : testbed_engines())
    t.errors.push_back({e.label, {}, {}, {}, {}, {}, {}});
  t.csv = csv_header();
  for (const Row& row : rows) {
    const EngineRow& m = row.measured;
    const double time_measured = measured_time_to_target_s(row);
    const double rounds_measured = row.rounds_truth;
    t.rounds_loo_err.push_back(model::relative_error(row.rounds_loo, rounds_measured));
    t.rounds_group_err.push_back(model::relative_error(row.rounds_group, rounds_measured));
    t.round_before.push_back(model::relative_error(row.analytic_before.round_s, m.round_s));
    t.round_after.push_back(model::relative_error(row.analytic_after.round_s, m.round_s));
    t.csv += fmt::format(
        "\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", row.config.name, row.group->name,
        row.config.strategy, row.config.hosts.size(), row.config.tau, row.config.collective,
        row.config.server_hosts.size(), row.config.contended ? 1 : 0, m.reached ? 1 : 0,
        csv_cell(m.round_s), csv_cell(m.compute_s), csv_cell(m.comm_s), csv_cell(time_measured),
        csv_cell(rounds_measured), csv_cell(row.rounds_loo), csv_cell(row.rounds_group));
    const json per_engine = tabulate_engines(t, row, time_measured);
    const json baseline = tabulate_baseline(t, row);
    t.csv += fmt::format(",{},{}\n", csv_cell(m.round_start_lateness_median_s),
                         csv_cell(m.round_start_lateness_max_s));
    t.results.push_back(
        row_json(row, per_engine, t.round_before.back(), t.round_after.back(), baseline));
  }
  return t;
}

/// The report's summary: medians and maxima of the errors, over all rows and the contended ones.
json summary_json(const std::vector<Row>& rows, const Tables& t, const json& networks) {
  json summary = {
      {"configurations", rows.size()},
      {"contended_configurations",
       std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.config.contended; })},
      {"median_abs_error_rounds_loo", validation::median_abs_or_null(t.rounds_loo_err)},
      {"median_abs_error_rounds_group_out", validation::median_abs_or_null(t.rounds_group_err)},
      {"median_abs_error_round_analytic_before", validation::median_abs_or_null(t.round_before)},
      {"median_abs_error_round_analytic_after", validation::median_abs_or_null(t.round_after)}};
  for (const validation::EngineSeries& engine : t.errors)
    summary[engine.label] = engine.summary_json();
  std::vector<EngineRow> measured;
  for (const Row& row : rows)
    measured.push_back(row.measured);
  summary["round_start_lateness"] = validation::round_start_summary_json(measured);
  summary["probed_network"] = probed_summary_json(rows);
  std::vector<double> row_steal, network_steal;
  for (const Row& row : rows)
    if (!row.config.is_copy) row_steal.push_back(row.steal_fraction);  // measured with its twin
  for (const json& n : networks) {
    const auto f = n.find("cpu_steal_fraction");  // absent in runs recorded before it was
    network_steal.push_back(f != n.end() && f->is_number() ? f->get<double>() : -1.0);
  }
  summary["cpu_steal"] = validation::steal_summary_json(row_steal, network_steal);
  std::vector<validation::EngineErrors> engines;
  for (size_t e = 0; e < testbed_engines().size(); ++e)
    engines.push_back({testbed_engines()[e].label, t.errors[e].round});
  summary["versus_baseline"] = validation::versus_baseline_json(
      t.baseline_round_err, t.baseline_contended, engines,
      "nominal: each group's platform file's links at the testbed's scale (as the testbed shapes "
      "them), no calibration; compute: the analytic engine's on the calibrated platform");
  return summary;
}

/// The measurement, then each engine that predicts it ("analytic", "simgrid CM02", ...).
json engines_json() {
  json names = json::array(
      {"exec-cpu measured: MPI ranks across the emulated testbed, timing concurrent (wall "
       "clock, rounds started at an instant the ranks agree on), medians over rounds, the mean "
       "over a row's testbed runs"});
  for (const Predictor& e : testbed_engines())
    names.push_back(display_name(e));
  return names;
}

/// The report's context: what was measured and predicted, and how.
json context_json(const Validation& v, const SeedCheck& seeds) {
  const long long first_seed = v.in.job.integer("seed");
  return {
      {"verb", "validate --testbed"},
      {"job_file", v.in.job.file},
      {"matrix_file", v.in.matrix.file},
      {"engines", engines_json()},
      {"network_model",
       "each group's testbed calibrated with MPI messages (testbed calibrate --mpi), the "
       "configuration's collective and servers as measured"},
      {"compute_model",
       "K threads stepping at once on this machine, before and after each measurement (their "
       "mean; each alone also reported)"},
      {"seed", v.in.job.integer("seed")},
      {"convergence",
       v.a.convergence_seeds > 1
           ? fmt::format("rounds to target: mean over seeds {}..{} of each configuration trained "
                         "on threads on this machine (the testbed run's seed gave the testbed "
                         "run's rounds on {} of {} rows); time to target: the testbed run's mean "
                         "round x that mean",
                         first_seed, first_seed + v.a.convergence_seeds - 1, seeds.agrees,
                         seeds.compared)
           : std::string("rounds and time to target of the testbed run (one seed)")},
      {"commit", model::tauplan_git_commit()},
      {"date", model::utc_now_iso8601()},
      {"kind",
       "validation: workers really running concurrently as MPI processes on the wall clock, "
       "their messages crossing real TCP stacks over emulated links; the predictions use only "
       "micro-measurements taken apart from the runs (network: MPI messages one pair at a time; "
       "compute: threads without a network) and a convergence fit that leaves the "
       "configuration out"}};
}

/// Writes the scatter of predicted against measured times and runs gnuplot on it.
void plot_scatter(const std::vector<Row>& rows, const fs::path& out_dir,
                  std::vector<std::string>& notes) {
  double lo = HUGE_VAL, hi = 0;
  const size_t closed = closed_form_engine();
  for (const Row& row : rows) {
    std::vector<double> values = {row.measured.round_s, row.measured.total_s};
    for (const EngineRow& predicted : row.engines)
      values.push_back(predicted.round_s);
    if (row.nominal)
      values.push_back(model::baseline_round_s(row.engines[closed].round_s,
                                               row.engines[closed].comm_s, row.baseline.comm_s));
    for (double v : values)
      if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (hi > 0) {
    write_text((out_dir / "scatter.gp").string(), scatter_script(lo / 1.5, hi * 1.5));
    run_gnuplot(out_dir, "scatter.gp", notes);
  }
}

/// The table: a row per configuration, measured against each engine's prediction.
std::string table_text(const std::vector<Row>& rows, const Tables& t) {
  const std::vector<validation::EngineSeries>& errors = t.errors;
  std::string out =
      "note: measured = MPI ranks across the emulated testbed, concurrent on the wall clock; "
      "predictions from MPI message and compute calibrations taken apart from the runs\n";
  if (std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.config.is_copy; }))
    out +=
        "note: '+ a copy' and '(copy)': one configuration on two sets of hosts, run at the same "
        "time (two jobs sharing links); simgrid runs both (mean over start offsets), analytic "
        "predicts each alone\n";
  out +=
      "note: baseline = bottleneck link on the nominal network (the busiest link's bytes over its "
      "bandwidth plus route latencies, per stage) plus the analytic engine's compute\n";
  out += fmt::format("{:<34} {:>5} {:>9} {:>6}", "configuration", "cont", "round ms", "comm%");
  for (const Predictor& e : testbed_engines())
    out += fmt::format(" {:>9} {:>8}", column_name(e), "err");
  out += fmt::format(" {:>9} {:>8} {:>6} {:>9} {:>8}\n", "baseline", "err", "rounds", "time s",
                     "err LGO");
  const size_t contention = contention_engine();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    const EngineRow& m = row.measured;
    out += fmt::format("{:<34} {:>5} {:>9} {:>6}", row.config.name,
                       row.config.contended ? "yes" : "", validation::ms(m.round_s),
                       m.round_s > 0 ? fmt::format("{:.0f}", 100 * m.comm_s / m.round_s) : "n/a");
    for (size_t e = 0; e < row.engines.size(); ++e)
      out += fmt::format(" {:>9} {:>8}", validation::ms(row.engines[e].round_s),
                         validation::pct_text(errors[e].round[i]));
    out +=
        fmt::format(" {:>9} {:>8} {:>6} {:>9} {:>8}\n", validation::ms(t.baseline_round[i]),
                    validation::pct_text(t.baseline_round_err[i]),
                    std::isfinite(row.rounds_truth) ? fmt::format("{:.4g}", row.rounds_truth) : "-",
                    std::isfinite(measured_time_to_target_s(row))
                        ? fmt::format("{:.2f}", measured_time_to_target_s(row))
                        : "-",
                    validation::pct_text(errors[contention].time_group[i]));
  }
  return out;
}

/// Simgrid CM02's round error against one testbed run of a row, as text.
std::string cm02_error(const Row& r, const EngineRow& run) {
  return validation::pct_text(
      model::relative_error(r.engines[contention_engine()].round_s, run.round_s));
}

/// Rows measured more than once: each run's round and its simgrid CM02 error; for two jobs, the
/// slower and the faster job of each run (the split a fluid model shares equally).
std::string repeated_runs_text(const std::vector<Row>& rows) {
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    if (row.measured_runs.size() < 2) continue;
    std::string per_run;
    for (const EngineRow& run : row.measured_runs)
      per_run += fmt::format("{}{} ms ({})", per_run.empty() ? "" : ", ",
                             validation::ms(run.round_s), cm02_error(row, run));
    out += fmt::format(
        "runs: {}: round of each of {} testbed runs (CM02 error): {}; the row is "
        "their mean\n",
        row.config.name, row.measured_runs.size(), per_run);
    if (row.config.beside.empty() || row.config.is_copy || i + 1 >= rows.size()) continue;
    const Row& copy = rows[i + 1];
    std::string slower, faster;
    for (size_t run = 0; run < row.measured_runs.size() && run < copy.measured_runs.size(); ++run) {
      const Row* slow = &row;
      const Row* fast = &copy;
      if (row.measured_runs[run].round_s < copy.measured_runs[run].round_s) std::swap(slow, fast);
      slower += fmt::format("{}{} {}", slower.empty() ? "" : ", ", slow == &row ? "job" : "copy",
                            cm02_error(*slow, slow->measured_runs[run]));
      faster += fmt::format("{}{}", faster.empty() ? "" : ", ",
                            cm02_error(*fast, fast->measured_runs[run]));
    }
    out += fmt::format(
        "runs: two jobs: CM02 error on the slower job of each run: {}; on the faster: {}\n", slower,
        faster);
  }
  return out;
}

/// The summary's lines: the convergence note, each engine's errors, the analytic engine's by
/// calibration and the rounds to target.
std::string summary_text(const json& context, const json& summary) {
  std::string out = "note: " + context.at("convergence").get<std::string>() + "\n";
  for (const Predictor& e : testbed_engines()) {
    const json& s = summary.at(e.label);
    out += fmt::format(
        "{:<13} round |error| median {} max {} (contended rows: median {} max {}); compute "
        "median {}; comm median {}; time to target median {} max {} (leave-group-out), {} "
        "(leave-one-out)\n",
        e.label, pct_or_na(s.at("median_abs_error_round")), pct_or_na(s.at("max_abs_error_round")),
        pct_or_na(s.at("median_abs_error_round_contended")),
        pct_or_na(s.at("max_abs_error_round_contended")),
        pct_or_na(s.at("median_abs_error_compute")), pct_or_na(s.at("median_abs_error_comm")),
        pct_or_na(s.at("median_abs_error_time_to_target_group_out")),
        pct_or_na(s.at("max_abs_error_time_to_target_group_out")),
        pct_or_na(s.at("median_abs_error_time_to_target_loo")));
  }
  out += fmt::format(
      "analytic round |error| median on the compute calibration before the measurement {}, "
      "after it {}, their mean (above) {}; rounds to target median |error| leave-one-out {}, "
      "leave-group-out {}\n",
      pct_or_na(summary.at("median_abs_error_round_analytic_before")),
      pct_or_na(summary.at("median_abs_error_round_analytic_after")),
      pct_or_na(
          summary.at(testbed_engines()[closed_form_engine()].label).at("median_abs_error_round")),
      pct_or_na(summary.at("median_abs_error_rounds_loo")),
      pct_or_na(summary.at("median_abs_error_rounds_group_out")));
  out += validation::round_start_text(summary.at("round_start_lateness"));
  out += validation::steal_text(summary.at("cpu_steal"));
  const json& probed = summary.at("probed_network");
  if (!probed.is_null())
    for (size_t e : probed_engines()) {
      const std::string& label = testbed_engines()[e].label;
      const json& p = probed.at(label);
      out += fmt::format(
          "probed network, {}: round |error| median {} max {} (contended rows: median {}); on "
          "the given platform, the same rows: median {} max {} (contended: median {})\n",
          label, pct_or_na(p.at("median_abs_error_round")), pct_or_na(p.at("max_abs_error_round")),
          pct_or_na(p.at("median_abs_error_round_contended")),
          pct_or_na(p.at("given_median_abs_error_round")),
          pct_or_na(p.at("given_max_abs_error_round")),
          pct_or_na(p.at("given_median_abs_error_round_contended")));
    }
  return out + validation::versus_baseline_text(summary.at("versus_baseline"));
}

}  // namespace

TestbedValidateOutcome run_testbed_validate(const TestbedValidateRequest& a) {
  Validation v(a, checked_inputs(a));
  make_folder((v.out_dir / "runs").string(), "--out");
  make_folder((v.out_dir / "platforms").string(), "--out");
  v.rows = rows_of(v.in.matrix, v.in.batch);
  v.measured.resize(v.rows.size());
  size_t next = 0;
  json replayed;
  if (!a.replay.empty()) {
    const std::string earlier_file = (fs::path(a.replay) / "testbed-validation.json").string();
    json earlier;
    try {
      earlier = json::parse(read_text(earlier_file));
    } catch (const json::parse_error&) {
      throw InputError(earlier_file, "(file)", "the JSON an earlier validate --testbed wrote",
                       "text that is not JSON");
    }
    for (const char* key : {"networks", "results", "context"})
      if (!earlier.is_object() || !earlier.contains(key) ||
          (std::string(key) == "results" && !earlier.at(key).is_array()))
        throw InputError(earlier_file, key,
                         "what an earlier validate --testbed wrote there (networks, results, "
                         "context)",
                         "none");
    v.networks = earlier.at("networks");
    v.replayed_results = earlier.at("results");
    replayed = {{"folder", a.replay}, {"measured", earlier.at("context")}};
    // The same matrix, row for row: each row reads the files of its index.
    const json& results = earlier.at("results");
    auto config_there = [&results](size_t i) {
      const json& r = results.at(i);
      return r.contains("config") && r.at("config").is_string() ? r.at("config").get<std::string>()
                                                                : std::string("?");
    };
    for (size_t i = 0; i < v.rows.size(); ++i)
      if (i >= results.size() || config_there(i) != v.rows[i].config.name)
        throw InputError(a.matrix_file, fmt::format("configs (row {})", i + 1),
                         "the matrix the replayed run measured (" + a.replay + ")",
                         i < results.size()
                             ? config_there(i) + " there, " + v.rows[i].config.name + " here"
                             : std::string("fewer rows there"));
  }
  for (const TestbedGroup& group : v.in.matrix.groups) {
    if (a.replay.empty())
      measure_group(v, group, next);
    else
      replay_group(v, group, next);
  }
  predict_and_simulate(v);
  train_seeds(v);
  const SeedCheck seeds = settle_rounds_truth(v.rows);
  const json fit_report = fit_rounds(v.rows);
  const Tables tables = tabulate(v.rows);
  const json summary = summary_json(v.rows, tables, v.networks);
  json context = context_json(v, seeds);
  if (!replayed.is_null()) context["replayed_from"] = replayed;
  const json report = {{"context", context},
                       {"networks", v.networks},
                       {"convergence_fit", fit_report},
                       {"summary", summary},
                       {"results", tables.results}};
  write_text((v.out_dir / "testbed-validation.json").string(), report.dump(2) + "\n");
  write_text((v.out_dir / "testbed-validation.csv").string(), tables.csv);

  TestbedValidateOutcome outcome;
  outcome.report = report;
  if (!a.no_plot) plot_scatter(v.rows, v.out_dir, outcome.notes);
  outcome.text =
      table_text(v.rows, tables) + repeated_runs_text(v.rows) + summary_text(context, summary);
  outcome.notes.insert(outcome.notes.begin(),
                       "wrote " + (v.out_dir / "testbed-validation.json").string() + ", .csv" +
                           (a.no_plot ? "" : " and scatter.png/.svg"));
  if (a.max_round_error >= 0) {
    // The bound holds the first engine that models contention (simgrid CM02).
    const Predictor& held = testbed_engines()[contention_engine()];
    const json& e = summary.at(held.label).at("median_abs_error_round");
    if (!e.is_number() || 100 * e.get<double>() > a.max_round_error)
      outcome.exceeded = fmt::format("{} median round |error| {} exceeds --max-round-error {}%",
                                     display_name(held), pct_or_na(e), a.max_round_error);
  }
  return outcome;
}

}  // namespace tauplan::study
