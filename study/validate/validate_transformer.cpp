// validate_transformer.cpp: the CPU decoder block measured against the analytic engine with a
// compute profile of this CPU (validate_transformer.hpp).
#include "study/validate/validate_transformer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include "exec/compute_calibration.hpp"
#include "exec/thread_barrier.hpp"
#include "exec/transformer_block.hpp"
#include "exec/transformer_measure.hpp"
#include "exec/transformer_reference.hpp"
#include "exec/transformer_trainer.hpp"
#include "model/base/error.hpp"
#include "model/compute/layer_ops.hpp"
#include "model/compute/profile_file.hpp"
#include "model/convergence/validation.hpp"
#include "model/inputs/calibration.hpp"
#include "model/inputs/simgrid_xml.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/compute_shapes.hpp"
#include "model/ir/job.hpp"
#include "model/ir/layout.hpp"
#include "model/ir/result.hpp"
#include "study/common/engines.hpp"
#include "study/common/inputs.hpp"
#include "study/validate/validate_support.hpp"

namespace tauplan::study {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kPipelineMicroBatches = 4;
constexpr double kAdamBytesPerParameter = 28;  // read p, g, m, v; write p, m, v (fp32)
constexpr double kEmbeddingBytes = 20;         // per token x hidden: gather 8, scatter-add 12

struct Config {
  std::string label;
  std::string strategy;  // measured
  int workers = 1, data = 1, tensor = 1, pipeline = 1, micro_batches = 1;
};

/// The strategy that splits the model (tensor and pipeline layouts), found by what it does.
std::string model_splitting_strategy() {
  for (const std::string& name : model::strategy_names())
    if (model::strategy(name).splits_model()) return name;
  return {};
}

std::vector<Config> configurations(const model::Job& job) {
  const int k = static_cast<int>(job.integer("workers"));
  std::vector<Config> out;
  for (const std::string& s : job.list("strategies")) {
    const model::Strategy& strategy = model::strategy(s, job.file);
    if (strategy.is_baseline()) out.push_back({s, s, 1, 1, 1, 1, 1});
    if (&strategy == &model::sync_strategy())
      out.push_back({fmt::format("{}-{}", s, k), s, k, k, 1, 1, 1});
    if (strategy.splits_model()) {
      out.push_back({fmt::format("tensor-{}", k), s, k, 1, k, 1, 1});
      out.push_back({fmt::format("pipeline-{}", k), s, k, 1, 1, k, kPipelineMicroBatches});
    }
  }
  if (out.empty())
    throw InputError(job.file, "strategies", "single, sync or mesh for a transformer validation",
                     job.text("strategies"));
  return out;
}

/// Hosts k<K>h0 .. k<K>h<K-1> of the platform are timed by the profile of K threads at once.
std::string host_name(int k, int i) {
  return fmt::format("k{}h{}", k, i);
}
std::string host_list(int k) {
  std::string list;
  for (int i = 0; i < k; ++i)
    list += (i ? "," : "") + host_name(k, i);
  return list;
}
void add_hosts(std::map<std::string, std::string>& keys, const Config& c, bool single) {
  if (single)
    keys["single_host"] = host_name(1, 0);
  else
    keys["hosts"] = host_list(c.workers);
}

std::map<std::string, std::string> measure_keys(const Config& c, const std::string& platform) {
  std::map<std::string, std::string> keys{
      {"strategies", c.strategy}, {"workers", std::to_string(c.workers)}, {"platform", platform}};
  add_hosts(keys, c, model::strategy(c.strategy).is_baseline());
  if (model::strategy(c.strategy).splits_model()) {
    keys["tensor_parallel"] = std::to_string(c.tensor);
    keys["pipeline_parallel"] = std::to_string(c.pipeline);
    keys["micro_batches"] = std::to_string(c.micro_batches);
  }
  return keys;
}

/// The engine is asked for strategy mesh with the configuration's layout (see the header).
std::map<std::string, std::string> predict_keys(const Config& c, const std::string& platform) {
  std::map<std::string, std::string> keys{{"strategies", model_splitting_strategy()},
                                          {"workers", std::to_string(c.workers)},
                                          {"platform", platform},
                                          {"data_parallel", std::to_string(c.data)},
                                          {"tensor_parallel", std::to_string(c.tensor)},
                                          {"pipeline_parallel", std::to_string(c.pipeline)},
                                          {"micro_batches", std::to_string(c.micro_batches)}};
  add_hosts(keys, c, false);
  return keys;
}

std::map<std::string, std::string> merged(std::map<std::string, std::string> base,
                                          const std::map<std::string, std::string>& more) {
  for (const auto& [k, v] : more)
    base[k] = v;
  return base;
}

std::string num(double v) {
  return fmt::format("{:.9g}", v);
}

struct Profiles;
/// This machine's worker threads as one platform (SimGrid holds one per process): for each K,
/// hosts k<K>h0 .. k<K>h<K-1> timed by the profile of K threads at once.
void write_platform(const fs::path& file, const Profiles& profiles);

/// Forward + backward of one layer on `threads` threads at once: mean of their medians.
double measure_layer(exec::BlockConfig block, int micro_batch, int tensor, int threads, int repeats,
                     std::uint64_t seed) {
  block.layers = 1;
  block.micro_batch = micro_batch;
  block.tensor = tensor;
  exec::ThreadBarrier barrier(threads);
  std::vector<double> medians(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      exec::CpuTransformerBlock layer(block);
      // The trainer's initial parameters (a kernel's time may depend on the values it meets).
      const std::vector<float> parameters = exec::init_block_parameters(layer.config(), seed);
      if (parameters.size() != layer.parameter_count())
        throw std::logic_error("validate: initial parameters do not fit the layer");
      std::vector<float> gradients(parameters.size());
      const size_t stream = static_cast<size_t>(block.tokens()) * static_cast<size_t>(block.hidden);
      std::vector<float> hidden(stream), gradient(stream);
      std::vector<double> times;
      for (int r = 0; r <= repeats; ++r) {
        for (size_t i = 0; i < stream; ++i) {
          hidden[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i + r)));
          gradient[i] = 1e-3f * static_cast<float>(std::sin(0.07 * static_cast<double>(i)));
        }
        barrier.wait();
        const auto start = Clock::now();
        layer.layer_forward(0, parameters.data(), hidden.data());
        layer.layer_backward(0, parameters.data(), gradient.data(), gradients.data());
        const double s = std::chrono::duration<double>(Clock::now() - start).count();
        if (r > 0) times.push_back(s);  // the first touches the workspaces
      }
      std::sort(times.begin(), times.end());
      medians[static_cast<size_t>(t)] = times[times.size() / 2];
    });
  for (std::thread& t : pool)
    t.join();
  double sum = 0;
  for (double m : medians)
    sum += m;
  return sum / threads;
}

/// The terms the engine leaves out, per step on the slowest rank (see the header).
struct Terms {
  double adam_s = 0, embedding_s = 0;
};

/// The parameters a rank of pipeline stage `stage` keeps (its layers, its tensor shard;
/// embeddings and head included as the trainer keeps them), which its Adam step sweeps.
double stage_parameters(const Config& c, const exec::BlockConfig& block, int stage) {
  const std::vector<int> layers = model::stage_layers(block.layers, c.pipeline);
  int first = 0;
  for (int s = 0; s < stage; ++s)
    first += layers[static_cast<size_t>(s)];
  const exec::BlockShard shard(block, first, layers[static_cast<size_t>(stage)], 0, c.tensor);
  return static_cast<double>(shard.size());
}

/// Seconds of the block's Adam update over `parameters`, at the profile's optimizer bandwidth.
double adam_seconds(double parameters, const model::ComputeProfile& profile) {
  return parameters * kAdamBytesPerParameter /
         model::memory_kernel_bandwidth(profile, model::MemoryKernel::Optimizer);
}

Terms cpu_terms(const Config& c, const exec::BlockConfig& block, double batch,
                const model::ComputeProfile& profile) {
  double most = 0;
  for (int stage = 0; stage < c.pipeline; ++stage)
    most = std::max(most, stage_parameters(c, block, stage));
  Terms t;
  t.adam_s = adam_seconds(most, profile);
  const double tokens = batch / c.data * block.sequence;
  t.embedding_s = tokens * block.hidden * kEmbeddingBytes / profile.memory_bandwidth_Bps;
  return t;
}

/// A step's parts on one rank, as the trainer times them (exec/rank_times.hpp: means over steps,
/// the embedding, the layers and the head each with their own tensor all-reduces), or as
/// predicted.
struct StepParts {
  double embedding_s = 0, layers_s = 0, head_s = 0, update_s = 0;
};

/// Each pipeline stage's parts of a step, predicted from the profile alone: its layers (one
/// layer's prediction, `layer_s`, times its layers and micro-batches), the head and loss on the
/// last stage (layer_ops.hpp's logits_ops), the embedding's traffic on the first and the Adam
/// update of the stage's parameters (the +terms). No communication: the measured embedding,
/// layers and head include their tensor all-reduces, the predicted do not.
std::vector<StepParts> predicted_stage_parts(const Config& c, const exec::BlockConfig& block,
                                             const model::LayerShape& shape, double layer_s,
                                             const Terms& terms,
                                             const model::ComputeProfile& profile) {
  const std::vector<int> layers = model::stage_layers(block.layers, c.pipeline);
  const double head_s =
      model::ops_seconds(model::logits_ops(shape, block.vocabulary), profile).total();
  std::vector<StepParts> parts(static_cast<size_t>(c.pipeline));
  for (int stage = 0; stage < c.pipeline; ++stage) {
    StepParts& p = parts[static_cast<size_t>(stage)];
    p.layers_s = c.micro_batches * layers[static_cast<size_t>(stage)] * layer_s;
    p.head_s = stage == c.pipeline - 1 ? c.micro_batches * head_s : 0;
    p.embedding_s = stage == 0 ? terms.embedding_s : 0;
    p.update_s = adam_seconds(stage_parameters(c, block, stage), profile);
  }
  return parts;
}

struct Profiles {
  std::map<int, std::string> path;  // absolute
  std::map<int, model::ComputeProfile> profile;
  std::map<int, double> latency_s;  ///< thread hand-over, one way
  std::map<int, exec::ThreadTransport> transport;
  std::string how;
};

Profiles obtain_profiles(const TransformerValidateRequest& request, const std::vector<int>& ks,
                         const fs::path& dir, std::ostream& log) {
  Profiles p;
  for (int k : ks) {
    fs::path file;
    if (!request.profile.empty()) {
      file = fs::absolute(request.profile);
      p.how = "given (--profile)";
    } else if (!request.calibration_dir.empty()) {
      file = fs::absolute(fs::path(request.calibration_dir) / fmt::format("profile-K{}.json", k));
      p.how = "reused (--calibration)";
    } else {
      exec::ComputeCalibrationRequest r;
      r.threads = k;
      log << "validate: calibrating this CPU with " << k << " thread(s) at once ...\n";
      const exec::ComputeCalibration c = exec::measure_compute_calibration(r);
      file = fs::absolute(dir / fmt::format("profile-K{}.json", k));
      std::ofstream(file) << model::compute_profile_json(c.profile);
      std::ofstream(dir / fmt::format("profile-K{}.latency", k))
          << num(c.handoff_latency_s) << " " << num(c.transport.latency_s) << " "
          << num(c.transport.bandwidth_Bps) << "\n";
      p.how = "measured now";
      log << fmt::format("validate: K={}: peak {:.3g} flop/s, memory {:.3g} B/s, {:.1f} s\n", k,
                         c.profile.peak_flops, c.profile.memory_bandwidth_Bps, c.seconds);
    }
    p.path[k] = file.string();
    p.profile[k] = model::read_compute_profile(file.string());
    // Beside the profile (its format has no key for them): the hand-over latency and the
    // thread transport's fit (absent in files written before it was measured: the links then
    // take the profile's memory bandwidth and the hand-over latency).
    double latency = 10e-6;
    exec::ThreadTransport transport;
    std::ifstream lat(file.parent_path() / fmt::format("profile-K{}.latency", k));
    if (!(lat >> latency)) latency = 10e-6;
    if (!(lat >> transport.latency_s >> transport.bandwidth_Bps) ||
        !(transport.bandwidth_Bps > 0 && transport.latency_s >= 0))
      transport = {};
    p.latency_s[k] = latency;
    p.transport[k] = transport;
  }
  return p;
}

/// Host i's link of the K-thread platform. With the transport measured: the all-reduce over K
/// threads took latency + bytes / bandwidth, and the link is the one on which a ring all-reduce
/// of K takes that (model::ring_allreduce_link). Without it: the profile's memory bandwidth (a
/// thread's copy) and half the hand-over latency.
model::simgrid_xml::Link link_of(const std::string& name, int k,
                                 const model::ComputeProfile& profile, const Profiles& profiles) {
  const exec::ThreadTransport& t = profiles.transport.at(k);
  if (k >= 2 && t.bandwidth_Bps > 0) {
    const model::LinkParameters link = model::ring_allreduce_link(k, t.latency_s, t.bandwidth_Bps);
    return {name, link.bandwidth_Bps, link.latency_s, "SPLITDUPLEX"};
  }
  return {name, profile.memory_bandwidth_Bps, profiles.latency_s.at(k) / 2, "SPLITDUPLEX"};
}

void write_platform(const fs::path& file, const Profiles& profiles) {
  namespace sx = model::simgrid_xml;
  sx::Platform xml;
  double speed = 0;
  for (const auto& [k, profile] : profiles.profile)
    speed = std::max(speed, profile.peak_flops);
  xml.comment =
      " Written by tauplan validate (study/validate/validate_transformer.cpp): this machine's "
      "worker\n"
      " threads; hosts k<K>h<i> (i < K) are timed by the compute profile of K threads at once\n"
      " (compute_profile prop), each on a private link of that profile's memory bandwidth (a\n"
      " thread's copy) and the measured thread hand-over latency, or, where the calibration\n"
      " measured it, the fit of the thread transport's all-reduce (link_of in\n"
      " study/validate/validate_transformer.cpp). Speed (one for all, so that no host is emulated "
      "slower)\n"
      " is the best peak, used only where no profile times an op (the optimizer update).\n";
  sx::Zone& world = xml.root;
  world.routers.push_back("xbar");
  for (const auto& [k, profile] : profiles.profile) {
    const std::string profile_name =
        fs::relative(profiles.path.at(k), fs::absolute(file).parent_path()).string();
    for (int i = 0; i < k; ++i) {
      const std::string name = host_name(k, i);
      world.hosts.push_back({name,
                             speed,
                             {{"compute_profile", profile_name},
                              {"node", "this-machine"},
                              {"role", "worker"},
                              {"precision", "fp32"}}});
      world.links.push_back(link_of(name + "-link", k, profile, profiles));
      world.routes.push_back({name, "xbar", {{name + "-link", "UP"}}});
    }
  }
  std::ofstream(file) << sx::to_xml(xml);
}

struct Row {
  Config config;
  double layer_measured = 0, layer_predicted = 0;
  double round_measured = 0, round_analytic = 0, round_terms = 0;
  double compute_measured = 0, comm_measured = 0, compute_predicted = 0, comm_predicted = 0;
  Terms terms;
  /// The slowest rank (largest median step) with its step's parts, measured and predicted for
  /// its stage; rank -1 when the measurement reports no parts.
  int parts_rank = -1, parts_stage = 0;
  double parts_step_s = 0;
  StepParts parts_measured, parts_predicted;
  /// CPU time that OTHER processes used while the row was measured, as a share of the whole
  /// machine's (all cores x wall time): near 0 on an idle machine; above kContendedShare the row
  /// is marked contended (its workers shared the cores, the measurement is not of this machine
  /// alone). A pipeline's ranks idle in their bubbles, so this process's own share says nothing.
  double other_share = 0;
};

/// Busy CPU seconds of the whole machine (every process) from /proc/stat; -1 when unreadable.
double machine_busy_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu")
    return -1;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (user + nice + system + irq + softirq) / (ticks > 0 ? ticks : 100);
}

/// CPU seconds (user + system) this process has used.
double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// Rows during which other processes used more than this share of the machine are contended.
constexpr double kContendedShare = 0.1;

std::string table(const std::vector<Row>& rows) {
  std::ostringstream s;
  s << fmt::format("{:<12} {:>9} {:>9} {:>7} | {:>9} {:>9} {:>7} {:>9} {:>7} | {:>5}\n", "config",
                   "layer ms", "pred ms", "err %", "round ms", "analytic", "err %", "+terms",
                   "err %", "other");
  for (const Row& r : rows)
    s << fmt::format(
        "{:<12} {:>9.3f} {:>9.3f} {:>+7.1f} | {:>9.2f} {:>9.2f} {:>+7.1f} {:>9.2f} "
        "{:>+7.1f} | {:>5.2f}{}\n",
        r.config.label, r.layer_measured * 1e3, r.layer_predicted * 1e3,
        100 * model::relative_error(r.layer_predicted, r.layer_measured), r.round_measured * 1e3,
        r.round_analytic * 1e3, 100 * model::relative_error(r.round_analytic, r.round_measured),
        r.round_terms * 1e3, 100 * model::relative_error(r.round_terms, r.round_measured),
        r.other_share, r.other_share > kContendedShare ? " contended" : "");
  return s.str();
}

/// Where each row's step goes on its slowest rank: the parts measured against predicted.
std::string parts_table(const std::vector<Row>& rows) {
  std::ostringstream s;
  s << "where a step goes, the slowest rank (measured: means over steps, the embedding, layers "
       "and head with their tensor all-reduces; predicted: the profile's ops and the +terms, no "
       "communication), ms\n";
  s << fmt::format(
      "{:<12} {:>4} {:>5} | {:>8} {:>8} | {:>7} {:>7} | {:>7} {:>7} | {:>9} {:>9} | "
      "{:>8}\n",
      "config", "rank", "stage", "layers", "pred", "head", "pred", "update", "pred", "embedding",
      "pred", "step");
  for (const Row& r : rows) {
    if (r.parts_rank < 0) {
      s << fmt::format("{:<12} n/a (the measurement reports no step parts)\n", r.config.label);
      continue;
    }
    const StepParts& m = r.parts_measured;
    const StepParts& p = r.parts_predicted;
    s << fmt::format(
        "{:<12} {:>4} {:>5} | {:>8.2f} {:>8.2f} | {:>7.2f} {:>7.2f} | {:>7.2f} {:>7.2f} | "
        "{:>9.3f} {:>9.3f} | {:>8.2f}\n",
        r.config.label, r.parts_rank, r.parts_stage, m.layers_s * 1e3, p.layers_s * 1e3,
        m.head_s * 1e3, p.head_s * 1e3, m.update_s * 1e3, p.update_s * 1e3, m.embedding_s * 1e3,
        p.embedding_s * 1e3, r.parts_step_s * 1e3);
  }
  return s.str();
}

/// Sets the row's slowest rank and its measured parts from a transformer measurement's ranks
/// (exec/rank_times.hpp's JSON), and picks that rank's stage from the predicted stages' parts.
void add_slowest_rank_parts(const nlohmann::json& ranks, const std::vector<StepParts>& predicted,
                            Row& row) {
  const nlohmann::json* slowest = nullptr;
  for (const nlohmann::json& rank : ranks)
    if (rank.contains("step_parts_mean_s") &&
        (slowest == nullptr || rank["step_s"].get<double>() > (*slowest)["step_s"].get<double>()))
      slowest = &rank;
  if (slowest == nullptr) return;
  const nlohmann::json& parts = (*slowest)["step_parts_mean_s"];
  row.parts_rank = (*slowest)["rank"].get<int>();
  row.parts_stage = (*slowest)["stage"].get<int>();
  row.parts_step_s = (*slowest)["step_s"].get<double>();
  row.parts_measured = {parts["embedding"].get<double>(), parts["layers"].get<double>(),
                        parts["head"].get<double>(), parts["update"].get<double>()};
  row.parts_predicted = predicted.at(static_cast<size_t>(row.parts_stage));
}

/// A row's parts as the CSV's last ten fields (empty without them).
std::string parts_csv(const Row& r) {
  if (r.parts_rank < 0) return ",,,,,,,,,";
  const StepParts& m = r.parts_measured;
  const StepParts& p = r.parts_predicted;
  return fmt::format("{},{},{},{},{},{},{},{},{},{}", r.parts_rank, r.parts_stage, num(m.layers_s),
                     num(p.layers_s), num(m.head_s), num(p.head_s), num(m.update_s),
                     num(p.update_s), num(m.embedding_s), num(p.embedding_s));
}

/// A row's parts in the JSON (null without them).
nlohmann::json parts_json(const Row& r) {
  if (r.parts_rank < 0) return nullptr;
  auto parts = [](const StepParts& p) {
    return nlohmann::json{{"embedding_s", p.embedding_s},
                          {"layers_s", p.layers_s},
                          {"head_s", p.head_s},
                          {"update_s", p.update_s}};
  };
  return {{"rank", r.parts_rank},
          {"stage", r.parts_stage},
          {"step_s", r.parts_step_s},
          {"measured", parts(r.parts_measured)},
          {"predicted", parts(r.parts_predicted)}};
}

}  // namespace

bool is_transformer_job(const std::string& job_file,
                        const std::map<std::string, std::string>& overrides) {
  // The job and its workload only: loading the platform here would fix this process's platform.
  const model::Job job = model::load_job(job_file, all_job_keys(), overrides);
  try {
    return load_job_workload(job).transformer.has_value();
  } catch (const std::exception&) {
    return false;  // the MLP validation reports it, naming the job's key
  }
}

/// One configuration: predicted first (from the job, the profile and the platform; nothing
/// measured), then measured (the layer alone, then the whole job on threads).
Row validate_configuration(const Config& c, const TransformerValidateRequest& request,
                           const model::JobInputs& base, const exec::BlockConfig& block,
                           const model::ComputeProfile& profile, const std::string& platform,
                           unsigned long long& seed, std::ostream& log) {
  const double batch = static_cast<double>(base.job.integer("batch"));
  Row row;
  row.config = c;
  // Prediction first: it reads the job, the profile and the platform, nothing measured.
  // The closed form predicts (a predicting engine that shares this process; the simulator
  // would take a child process per configuration, which this validation does not start).
  const std::vector<Predictor> engines = predictors(NetworkModels::Default);
  const Predictor& closed_form = engines[closed_form_predictor(engines, "validate (transformer)")];
  const EngineOutput predicted = run_engine(closed_form.label, request.job_file,
                                            merged(request.overrides, predict_keys(c, platform)));
  row.round_analytic = predicted.rows.front().round_s;
  row.comm_predicted = predicted.rows.front().comm_s;
  row.compute_predicted = predicted.rows.front().compute_s;
  const int micro_batch = static_cast<int>(batch / (c.data * c.micro_batches));
  model::LayerShape shape =
      model::layer_shape(*base.workload.transformer, micro_batch, c.tensor, false);
  shape.element_bytes = base.workload.bytes_per_parameter;
  row.layer_predicted =
      model::ops_seconds(model::layer_ops(shape, model::Recompute::None), profile).total();
  row.terms = cpu_terms(c, block, batch, profile);
  row.round_terms = row.round_analytic + row.terms.adam_s + row.terms.embedding_s;
  const std::vector<StepParts> stage_parts =
      predicted_stage_parts(c, block, shape, row.layer_predicted, row.terms, profile);
  // Then the measurements.
  const model::JobInputs inputs =
      load_inputs(request.job_file, merged(request.overrides, measure_keys(c, platform)));
  seed = inputs.job.has("seed") ? static_cast<unsigned long long>(inputs.job.integer("seed")) : 0;
  const double own_before = process_cpu_seconds(), machine_before = machine_busy_seconds();
  const auto wall_before = Clock::now();
  row.layer_measured =
      measure_layer(block, micro_batch, c.tensor, c.workers, request.layer_repeats, seed);
  const std::vector<exec::Measurement> measured = exec::measure_transformer(
      inputs.job, inputs.workload, inputs.platform, {c.strategy}, nullptr, &log);
  row.round_measured = measured.front().round_median_s;
  row.compute_measured = measured.front().compute_median_s;
  row.comm_measured = measured.front().sync_s;
  if (measured.front().extra.contains("ranks"))
    add_slowest_rank_parts(measured.front().extra["ranks"], stage_parts, row);
  const double wall = std::chrono::duration<double>(Clock::now() - wall_before).count();
  const double machine_after = machine_busy_seconds();
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  if (machine_before >= 0 && machine_after >= 0)
    row.other_share =
        std::max(0.0, (machine_after - machine_before) - (process_cpu_seconds() - own_before)) /
        (wall * cores);
  log << fmt::format(
      "validate: {}: round measured {:.2f} ms, predicted {:.2f} ms (+terms {:.2f})\n", c.label,
      row.round_measured * 1e3, row.round_analytic * 1e3, row.round_terms * 1e3);
  return row;
}

namespace {

/// Each engine's errors over the rows, in validate's one schema (validate_support.hpp): the
/// analytic engine's, and the same with the Adam and embedding terms added to its compute; the
/// rows' engines.<label> entries.
struct EngineTables {
  validation::EngineSeries analytic{"analytic", {}, {}, {}, {}, {}, {}};
  validation::EngineSeries terms{"analytic_with_terms", {}, {}, {}, {}, {}, {}};
  std::vector<double> layer;  ///< the layer's relative error, a row each
  nlohmann::json rows = nlohmann::json::array();
};

EngineTables engine_tables(const std::vector<Row>& rows) {
  EngineTables t;
  for (const Row& r : rows) {
    validation::EngineRow measured, analytic, terms;
    // A pipeline's critical path runs through every stage: the slowest rank's own compute and
    // waits do not split it as the engine's critical path does, so only its round is compared.
    const bool split = r.config.pipeline == 1;
    measured.compute_s = split ? r.compute_measured : validation::kNaN;
    measured.comm_s = split ? r.comm_measured : validation::kNaN;
    measured.round_s = r.round_measured;
    analytic.compute_s = r.compute_predicted;
    analytic.comm_s = r.comm_predicted;
    analytic.round_s = r.round_analytic;
    terms = analytic;
    terms.compute_s += r.terms.adam_s + r.terms.embedding_s;
    terms.round_s = r.round_terms;
    // No convergence here (no rounds to a target), and no network to contend for.
    const bool comm = r.config.workers > 1;
    const double none = validation::kNaN;
    t.rows.push_back(
        {{t.analytic.label, t.analytic.add(analytic, measured, none, none, none, false, comm)},
         {t.terms.label, t.terms.add(terms, measured, none, none, none, false, comm)}});
    t.layer.push_back(model::relative_error(r.layer_predicted, r.layer_measured));
  }
  return t;
}

/// The median |error| as a percentage with one decimal, or "n/a".
std::string median_text(const std::vector<double>& errors) {
  return validation::pct_or_na(validation::median_abs_or_null(errors));
}

}  // namespace

TransformerValidateOutcome run_transformer_validate(const TransformerValidateRequest& request) {
  if (!request.profile.empty() && !request.calibration_dir.empty())
    throw InputError("command line", "--profile", "not beside --calibration", "both");
  if (request.layer_repeats < 1)
    throw InputError("command line", "--layer-repeats", ">= 1",
                     std::to_string(request.layer_repeats));
  const auto started = Clock::now();
  const model::Job job = model::load_job(request.job_file, all_job_keys(), request.overrides);
  const std::vector<Config> configs = configurations(job);
  const fs::path dir = request.out;
  fs::create_directories(dir);
  std::ostream& log = std::cerr;
  std::vector<int> ks;
  for (const Config& c : configs)
    if (std::find(ks.begin(), ks.end(), c.workers) == ks.end()) ks.push_back(c.workers);
  const Profiles profiles = obtain_profiles(request, ks, dir, log);
  const std::string platform = fs::absolute(dir / "platform.xml").string();
  write_platform(platform, profiles);
  const model::JobInputs base =
      load_inputs(request.job_file, merged(request.overrides, {{"platform", platform}}));
  const exec::BlockConfig block = exec::transformer_block_config(base.workload);

  std::vector<Row> rows;
  std::vector<std::string> notes;
  unsigned long long seed = 0;
  for (const Config& c : configs)
    rows.push_back(validate_configuration(c, request, base, block, profiles.profile.at(c.workers),
                                          platform, seed, log));

  const EngineTables errors = engine_tables(rows);
  const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
  TransformerValidateOutcome out;
  const std::string job_name = fs::path(request.job_file).stem().string();
  std::ostringstream text;
  text << fmt::format(
      "validate {} ({}): measured (exec, threads, wall clock) vs predicted "
      "(analytic engine, compute profile of this CPU)\n",
      job_name, base.workload.name);
  text << table(rows);
  text << parts_table(rows);
  text << fmt::format(
      "median |error|: round {} (analytic), {} (analytic + Adam and embedding traffic); layer "
      "{}\n",
      median_text(errors.analytic.round), median_text(errors.terms.round),
      median_text(errors.layer));
  if (std::any_of(rows.begin(), rows.end(),
                  [](const Row& r) { return r.other_share > kContendedShare; }))
    text << fmt::format(
        "contended: while rows marked so were measured, other processes used more than {:.0f}% "
        "of the machine's CPU time (other = their CPU time / (wall time x cores), from "
        "/proc/stat): those measurements are not of this machine alone; rerun on an idle "
        "machine\n",
        100 * kContendedShare);
  text << fmt::format(
      "profiles: {} ({}); engine analytic; commit {}; timing concurrent (wall "
      "clock); seed {}; {:.0f} s\n",
      profiles.path.begin()->second, profiles.how, model::tauplan_git_commit(), seed, elapsed);
  // CSV and JSON.
  const fs::path csv = dir / (job_name + ".csv");
  std::ofstream c(csv);
  c << "workload,config,workers,layer_measured_s,layer_predicted_s,round_measured_s,"
       "round_analytic_s,round_terms_s,compute_measured_s,comm_measured_s,comm_predicted_s,"
       "adam_s,embedding_s,other_cpu_share,parts_rank,parts_stage,layers_measured_s,"
       "layers_predicted_s,head_measured_s,head_predicted_s,update_measured_s,update_predicted_s,"
       "embedding_measured_s,embedding_predicted_s\n";
  nlohmann::json j_rows = nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    c << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", base.workload.name,
                     r.config.label, r.config.workers, num(r.layer_measured),
                     num(r.layer_predicted), num(r.round_measured), num(r.round_analytic),
                     num(r.round_terms), num(r.compute_measured), num(r.comm_measured),
                     num(r.comm_predicted), num(r.terms.adam_s), num(r.terms.embedding_s),
                     num(r.other_share), parts_csv(r));
    j_rows.push_back({{"config", r.config.label},
                      {"workers", r.config.workers},
                      {"other_cpu_share", r.other_share},
                      {"layer_measured_s", r.layer_measured},
                      {"layer_predicted_s", r.layer_predicted},
                      {"round_measured_s", r.round_measured},
                      {"round_analytic_s", r.round_analytic},
                      {"round_terms_s", r.round_terms},
                      {"adam_s", r.terms.adam_s},
                      {"embedding_s", r.terms.embedding_s},
                      {"step_parts", parts_json(r)},
                      {"engines", errors.rows[i]}});
  }
  text << "rows: " << csv.string() << "\n";
  out.report = {{"job", request.job_file},
                {"workload", base.workload.name},
                {"engine", "analytic"},
                {"profiles", profiles.path},
                {"profiles_how", profiles.how},
                {"commit", model::tauplan_git_commit()},
                {"timing", "concurrent (threads, wall clock)"},
                {"seed", seed},
                {"rows", j_rows},
                {"summary",
                 {{"configurations", rows.size()},
                  {errors.analytic.label, errors.analytic.summary_json()},
                  {errors.terms.label, errors.terms.summary_json()},
                  {"median_abs_error_layer", validation::median_abs_or_null(errors.layer)}}},
                {"seconds", elapsed}};
  std::ofstream(dir / (job_name + ".json")) << out.report.dump(2) << "\n";
  out.text = text.str();
  const nlohmann::json round_t = validation::median_abs_or_null(errors.terms.round);
  if (request.max_round_error >= 0 &&
      (!round_t.is_number() || 100 * round_t.get<double>() > request.max_round_error))
    out.exceeded = fmt::format("median |round error| {} exceeds --max-round-error {}",
                               median_text(errors.terms.round), request.max_round_error);
  out.notes = notes;
  return out;
}

std::string run_compute_calibrate(const std::string& out, int threads,
                                  const std::vector<int>& dims) {
  exec::ComputeCalibrationRequest r;
  if (threads < 1 || threads > 64)
    throw InputError("command line", "--compute-threads", "1 to 64", std::to_string(threads));
  for (int d : dims)
    if (!exec::is_calibration_dimension(d))
      throw InputError("command line", "--compute-dims",
                       "sizes 5 x 2^j (20, 40, 80, ...: the calibration's hold-out rule)",
                       std::to_string(d));
  if (!dims.empty()) r.m_dims = r.nk_dims = dims;
  r.threads = threads;
  {
    std::ofstream probe(out, std::ios::app);
    if (!probe) throw InputError("command line", "--compute", "a writable file", out);
  }
  const exec::ComputeCalibration c = exec::measure_compute_calibration(r);
  std::ofstream(out) << model::compute_profile_json(c.profile);
  model::read_compute_profile(out);  // reads back
  return fmt::format(
      "compute profile: {}\n  device {}, {} GEMM shapes, peak {:.4g} flop/s (best measured), "
      "memory {:.4g} B/s, per-op {:.3g} s, hand-over {:.3g} s, {} thread(s), {:.1f} s\n",
      out, c.profile.device, c.profile.gemms.size(), c.profile.peak_flops,
      c.profile.memory_bandwidth_Bps, c.profile.launch_overhead_s, c.handoff_latency_s, threads,
      c.seconds);
}

}  // namespace tauplan::study
