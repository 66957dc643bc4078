// transformer_measure.cpp: a transformer workload's shape as the block, the job's strategies as
// layouts of it, and their measurements in the one result schema.
#include "exec/transformer_measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "exec/job_keys.hpp"
#include "exec/measure.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/mpi_peers.hpp"
#include "exec/p2p_collective.hpp"
#include "exec/rank_times.hpp"
#include "exec/report.hpp"
#include "exec/server_processing.hpp"
#include "exec/thread_message_communicator.hpp"
#include "exec/token_stream.hpp"
#include "exec/transformer_trainer.hpp"
#include "model/base/error.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::exec {
namespace {

std::string describe(const BlockConfig& c) {
  return fmt::format(
      "decoder {} layers, hidden {}, {} heads ({} kv), {} {}, {}, sequence {}, vocabulary {}",
      c.layers, c.hidden, c.heads, c.kv_heads,
      c.feed_forward == BlockFeedForward::SwiGlu ? "swiglu" : "gelu", c.ffn_hidden,
      c.norm == BlockNorm::RmsNorm ? "rmsnorm" : "layernorm", c.sequence, c.vocabulary);
}

/// The job keys of the MLP's measurement that mean nothing here: refused when given, so that
/// a job never seems to ask for what does not happen.
void refuse_mlp_keys(const model::Job& job, const ExecSettings& settings) {
  for (const char* key : {"target_accuracy", "hidden", "data_dir", "train_samples", "eval_samples"})
    if (job.given(key))
      throw InputError(job.origin_of(key),
                       "no value with a transformer workload (exec trains its decoder block on "
                       "the synthetic token stream for max_steps steps and reports the loss)",
                       job.text(key));
  if (settings.train.timing != Timing::Concurrent)
    throw InputError(job.origin_of("timing"),
                     "concurrent with a transformer workload (its ranks run at once on the wall "
                     "clock)",
                     to_string(settings.train.timing));
  if (settings.device != Device::Cpu)
    throw InputError(job.origin_of("device"), "cpu with a transformer workload", "cuda");
}

bool syncs_through_communicator(const TransformerTrainOptions& o) {
  return o.reduction == DataReduction::Communicator && o.data > 1;
}

/// The server ranks sync's collective algorithm adds under mpirun (ps, sparknet: the plan's).
int server_ranks(const model::Job& job, const model::Plan& plan) {
  return p2p_collective(plan.collective, job.origins()).uses_servers()
             ? static_cast<int>(plan.server_hosts.size())
             : 0;
}

/// Under mpirun (`world` processes) a layout runs one rank per process, sync one worker per
/// process and one per server of its algorithm, single on rank 0 alone; on threads the
/// communicator is threads, or thread-messages for sync (the plan's collective algorithm).
void check_transport(const model::Job& job, const ExecSettings& settings, int world,
                     const model::Plan& plan, const model::Platform& platform,
                     const TransformerTrainOptions& o) {
  const bool distributed = world > 1;
  const bool sync = syncs_through_communicator(o);
  const std::string& asked = settings.communicator;
  const bool allowed =
      asked == "auto" ||
      (distributed ? asked == "mpi" : asked == "threads" || (sync && asked == "thread-messages"));
  if (!allowed)
    throw InputError(
        job.origin_of("communicator"),
        distributed ? "mpi or auto with a transformer workload under mpirun"
        : sync      ? "threads, thread-messages or auto with a transformer's sync"
                    : "threads or auto with a transformer " + plan.strategy + " (not under mpirun)",
        asked);
  if (sync && asked != "threads" && (distributed || asked == "thread-messages"))
    p2p_collective(plan.collective, job.origins()).check(plan.worker_hosts, platform);
  if (!distributed || o.workers() == 1) return;
  const int servers = sync ? server_ranks(job, plan) : 0;
  if (o.workers() + servers != world)
    throw InputError(
        job.origin_of("workers"),
        servers == 0
            ? fmt::format("the MPI world size {} for {} (one rank per worker: mpirun -np K; one "
                          "worker runs on rank 0 alone)",
                          world, plan.strategy)
            : fmt::format("the MPI world size minus the {} server rank(s) of '{}' (mpirun -np "
                          "K+s: one rank per worker, then one per server), here {} - {} = {}",
                          servers, plan.collective, world, servers, world - servers),
        std::to_string(o.workers()));
}

/// The layout a strategy asks for, from its Plan and normalised options; InputError for what
/// exec's transformer trainer does not run.
TransformerTrainOptions layout_of(const model::Job& job, const model::Strategy& strategy,
                                  const model::Plan& plan, const model::StrategyOptions& options,
                                  const model::Platform& platform) {
  TransformerTrainOptions o;
  o.origins = job.origins();
  o.batch = static_cast<long long>(plan.batch);
  o.micro_batches = std::max(1, plan.micro_batches);
  if (plan.asynchronous || (!strategy.is_baseline() && !strategy.splits_batch()))
    throw InputError(job.origin_of("strategies"),
                     "single, sync or mesh with a transformer workload (exec trains its block "
                     "with synchronous steps, not local steps or a parameter server)",
                     plan.strategy);
  if (plan.overlap)
    throw InputError(job.origin_of("overlap"),
                     "false with a transformer workload (exec all-reduces after backward)", "true");
  for (double slowdown : worker_slowdowns(plan, platform))
    if (slowdown != 1)
      throw InputError(job.origin_of("platform"),
                       "worker hosts of one speed with a transformer workload (exec emulates no "
                       "slow host here)",
                       "hosts of different speeds");
  if (!strategy.splits_model()) {
    o.data = plan.workers;
    o.reduction = DataReduction::Communicator;
    return o;
  }
  const model::Layout& layout = options.layout;
  if (layout.zero_stage != 0)
    throw InputError(job.origin_of("zero_stage"), "0 with a transformer workload in exec",
                     std::to_string(layout.zero_stage));
  if (layout.recompute != model::Recompute::None)
    throw InputError(job.origin_of("recompute"), "none with a transformer workload in exec",
                     job.text("recompute"));
  if (layout.sequence_parallel)
    throw InputError(job.origin_of("sequence_parallel"),
                     "false with a transformer workload in exec", "true");
  if (layout.rank_order != model::RankOrder::TensorDataPipeline)
    throw InputError(job.origin_of("rank_order"),
                     "tp-dp-pp to measure strategy mesh (the trainer numbers its ranks tensor, "
                     "data, pipeline)",
                     job.text("rank_order"));
  o.data = layout.data;
  o.tensor = layout.tensor;
  o.pipeline = layout.pipeline;
  o.micro_batches = layout.micro_batches;
  o.schedule = layout.schedule;
  o.reduction = DataReduction::PeerAllReduce;
  return o;
}

/// The mean of the last tenth of the steps' losses (at least one step).
double final_loss(const std::vector<double>& loss) {
  const std::size_t tail = std::max<std::size_t>(1, loss.size() / 10);
  double sum = 0;
  for (std::size_t s = loss.size() - tail; s < loss.size(); ++s)
    sum += loss[s];
  return sum / static_cast<double>(tail);
}

Measurement to_measurement(const model::Plan& plan, const model::Platform& platform,
                           const ExecSettings& settings, const TransformerTrainOptions& o,
                           const TransformerReport& report) {
  Measurement m = even_measurement(plan);
  m.communicator = "threads";
  m.engine = settings.train.engine;
  m.timing = Timing::Concurrent;
  m.combine = settings.train.combine;
  m.dataset = "synthetic-tokens";
  m.dataset_source = fmt::format("exec/token_stream.hpp (Markov chain, seed {})", o.seed);
  m.synthetic = true;
  m.mlp = describe(o.block);
  m.parameters = static_cast<long long>(report.parameters);
  m.learning_rate = static_cast<double>(o.adam.learning_rate);
  m.seed = o.seed;
  m.clock = "wall";
  add_rank_workers(m, report.ranks, plan, platform, o.batch / o.data, report.steps);
  m.round_median_s = report.step_median_s;
  m.round_mean_s = report.wall_s / static_cast<double>(report.steps);
  m.rounds = m.steps = report.steps;
  m.total_s = report.wall_s;
  return m;
}

/// What only a transformer run has: the loss, the layout's ranks; the accuracy fields of the
/// MLP's rows are null.
void add_transformer_extra(Measurement& m, const TransformerTrainOptions& o,
                           const TransformerReport& report) {
  m.extra = {{"layout", report.label},
             {"ranks", ranks_json(report.ranks)},
             {"model", describe(o.block)},
             {"optimizer", "adam"},
             {"loss",
              {{"first", report.loss.front()},
               {"final", final_loss(report.loss)},
               {"final_steps", std::max<std::size_t>(1, report.loss.size() / 10)},
               {"entropy_floor", synthetic_entropy_floor(o.block, o.seed)},
               {"uniform", std::log(static_cast<double>(o.block.vocabulary))}}},
             {"loss_per_step", report.loss},
             {"target_accuracy", nullptr},
             {"final_accuracy", nullptr},
             {"reached_target", nullptr},
             {"rounds_to_target", nullptr},
             {"steps_to_target", nullptr}};
}

/// The transport a run of `o` takes: its communicator's name (the MLP rows' `communicator`).
std::string transport_name(const ExecSettings& settings, const TransformerTrainOptions& o,
                           bool distributed) {
  if (distributed && o.workers() > 1) return "mpi";
  if (!distributed && syncs_through_communicator(o) && settings.communicator == "thread-messages")
    return "thread-messages";
  return "threads";
}

/// What one process takes from a run: rank 0's report (or this process's, without MPI), and the
/// servers' processing under mpirun.
struct RunOutcome {
  TransformerReport report;
  nlohmann::json servers = nlohmann::json::array();
  bool reporter = true;
};

/// Sync under mpirun: a worker rank trains through the MPI communicator (the plan's collective
/// algorithm) with the workers' own peers for the rest; a server rank serves, then sends its
/// processing to rank 0.
RunOutcome run_sync_mpi(const model::Job& job, const model::Plan& plan,
                        const model::Platform& platform, TransformerTrainOptions o) {
  RunOutcome out;
  MpiCommunicator comm(plan, platform, job.origins());
  if (comm.is_server()) {
    ServerProcessing processing;
    (void)comm.serve(0, &processing);
    (void)comm.gather_to_first(server_processing_json(processing).dump());
    out.reporter = false;
    return out;
  }
  comm.align_start();
  o.communicator = &comm;
  out.report = train_transformer(o, comm.worker_peers());
  comm.finish();
  if (comm.size() > comm.workers())
    for (const std::string& part : comm.gather_to_first(std::string()))
      if (!part.empty()) out.servers.push_back(nlohmann::json::parse(part));
  out.reporter = comm.rank() == 0;
  return out;
}

/// One run of `o` on `transport`: on threads; under mpirun one rank per worker (sync: and per
/// server of its algorithm), or one worker on rank 0 alone while the others wait.
RunOutcome run_layout(const model::Job& job, const model::Plan& plan,
                      const model::Platform& platform, TransformerTrainOptions o, MpiSession* mpi,
                      const std::string& transport) {
  RunOutcome out;
  const bool distributed = mpi && mpi->size() > 1;
  if (transport == "mpi" && syncs_through_communicator(o))
    return run_sync_mpi(job, plan, platform, o);
  if (transport == "mpi") {
    MpiPeers peers;
    out.report = train_transformer(o, peers);
    out.reporter = peers.rank() == 0;
    return out;
  }
  std::unique_ptr<Communicator> messages;
  if (transport == "thread-messages") {
    messages = std::make_unique<ThreadMessageCommunicator>(plan, platform, job.origins());
    o.communicator = messages.get();
  }
  if (!distributed || mpi->rank() == 0) out.report = train_transformer_threads(o);
  if (messages) messages->finish();
  if (distributed) mpi->barrier(false);  // no deadline: rank 0 trains alone
  out.reporter = !distributed || mpi->rank() == 0;
  return out;
}

void require_transformer(bool ok, const model::Workload& w, const std::string& key,
                         const std::string& expected, const std::string& got) {
  if (!ok) throw InputError(w.source, key, expected, got);
}

}  // namespace

BlockConfig transformer_block_config(const model::Workload& workload) {
  const model::Transformer& t = *workload.transformer;
  require_transformer(t.positions == model::PositionEmbedding::Learned, workload,
                      "transformer.positions",
                      "learned (exec's decoder block has learned position embeddings)", "rotary");
  require_transformer(!t.tied_embeddings, workload, "transformer.tied_embeddings",
                      "false (exec's decoder block has an untied vocabulary head)", "true");
  require_transformer(!t.linear_bias, workload, "transformer.linear_bias",
                      "false (exec's decoder block has no biases in its linear layers)", "true");
  require_transformer(t.token_types == 0, workload, "transformer.token_types",
                      "0 (exec's decoder block has no segment embeddings)",
                      std::to_string(t.token_types));
  require_transformer(t.head_parameters == 0, workload, "transformer.head_parameters",
                      "0 (exec's decoder block has no task heads)",
                      fmt::format("{:g}", t.head_parameters));
  require_transformer(workload.bytes_per_parameter == 4, workload, "bytes_per_parameter",
                      "4 (exec trains the block in fp32 on the CPU)",
                      fmt::format("{:g}", workload.bytes_per_parameter));
  BlockConfig c;
  c.vocabulary = t.vocabulary;
  c.hidden = t.hidden;
  c.heads = t.heads;
  c.kv_heads = t.kv_heads;
  c.ffn_hidden = t.ffn_hidden;
  c.layers = t.layers;
  c.sequence = t.sequence;
  c.micro_batch = 1;
  c.norm =
      t.normalization == model::Normalization::RmsNorm ? BlockNorm::RmsNorm : BlockNorm::LayerNorm;
  c.feed_forward = t.feed_forward == model::FeedForward::SwiGlu ? BlockFeedForward::SwiGlu
                                                                : BlockFeedForward::Gelu;
  require_transformer(c.problem().empty(), workload, "transformer",
                      "a shape exec's decoder block can take", c.problem());
  return c;
}

std::vector<Measurement> measure_transformer(const model::Job& job, const model::Workload& workload,
                                             const model::Platform& platform,
                                             const std::vector<std::string>& strategies,
                                             MpiSession* mpi, std::ostream* log) {
  const ExecSettings settings = exec_settings(job);
  const bool distributed = mpi && mpi->size() > 1;
  const BlockConfig block = transformer_block_config(workload);
  refuse_mlp_keys(job, settings);
  const model::StrategyOptions options = model::strategy_options(job);
  const std::unique_ptr<model::ConvergenceModel> convergence = model::convergence_model(job);
  std::vector<std::pair<model::Plan, TransformerTrainOptions>> runs;
  for (const std::string& name : strategies) {  // every plan and layout checked before training
    model::Plan plan = model::make_plan(name, options, workload, platform, *convergence);
    const model::Strategy& strategy = model::strategy(name, job.file);
    TransformerTrainOptions o =
        layout_of(job, strategy, plan, strategy.normalise(options), platform);
    o.block = block;
    o.adam.learning_rate = static_cast<float>(settings.train.learning_rate);
    o.seed = settings.train.seed;
    o.steps = settings.train.max_steps;
    o.combine = settings.train.combine;
    check_transformer_layout(o);
    check_transport(job, settings, distributed ? mpi->size() : 1, plan, platform, o);
    runs.emplace_back(std::move(plan), o);
  }
  for (auto& [plan, o] : runs) {  // each rank runs its part of the job's own Plan
    if (o.reduction == DataReduction::Communicator) continue;  // sync: no layout passes
    o.plan = &plan;
    try {
      (void)transformer_rank_programs(o);
    } catch (const std::invalid_argument& e) {
      throw InputError(job.origin_of("strategies"),
                       "a layout exec's transformer trainer can run from its Plan", e.what());
    }
  }
  if (log)
    *log << "measure: data synthetic token stream (exec/token_stream.hpp, seed "
         << settings.train.seed << "): entropy floor "
         << synthetic_entropy_floor(block, settings.train.seed) << " nats, uniform "
         << std::log(static_cast<double>(block.vocabulary)) << "; " << describe(block) << " ("
         << block_parameters(block).total << " parameters, fp32, Adam)\n";
  const double parameters = static_cast<double>(block_parameters(block).total);
  if (log && std::fabs(workload.parameters - parameters) > 0.01 * parameters)
    *log << "measure: note: workload '" << workload.name << "' has " << workload.parameters
         << " parameters; the measured block has " << parameters << "\n";
  std::vector<Measurement> measurements;
  for (const auto& [plan, o] : runs) {
    const std::string transport = transport_name(settings, o, distributed);
    if (log)
      *log << "measure: " << plan.strategy << " " << o.label() << " K=" << o.workers()
           << " b=" << o.batch << " on " << transport
           << (syncs_through_communicator(o) && transport != "threads"
                   ? " (" + plan.collective + ")"
                   : std::string())
           << " (concurrent, wall clock), " << o.steps << " steps ...\n";
    const auto started = std::chrono::steady_clock::now();
    RunOutcome run = run_layout(job, plan, platform, o, mpi, transport);
    if (!run.reporter) continue;  // rank 0 reports
    Measurement m = to_measurement(plan, platform, settings, o, run.report);
    m.communicator = transport;
    m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    m.eval_wall_s = std::max(0.0, m.wall_s - m.total_s);
    add_transformer_extra(m, o, run.report);
    if (!run.servers.empty()) m.extra["servers"] = std::move(run.servers);
    if (log)
      *log << "measure: " << plan.strategy << " " << o.label() << ": loss "
           << run.report.loss.front() << " -> " << final_loss(run.report.loss) << " after "
           << run.report.steps << " steps, training " << m.total_s
           << " s, median step of the slowest rank " << m.round_median_s << " s\n";
    measurements.push_back(std::move(m));
  }
  return measurements;
}

}  // namespace tauplan::exec
