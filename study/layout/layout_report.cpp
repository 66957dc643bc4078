// layout_report.cpp: see layout_report.hpp.
#include "study/layout/layout_report.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/layout.hpp"
#include "model/ir/layout_cost.hpp"
#include "model/ir/layout_memory.hpp"
#include "model/ir/result.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sim_job.hpp"
#include "study/common/inputs.hpp"
#include "study/common/platform_file.hpp"

namespace tauplan::study {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// The smallest GPU memory among `hosts` (0 when a host does not say).
double gpu_memory(const model::Platform& platform, const std::vector<int>& hosts) {
  double smallest = std::numeric_limits<double>::infinity();
  for (int h : hosts)
    smallest = std::min(smallest, platform.hosts[static_cast<size_t>(h)].gpu_memory_bytes);
  return std::isfinite(smallest) ? smallest : 0;
}

/// GPUs in the node of the platform's first worker (the largest tensor size kept in a node).
int gpus_per_node(const model::Platform& platform) {
  const std::vector<int> workers = platform.worker_hosts();
  if (workers.empty()) return 1;
  const std::string& node = platform.hosts[static_cast<size_t>(workers[0])].node;
  return static_cast<int>(std::count_if(workers.begin(), workers.end(), [&](int h) {
    return platform.hosts[static_cast<size_t>(h)].node == node;
  }));
}

/// The dense peak per GPU an MFU of the layout divides by: the mean of its hosts' catalog peaks
/// at the workload's precision (model::training_peak), or none with the reason.
struct PeakBasis {
  double flops = 0;
  std::string precision;
  std::string missing;
};

PeakBasis peak_basis(const model::Platform& platform, const std::vector<int>& hosts,
                     const model::Workload& workload) {
  PeakBasis basis;
  double sum = 0;
  for (int h : hosts) {
    const model::Host& host = platform.hosts[static_cast<size_t>(h)];
    const model::TrainingPeak peak =
        model::training_peak(host.gpu_model, "", workload.bytes_per_parameter);
    if (peak.flops <= 0) {
      basis.missing = "host " + host.name + ": " + peak.missing;
      return basis;
    }
    basis.precision = peak.precision;
    sum += peak.flops;
  }
  basis.flops = hosts.empty() ? 0 : sum / static_cast<double>(hosts.size());
  if (hosts.empty()) basis.missing = "no worker hosts";
  return basis;
}

/// MFU as a fraction, or a negative number when there is no peak.
double mfu(const model::LayoutTime& time, const PeakBasis& basis) {
  return basis.flops > 0 ? time.model_flops_per_worker / basis.flops : -1;
}

std::string mfu_text(double value) {
  return value >= 0 ? fmt::format("{:.1f}%", 100 * value) : std::string("-");
}

nlohmann::json mfu_json(double value, const PeakBasis& basis) {
  nlohmann::json j = {{"mfu", value >= 0 ? nlohmann::json(value) : nlohmann::json(nullptr)},
                      {"peak_flops_per_gpu", basis.flops},
                      {"precision", basis.precision}};
  if (!basis.missing.empty()) j["mfu_missing"] = basis.missing;
  return j;
}

nlohmann::json memory_json(const model::LayoutMemory& memory) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : memory.stages)
    stages.push_back({{"stage", s.stage},
                      {"layers", s.layers},
                      {"parameters", s.parameters},
                      {"weight_bytes", s.state.weights},
                      {"gradient_bytes", s.state.gradients},
                      {"optimizer_bytes", s.state.optimizer},
                      {"in_flight_micro_batches", s.in_flight},
                      {"activation_bytes", s.activation_bytes},
                      {"reserve_bytes", s.reserve_bytes},
                      {"total_bytes", s.total_bytes()}});
  return {{"stages", stages},
          {"peak_stage", memory.peak_stage},
          {"peak_bytes", memory.peak_bytes},
          {"reserve_bytes", memory.reserve_bytes}};
}

nlohmann::json time_json(const model::LayoutTime& time) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : time.stages)
    stages.push_back({{"stage", s.stage},
                      {"compute_s", s.compute_s},
                      {"elementwise_s", s.elementwise_s},
                      {"tensor_s", s.tensor_s},
                      {"context_s", s.context_s},
                      {"expert_s", s.expert_s},
                      {"busy_s", s.busy_s}});
  return {{"stages_per_micro_batch", stages},
          {"pipeline_send_s", time.pipeline_send_s},
          {"slot_s", time.slot_s},
          {"pipeline_s", time.pipeline_s},
          {"bubble_s", time.bubble_s},
          {"data_s", time.data_s},
          {"update_s", time.update_s},
          {"iteration_s", time.iteration_s},
          {"model_flop", time.model_flop},
          {"hardware_flop", time.hardware_flop},
          {"model_flops_per_worker", time.model_flops_per_worker}};
}

// The provenance of a layout report: job, platform (study/common/platform_file.hpp), workload,
// build.
nlohmann::json layout_context(const model::Job& job, const model::Workload& workload,
                              const std::string& platform_path, const model::Platform& platform) {
  const PlatformProvenance provenance = platform_provenance(platform_path, platform);
  nlohmann::json context = {{"verb", "layout"},
                            {"engine", "analytic (model/ir/layout_cost.hpp)"},
                            {"network_model", "alpha-beta over the platform's routes"},
                            {"job_file", job.file},
                            {"seed", job.integer("seed")},
                            {"platform_file", provenance.file},
                            {"platform_hash", provenance.hash},
                            {"workload", workload.name + " (" + workload.source + ")"},
                            {"version", model::tauplan_version()},
                            {"commit", model::tauplan_git_commit()},
                            {"date", model::utc_now_iso8601()}};
  for (const auto& [key, value] : provenance.extra)
    context[key] = value;
  return context;
}

/// What a layout report reads: the job, its workload and platform, the layout (checked) and its
/// placement on the platform.
struct LayoutInputs {
  model::Job job;
  model::Workload workload;
  std::string platform_path;
  model::Platform platform;
  int workers = 0;
  double batch = 0;
  model::Layout layout;
  model::MeshPlacement placement;
  model::LayoutTimeOptions options;
  double memory_bytes = 0;  ///< the smallest GPU memory of the placement (0: not given)
};

/// The job keys a layout report reads (below, and its context's seed); the flag of any other key
/// is refused, not ignored (layout --hosts, --strategies, --compute_s, --trace).
void refuse_keys_layout_does_not_read(const std::map<std::string, std::string>& overrides) {
  std::set<std::string> read = {"workload", "platform",        "workers",
                                "batch",    "step_overhead_s", "seed"};
  for (const model::KeySpec& spec : model::layout_job_keys())
    read.insert(spec.name);
  for (const auto& [key, value] : overrides)
    if (read.count(key) == 0)
      throw InputError(
          "command line", "--" + key,
          "no --" + key + " for layout (it reads " + fmt::format("{}", fmt::join(read, ", ")) + ")",
          "'" + value + "'");
}

LayoutInputs load_layout_inputs(const LayoutRequest& request) {
  refuse_keys_layout_does_not_read(request.overrides);
  LayoutInputs in;
  in.job = model::load_job(request.job_file, all_job_keys(), request.overrides);
  const model::Job& job = in.job;
  in.workload = load_job_workload(job);
  in.platform_path = resolve_platform_path(job);
  sim::NetworkOptions network = sim::network_options(job);
  network.origin = job.file;
  in.platform = load_user_platform(in.platform_path, network);
  in.workers = static_cast<int>(job.integer("workers"));
  in.batch = static_cast<double>(job.integer("batch"));
  in.layout = model::layout_from_job(job);
  model::check_layout(in.layout, in.workload, in.batch, in.workers, job.origins());
  in.placement = model::place_mesh(in.layout, in.platform, {}, job.origins());
  in.options.step_overhead_s = job.real("step_overhead_s");
  in.memory_bytes = gpu_memory(in.platform, in.placement.hosts);
  return in;
}

/// The search for the smallest layouts of the job's workers and batch that fit in
/// `memory_bytes` per GPU.
model::FitSearch fit_search(const LayoutInputs& in, double memory_bytes) {
  model::FitSearch search;
  search.workers = in.workers;
  search.batch = in.batch;
  search.memory_bytes = memory_bytes;
  search.max_tensor = gpus_per_node(in.platform);
  search.schedule = in.layout.schedule;
  return search;
}

/// --fit: the smallest layouts that fit, with their memory, step time and MFU.
LayoutOutcome fitting_layouts_report(const LayoutInputs& in, int count,
                                     const nlohmann::json& context) {
  LayoutOutcome outcome;
  std::string& out = outcome.text;
  const model::FitSearch search =
      fit_search(in, in.memory_bytes > 0 ? in.memory_bytes : std::numeric_limits<double>::max());
  const auto found =
      model::smallest_fitting_layouts(in.workload, search, static_cast<size_t>(count));
  out += fmt::format(
      "smallest layouts of {} workers for {} (batch {:g}) that fit in {:.1f} GiB "
      "per GPU on {}:\n",
      in.workers, in.workload.name, in.batch, in.memory_bytes / kGiB, in.platform_path);
  out += fmt::format("{:<40} {:>12} {:>14} {:>14} {:>7}\n", "layout", "memory GiB", "step s",
                     "model TF/s/GPU", "MFU");
  nlohmann::json rows = nlohmann::json::array();
  std::string missing;
  for (const auto& f : found) {
    const model::MeshPlacement fit_placement =
        model::place_mesh(f.layout, in.platform, {}, in.job.origins());
    const model::LayoutTime time =
        model::layout_time(in.workload, f.layout, in.batch, in.platform, fit_placement, in.options);
    const PeakBasis basis = peak_basis(in.platform, fit_placement.hosts, in.workload);
    if (missing.empty()) missing = basis.missing;
    out += fmt::format("{:<40} {:>12.1f} {:>14.4g} {:>14.1f} {:>7}\n", f.layout.label(),
                       f.memory.peak_bytes / kGiB, time.iteration_s,
                       time.model_flops_per_worker / 1e12, mfu_text(mfu(time, basis)));
    nlohmann::json row = {{"layout", f.layout.label()},
                          {"memory_per_gpu_bytes", f.memory.peak_bytes},
                          {"memory", memory_json(f.memory)},
                          {"time", time_json(time)}};
    row.update(mfu_json(mfu(time, basis), basis));
    rows.push_back(row);
  }
  if (found.empty()) out += "(none: the model state alone exceeds the workers' memory)\n";
  out += fmt::format(
      "memory GiB: the peak stage's, with the reserve (CUDA context, NCCL "
      "buffers, fragmentation; model/ir/layout_memory.hpp)\n");
  if (!missing.empty()) out += "MFU -: " + missing + "\n";
  outcome.document = {{"context", context}, {"fitting_layouts", rows}};
  return outcome;
}

/// InputError when the layout does not fit in the GPUs' memory, naming the smallest that do.
void check_layout_fits(const LayoutInputs& in, const model::LayoutMemory& memory) {
  if (!(in.memory_bytes > 0 && !memory.fits(in.memory_bytes))) return;
  const model::FitSearch search = fit_search(in, in.memory_bytes);
  std::string fitting;
  for (const auto& f : model::smallest_fitting_layouts(in.workload, search, 3))
    fitting += (fitting.empty() ? "" : "; ") +
               fmt::format("{} ({:.1f} GiB)", f.layout.label(), f.memory.peak_bytes / kGiB);
  throw InputError(
      in.job.file, "layout (tensor_parallel, pipeline_parallel, zero_stage, recompute ...)",
      fmt::format("a layout of {} workers that fits in {:.1f} GiB per GPU ({})", in.workers,
                  in.memory_bytes / kGiB,
                  fitting.empty() ? "none does: the model state exceeds the workers' memory"
                                  : "the smallest that do: " + fitting),
      fmt::format("{} needing {:.1f} GiB on stage {} (of it {:.1f} GiB reserve)", in.layout.label(),
                  memory.peak_bytes / kGiB, memory.peak_stage, memory.reserve_bytes / kGiB));
}

/// The first line, the mesh's dimensions and where they span, and the memory per worker by
/// stage with the check against the GPU memory.
std::string memory_text(const LayoutInputs& in, const model::LayoutMemory& memory) {
  const model::Layout& layout = in.layout;
  std::string out = fmt::format(
      "layout {} of {} ({:.4g}B parameters) on {}: {} workers, batch {:g}, "
      "micro-batch {:g}\n",
      layout.label(), in.workload.name, in.workload.parameters / 1e9, in.platform_path, in.workers,
      in.batch, layout.micro_batch(in.batch));
  out += "mesh:";
  for (const auto& dim : layout.mesh())
    out += fmt::format(" {} {} ({})", dim.name, dim.size,
                       model::dimension_span(in.placement, in.platform, dim.name));
  out += "\n\nmemory per worker, GiB\n";
  out += fmt::format("{:>5} {:>6} {:>12} {:>8} {:>9} {:>9} {:>9} {:>11} {:>8} {:>8}\n", "stage",
                     "layers", "parameters", "weights", "gradients", "optimizer", "in flight",
                     "activations", "reserve", "total");
  for (const auto& s : memory.stages)
    out += fmt::format(
        "{:>5} {:>6} {:>12.4g} {:>8.2f} {:>9.2f} {:>9.2f} {:>9.3g} {:>11.2f} "
        "{:>8.2f} {:>8.2f}\n",
        s.stage, s.layers, s.parameters, s.state.weights / kGiB, s.state.gradients / kGiB,
        s.state.optimizer / kGiB, s.in_flight, s.activation_bytes / kGiB, s.reserve_bytes / kGiB,
        s.total_bytes() / kGiB);
  out +=
      "reserve: CUDA context and NCCL buffers plus 10% of the activations for fragmentation "
      "(an estimate; model/ir/layout_memory.hpp)\n";
  out += in.memory_bytes > 0
             ? fmt::format(
                   "memory per GPU: peak {:.2f} GiB on stage {}, GPU memory {:.2f} GiB: "
                   "fits\n",
                   memory.peak_bytes / kGiB, memory.peak_stage, in.memory_bytes / kGiB)
             : fmt::format(
                   "memory per GPU: peak {:.2f} GiB on stage {} (the platform gives no GPU "
                   "memory: not checked)\n",
                   memory.peak_bytes / kGiB, memory.peak_stage);
  return out;
}

/// The traffic per step of a worker of the busiest stage, per mesh dimension.
std::string traffic_text(const model::Layout& layout, const model::LayoutTraffic& traffic,
                         bool mixture_of_experts) {
  std::string out = "\ntraffic per step, per worker of the busiest stage\n";
  out += fmt::format("  tensor:   {} all-reduces of {:.4g} MiB, {:.4g} GiB sent per rank\n",
                     traffic.tensor_allreduces, traffic.tensor_allreduce_bytes / (1 << 20),
                     traffic.tensor_bytes_per_rank / kGiB);
  out += fmt::format("  pipeline: {} messages of {:.4g} MiB per stage boundary\n",
                     traffic.pipeline_messages, traffic.pipeline_message_bytes / (1 << 20));
  out += fmt::format(
      "  data:     {:.4g} G values ({} Psi of {:.4g} G parameters), {:.4g} GiB "
      "sent per rank\n",
      traffic.data_values / 1e9, layout.zero_stage >= 3 ? 3 : 2, traffic.data_parameters / 1e9,
      traffic.data_bytes_per_rank / kGiB);
  if (layout.context > 1)
    out += fmt::format(
        "  context:  {} K/V blocks of {:.4g} MiB around the ring, {:.4g} GiB sent per rank\n",
        traffic.context_messages, traffic.context_message_bytes / (1 << 20),
        traffic.context_bytes_per_rank / kGiB);
  if (mixture_of_experts)  // every MoE model: its expert gradients, whatever e
    out += fmt::format(
        "  expert:   {} all-to-alls of {:.4g} MiB per rank, {:.4g} GiB sent per rank; expert "
        "gradients {:.4g} G parameters over {} ranks, {:.4g} GiB sent per rank\n",
        traffic.expert_alltoalls, traffic.expert_alltoall_bytes / (1 << 20),
        traffic.expert_bytes_per_rank / kGiB, traffic.expert_data_parameters / 1e9,
        model::expert_data_size(layout), traffic.expert_data_bytes_per_rank / kGiB);
  return out;
}

/// The time per step: each stage per micro-batch, the pipeline with its bubble, the step.
std::string time_text(const model::Layout& layout, const model::LayoutTime& time) {
  std::string out = "\ntime per step, s\n";
  for (const auto& s : time.stages) {
    out += fmt::format(
        "  stage {:>3} per micro-batch: compute {:.4g}, element-wise {:.4g}, "
        "tensor all-reduces {:.4g}",
        s.stage, s.compute_s, s.elementwise_s, s.tensor_s);
    if (layout.context > 1) out += fmt::format(", K/V ring exposed {:.4g}", s.context_s);
    if (layout.expert > 1) out += fmt::format(", all-to-alls {:.4g}", s.expert_s);
    out += "\n";
  }
  out += fmt::format(
      "  slot {:.4g} (with sends {:.4g}) x (m + (p-1)/v) = pipeline {:.4g}, of it "
      "bubble {:.4g} ({:.1f}%)\n",
      time.slot_s, time.pipeline_send_s, time.pipeline_s, time.bubble_s,
      time.pipeline_s > 0 ? 100 * time.bubble_s / time.pipeline_s : 0.0);
  out += fmt::format(
      "  data-parallel {:.4g}, update {:.4g}: step {:.4g} s, {:.1f} model TFLOP/s "
      "per worker\n",
      time.data_s, time.update_s, time.iteration_s, time.model_flops_per_worker / 1e12);
  return out;
}

nlohmann::json traffic_json(const model::LayoutTraffic& traffic) {
  return {{"tensor_allreduces", traffic.tensor_allreduces},
          {"tensor_allreduce_bytes", traffic.tensor_allreduce_bytes},
          {"tensor_bytes_per_rank", traffic.tensor_bytes_per_rank},
          {"pipeline_messages", traffic.pipeline_messages},
          {"pipeline_message_bytes", traffic.pipeline_message_bytes},
          {"data_values", traffic.data_values},
          {"data_bytes_per_rank", traffic.data_bytes_per_rank},
          {"context_messages", traffic.context_messages},
          {"context_message_bytes", traffic.context_message_bytes},
          {"context_bytes_per_rank", traffic.context_bytes_per_rank},
          {"expert_alltoalls", traffic.expert_alltoalls},
          {"expert_alltoall_bytes", traffic.expert_alltoall_bytes},
          {"expert_bytes_per_rank", traffic.expert_bytes_per_rank},
          {"expert_data_parameters", traffic.expert_data_parameters},
          {"expert_data_bytes_per_rank", traffic.expert_data_bytes_per_rank}};
}

}  // namespace

LayoutOutcome run_layout(const LayoutRequest& request) {
  const LayoutInputs in = load_layout_inputs(request);
  const nlohmann::json context = layout_context(in.job, in.workload, in.platform_path, in.platform);
  if (request.fit) return fitting_layouts_report(in, request.count, context);

  const model::LayoutMemory memory = model::layout_memory(in.workload, in.layout, in.batch);
  check_layout_fits(in, memory);
  const model::LayoutTime time =
      model::layout_time(in.workload, in.layout, in.batch, in.platform, in.placement, in.options);
  const model::LayoutTraffic traffic = model::layout_traffic(in.workload, in.layout, in.batch);

  LayoutOutcome outcome;
  std::string& out = outcome.text;
  out += memory_text(in, memory);
  out += traffic_text(in.layout, traffic, in.workload.transformer->is_moe());
  out += time_text(in.layout, time);
  const PeakBasis basis = peak_basis(in.platform, in.placement.hosts, in.workload);
  const double utilisation = mfu(time, basis);
  out += utilisation >= 0 ? fmt::format(
                                "MFU {} (model flop per worker-second / the {} dense peak {:.4g} "
                                "TFLOP/s per GPU)\n",
                                mfu_text(utilisation), basis.precision, basis.flops / 1e12)
                          : fmt::format("MFU - ({})\n", basis.missing);
  const std::string compute = compute_sources(in.platform);
  out += "compute: " + compute + "\n";
  outcome.document = {{"context", context},
                      {"compute", compute},
                      {"layout", in.layout.label()},
                      {"workers", in.workers},
                      {"batch", in.batch},
                      {"gpu_memory_bytes", in.memory_bytes},
                      {"memory_per_gpu_bytes", memory.peak_bytes},
                      {"memory", memory_json(memory)},
                      {"traffic", traffic_json(traffic)},
                      {"time", time_json(time)}};
  outcome.document.update(mfu_json(utilisation, basis));
  return outcome;
}

}  // namespace tauplan::study
