// measure.cpp: communicator choice, replica placement and the loop over strategies.
#include "exec/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "exec/async_cycle.hpp"
#include "exec/async_ranks.hpp"
#include "exec/cpu_replica.hpp"
#include "exec/dataset.hpp"
#include "exec/job_keys.hpp"
#include "exec/layout_program.hpp"
#include "exec/mpi_peers.hpp"
#include "exec/pipeline_parallel.hpp"
#include "exec/report.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/thread_message_communicator.hpp"
#include "exec/transformer_measure.hpp"
#include "model/base/error.hpp"
#include "model/ir/mlp_layout.hpp"
#include "model/ir/strategy.hpp"
#ifdef TAUPLAN_HAVE_CUDA
#include "exec/cuda/cuda_backend.hpp"
#endif

namespace tauplan::exec {
namespace {

struct Setup {
  std::unique_ptr<Communicator> comm;
  ReplicaFactory factory;
  bool participate = true;
  bool alone = false;              // rank 0 trains while the other ranks wait (single under MPI)
  MpiCommunicator* mpi = nullptr;  // comm, when it is the MPI communicator
};

#ifdef TAUPLAN_HAVE_CUDA
/// The node-local rank under an MPI launcher (for picking a GPU), else the world rank.
int local_rank(int world_rank) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return world_rank;
}

int require_gpus(const model::Job& job, int needed, const std::string& what) {
  std::string why;
  const int gpus = cuda::usable_devices(&why);
  if (gpus == 0)
    throw InputError(job.origin_of("device"), "cpu, or a machine with a usable CUDA GPU",
                     "cuda with none (" + why + ")");
  if (gpus < needed)
    throw InputError(job.origin_of("workers"),
                     "at most " + std::to_string(gpus) + " workers " + what,
                     std::to_string(needed));
  return gpus;
}
#endif

/// The communicator a synchronous plan runs on ("threads", "thread-messages", "mpi", "device" or
/// "nccl"), with every refusal that needs no data: the device's, a launcher's, a world size's.
/// measure() asks it for every strategy before reading the data, so that a bad choice is one
/// line; make_setup() asks again to build it.
std::string communicator_kind(const model::Job& job, const ExecSettings& settings,
                              const model::Plan& plan, MpiSession* mpi) {
  const int world = mpi ? mpi->size() : 1;
  const bool cuda = settings.device == Device::Cuda;
  std::string kind = settings.communicator;
  if (kind == "auto") kind = world > 1 ? (cuda ? "nccl" : "mpi") : (cuda ? "device" : "threads");
  if (!cuda && (kind == "device" || kind == "nccl"))
    throw InputError(job.origin_of("communicator"),
                     "threads, thread-messages or mpi with device: cpu", kind);
  if (cuda && (kind == "threads" || kind == "thread-messages" || kind == "mpi"))
    throw InputError(job.origin_of("communicator"), "device or nccl with device: cuda", kind);
#ifndef TAUPLAN_HAVE_CUDA
  if (cuda)
    throw InputError(job.origin_of("device"), "cpu (this tauplan was built without CUDA)", "cuda");
#endif
  // An MPI communicator asked for outside a launcher is refused for every strategy (`single`
  // included: it is never run on threads instead).
  if (kind == "mpi" && !mpi)
    throw InputError(job.origin_of("communicator"),
                     "threads, or mpi under an MPI launcher (mpirun -np " +
                         std::to_string(plan.workers) + " tauplan measure ...)",
                     "mpi without a launcher");
  const bool distributed = kind == "mpi" || (kind == "nccl" && world > 1);
  if (!distributed && world > 1 && plan.workers > 1)
    // A process-local communicator under mpirun: only `single` makes sense, on rank 0.
    throw InputError(
        job.origin_of("communicator"),
        "mpi or nccl (or auto) when started by mpirun with " + std::to_string(world) + " ranks",
        kind);
  return kind;
}

/// An asynchronous plan's choices that need no data (device, communicator, timing), checked with
/// the synchronous plans' before the data is read.
void check_asynchronous_choices(const model::Job& job, const ExecSettings& settings,
                                const model::Plan& plan, MpiSession* mpi) {
  if (settings.device != Device::Cpu)
    throw InputError(job.origin_of("device"), "cpu for " + plan.strategy, "cuda");
  const bool distributed = mpi && mpi->size() > 1;
  const std::string& kind = settings.communicator;
  if (kind != "auto" && kind != (distributed ? "mpi" : "threads"))
    throw InputError(job.origin_of("communicator"),
                     std::string(distributed ? "mpi or auto" : "threads or auto") + " for " +
                         plan.strategy + (distributed ? " under mpirun" : ""),
                     kind);
  check_async_timing(plan, settings.train);
}

Setup make_setup(const model::Job& job, const ExecSettings& settings, const model::Plan& plan,
                 const model::Platform& platform, MpiSession* mpi) {
  const int world = mpi ? mpi->size() : 1;
  const int rank = mpi ? mpi->rank() : 0;
  const bool cuda = settings.device == Device::Cuda;
  std::string kind = communicator_kind(job, settings, plan, mpi);
  Setup setup;
  const bool distributed = kind == "mpi" || (kind == "nccl" && world > 1);
  if (!distributed && world > 1) {  // `single` under mpirun, on a process-local communicator
    setup.participate = rank == 0;
    setup.alone = rank == 0;
  }
  if (distributed && plan.workers == 1 && plan.server_hosts.empty()) {
    // `single` in an MPI run: rank 0 alone, with a process-local communicator. (One worker with
    // parameter servers pushes to and pulls from their ranks.)
    setup.participate = rank == 0;
    setup.alone = rank == 0 && world > 1;
    kind = cuda ? "device" : "threads";
  }
  if (!setup.participate) return setup;

  if (kind == "threads") {
    setup.comm = std::make_unique<ThreadCommunicator>(plan.workers);
    setup.factory = cpu_replica_factory();
  } else if (kind == "thread-messages") {
    setup.comm = std::make_unique<ThreadMessageCommunicator>(plan, platform, job.origins());
    setup.factory = cpu_replica_factory();
  } else if (kind == "mpi") {
    auto communicator = std::make_unique<MpiCommunicator>(plan, platform, job.origins());
    setup.mpi = communicator.get();
    setup.comm = std::move(communicator);
    setup.factory = cpu_replica_factory();
  }
#ifdef TAUPLAN_HAVE_CUDA
  else if (kind == "device") {
    require_gpus(job, 1, "on one GPU");
    setup.comm = std::make_unique<cuda::DeviceCommunicator>(plan.workers, 0);
    setup.factory = cuda::cuda_replica_factory({});
  } else if (kind == "nccl") {
    if (!cuda::nccl_compiled())
      throw InputError(job.origin_of("communicator"),
                       "device (this tauplan was built without NCCL)", "nccl");
    cuda::NcclId id{};
    if (world > 1) {
      if (plan.workers != world)
        throw InputError(
            job.origin_of("workers"),
            "the MPI world size " + std::to_string(world) + " (one GPU per rank: mpirun -np K)",
            std::to_string(plan.workers));
      const int gpus = require_gpus(job, 1, "per node");
      const int device = local_rank(rank);
      if (device >= gpus)
        throw InputError(
            job.origin_of("workers"),
            "at most " + std::to_string(gpus) + " ranks per node (NCCL needs one GPU per rank)",
            "local rank " + std::to_string(device));
      if (rank == 0) id = cuda::nccl_unique_id();
      mpi->broadcast(id.data(), static_cast<int>(id.size()), 0);
      setup.comm = std::make_unique<cuda::NcclCommunicator>(id, plan.workers, rank,
                                                            std::vector<int>{device}, rank, world);
      std::vector<int> device_of(static_cast<std::size_t>(plan.workers), 0);
      device_of[static_cast<std::size_t>(rank)] = device;
      setup.factory = cuda::cuda_replica_factory(device_of);
    } else {
      require_gpus(job, plan.workers, "(NCCL needs one GPU per worker; use communicator: device)");
      std::vector<int> devices;
      for (int k = 0; k < plan.workers; ++k)
        devices.push_back(k);
      id = cuda::nccl_unique_id();
      setup.comm = std::make_unique<cuda::NcclCommunicator>(id, plan.workers, 0, devices, 0, 1);
      setup.factory = cuda::cuda_replica_factory(devices);
    }
  }
#endif
  return setup;
}

/// An asynchronous plan: threads in this process, or under an MPI launcher one rank per worker
/// and per server.
Measurement measure_asynchronous(const ExecSettings& settings, const model::Plan& plan,
                                 const model::Platform& platform, const Dataset& data,
                                 const MlpShape& shape, MpiSession* mpi, bool& reporter,
                                 std::ostream* log) {
  // Its device, communicator and timing were checked before the data (measure()).
  const bool distributed = mpi && mpi->size() > 1;
  if (log && (!mpi || mpi->rank() == 0))
    *log << "measure: " << plan.strategy << " K=" << plan.workers
         << " servers=" << plan.server_hosts.size() << " b=" << plan.batch << " on "
         << (distributed ? "mpi" : "threads") << " (concurrent, wall clock) ...\n";
  if (distributed) {
    MpiPeers peers;
    return train_async(plan, platform, data, shape, settings.train, peers, reporter);
  }
  reporter = true;
  return train_async_threads(plan, platform, data, shape, settings.train);
}

[[noreturn]] void throw_hidden_mismatch(const model::Job& job, const model::Workload& workload,
                                        const std::string& got) {
  std::string widths;
  for (int w : workload.mlp_widths)
    widths += (widths.empty() ? "" : "-") + std::to_string(w);
  throw InputError(job.origin_of("hidden"),
                   "the hidden widths of workload '" + workload.name + "' (" + widths +
                       ") for strategy mesh (the Plan splits the workload's layers)",
                   got);
}

std::string mlp_text(const std::vector<int>& hidden) {
  std::string text = "[";
  for (size_t i = 0; i < hidden.size(); ++i)
    text += (i ? ", " : "") + std::to_string(hidden[i]);
  return text + "]";
}

/// Before anything is loaded or logged: each model-splitting strategy's layout must be one exec's
/// layout trainer runs on this MLP (its Plan splits the workload's layers).
void check_layouts_measurable(const model::Job& job, const ExecSettings& settings,
                              const model::Workload& workload,
                              const std::vector<std::string>& strategies) {
  for (const std::string& name : strategies) {
    if (!model::strategy(name, job.file).splits_model()) continue;
    const std::vector<int>& widths = workload.mlp_widths;
    if (widths.empty())
      throw InputError(job.origin_of("workload"),
                       "an MLP workload (widths) or a transformer to measure strategy mesh",
                       "'" + workload.name + "'");
    if (settings.hidden != std::vector<int>(widths.begin() + 1, widths.end() - 1))
      throw_hidden_mismatch(job, workload, mlp_text(settings.hidden));
    if (settings.train.timing != Timing::Concurrent)
      throw InputError(job.origin_of("timing"),
                       "concurrent for strategy " + name +
                           " (a layout's ranks wait on each other's messages: only ranks "
                           "running at once on the wall clock measure it)",
                       to_string(settings.train.timing));
    if (job.text("rank_order") != model::to_string(model::RankOrder::TensorDataPipeline))
      throw InputError(job.origin_of("rank_order"),
                       "tp-dp-pp to measure strategy mesh (the trainer numbers its ranks tensor, "
                       "data, pipeline)",
                       job.text("rank_order"));
    if (job.integer("zero_stage") != 0)
      throw InputError(job.origin_of("zero_stage"),
                       "0 to measure strategy mesh on an MLP (exec's layouts shard no parameters, "
                       "gradients or optimizer state)",
                       job.text("zero_stage"));
    // The layout's shape (stages, divisible widths), before the data is loaded.
    model::check_mlp_layout(model::layout_from_job(job), workload, job.real("batch"),
                            static_cast<int>(job.integer("workers")), job.origins());
  }
}

/// Strategy mesh: the MLP split over the job's layout (exec/pipeline_parallel.hpp), one thread
/// per rank, or one MPI rank per worker under mpirun, every rank at once on the wall clock. The
/// row's round is the median over steps of the slowest rank's step; its compute and
/// communication are that rank's medians (communication: receives, which include the pipeline's
/// bubble, and tensor and data all-reduces).
Measurement measure_layout(const model::Job& job, const ExecSettings& settings,
                           const model::Plan& plan, const model::StrategyOptions& options,
                           const model::Workload& workload, const model::Platform& platform,
                           const Dataset& data, const MlpShape& shape, MpiSession* mpi,
                           bool& reporter, std::ostream* log) {
  if (workload.mlp_widths != shape.widths)
    throw_hidden_mismatch(job, workload, "an MLP " + shape.to_string());
  if (settings.device != Device::Cpu)
    throw InputError(job.origin_of("device"), "cpu for strategy mesh", "cuda");
  for (double slowdown : worker_slowdowns(plan, platform))
    if (slowdown != 1)
      throw InputError(job.origin_of("platform"),
                       "worker hosts of one speed for strategy mesh (exec emulates no slow "
                       "host in a layout)",
                       "hosts of different speeds");
  const bool distributed = mpi && mpi->size() > 1;
  const std::string kind = settings.communicator;
  if (kind != "auto" && kind != (distributed ? "mpi" : "threads"))
    throw InputError(
        job.origin_of("communicator"),
        std::string(distributed ? "mpi or auto" : "threads or auto") + " for strategy mesh", kind);
  ModelParallelOptions o;
  o.shape = shape;
  o.data = options.layout.data;
  o.tensor = options.layout.tensor;
  o.pipeline = options.layout.pipeline;
  o.micro_batches = options.layout.micro_batches;
  o.schedule = options.layout.schedule;
  o.batch = static_cast<long long>(plan.batch);
  o.learning_rate = static_cast<float>(settings.train.learning_rate);
  o.seed = settings.train.seed;
  o.max_steps = settings.train.max_steps;
  o.target_accuracy = settings.train.target_accuracy;
  o.eval_every = settings.train.eval_every_steps;
  o.test_limit = settings.train.eval_samples;
  o.origins = job.origins();
  o.plan = &plan;  // every rank runs its part of the job's Plan (exec/layout_program.hpp)
  for (int w = 0; w < plan.workers; ++w) {  // a Plan exec cannot run: refused before training
    try {
      (void)rank_program(plan, w);
    } catch (const std::invalid_argument& e) {
      throw InputError(job.origin_of("strategies"),
                       "a layout whose Plan exec's layout trainer runs (exec/layout_program.hpp)",
                       "'" + plan.strategy + "': " + e.what());
    }
  }
  check_model_parallel(o);
  if (log && (!mpi || mpi->rank() == 0))
    *log << "measure: mesh " << o.label() << " K=" << o.workers() << " b=" << o.batch << " on "
         << (distributed ? "mpi" : "threads") << " (concurrent, wall clock) ...\n";
  const auto started = std::chrono::steady_clock::now();
  ModelParallelReport report;
  if (distributed) {
    MpiPeers peers;
    report = train_model_parallel(o, data, peers);
    reporter = peers.rank() == 0;
  } else {
    report = train_model_parallel_threads(o, data);
    reporter = true;
  }
  Measurement m = even_measurement(plan);
  m.communicator = report.transport;
  describe_run(m, settings.train, data, shape);
  m.timing = Timing::Concurrent;
  m.clock = "wall";
  add_rank_workers(m, report.ranks, plan, platform, o.batch / o.data, report.steps);
  m.round_median_s = report.step_s;
  m.round_mean_s = report.steps > 0 ? report.wall_s / static_cast<double>(report.steps) : 0;
  m.rounds = m.steps = report.steps;
  m.reached = report.reached_target;
  m.final_accuracy = report.accuracy;
  m.total_s = report.wall_s;  // rank 0's steps, evaluations left out
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  m.eval_wall_s = std::max(0.0, m.wall_s - m.total_s);
  for (size_t i = 0; i < report.accuracy_curve.size(); ++i) {
    AccuracyPoint point;
    point.round = point.steps = report.accuracy_curve[i].first;
    point.accuracy = report.accuracy_curve[i].second;
    point.time_s = i < report.curve_wall_s.size() ? report.curve_wall_s[i] : 0;
    m.curve.push_back(point);
  }
  m.extra = {{"layout", report.label}, {"ranks", report.to_json()["ranks"]}};
  if (log && reporter)
    *log << "measure: mesh " << o.label() << ": accuracy " << m.final_accuracy
         << (m.reached ? " reached" : " NOT reached") << " after " << m.steps << " steps, training "
         << m.total_s << " s, median step of the slowest rank " << m.round_median_s << " s\n";
  return m;
}

/// Worker ranks' side of the servers' gather of their processing (measure()'s server branch):
/// rank 0 puts one object per server rank, in rank order, in the row's `servers`.
void gather_servers(MpiCommunicator& mpi, Measurement& m) {
  nlohmann::json servers = nlohmann::json::array();
  for (const std::string& part : mpi.gather_to_first(std::string()))
    if (!part.empty()) servers.push_back(nlohmann::json::parse(part));
  if (!servers.empty()) m.extra["servers"] = std::move(servers);
}

}  // namespace

Measurement even_measurement(const model::Plan& plan) {
  Measurement m;
  m.strategy = plan.strategy;
  m.workers = plan.workers;
  m.batch = plan.batch;
  m.split = "even";
  m.collective = plan.collective;
  return m;
}

MeasureRun measure(const model::Job& job, const model::Workload& workload,
                   const model::Platform& platform, const std::vector<std::string>& strategies,
                   MpiSession* mpi, std::ostream* log) {
  MeasureRun run;
  run.reporter = !mpi || mpi->rank() == 0;
  if (!run.reporter) log = nullptr;
  const ExecSettings settings = exec_settings(job);
  if (mpi) mpi->set_wait_timeout(settings.mpi_timeout_s);
  if (workload.transformer) {  // the decoder block, on threads: exec/transformer_measure.hpp
    run.measurements = measure_transformer(job, workload, platform, strategies, mpi, log);
    return run;
  }
  check_layouts_measurable(job, settings, workload, strategies);
  const model::StrategyOptions options = model::strategy_options(job);
  // The rounds the convergence model gives are not used: training runs to the target.
  const std::unique_ptr<model::ConvergenceModel> convergence = model::convergence_model(job);
  std::vector<model::Plan> plans;
  for (const std::string& name : strategies) {
    plans.push_back(model::make_plan(name, options, workload, platform, *convergence));
    const model::Plan& plan = plans.back();
    if (model::strategy(name).splits_model()) continue;  // check_layouts_measurable's
    if (plan.asynchronous)
      check_asynchronous_choices(job, settings, plan, mpi);
    else
      communicator_kind(job, settings, plan, mpi);
  }
  const Dataset data = load_dataset(settings.data);
  // A sample count above what the data holds would be cut to it in silence.
  for (const auto& [key, held] :
       {std::pair<const char*, long long>{"train_samples", data.train_size()},
        {"eval_samples", data.test_size()}})
    if (job.integer(key) > held)
      throw InputError(
          job.origin_of(key),
          fmt::format("at most {} (the {} samples of {}), or 0 for all", held,
                      key == std::string("train_samples") ? "training" : "test", data.source),
          std::to_string(job.integer(key)));
  const MlpShape shape = mlp_shape(settings.hidden, data);
  if (log) {
    *log << "measure: data " << data.name << (data.synthetic ? " (SYNTHETIC stand-in)" : "")
         << " from " << data.source << ": " << data.train_size() << " train, " << data.test_size()
         << " test; MLP " << shape.to_string() << " (" << shape.parameters() << " parameters)\n";
    if (workload.parameters > 0 &&
        std::fabs(workload.parameters - static_cast<double>(shape.parameters())) >
            0.01 * workload.parameters)
      *log << "measure: note: workload '" << workload.name << "' declares " << workload.parameters
           << " parameters; the measured MLP has " << shape.parameters() << "\n";
  }
  for (std::size_t i = 0; i < strategies.size(); ++i) {
    const std::string& name = strategies[i];
    const model::Plan& plan = plans[i];
    if (model::strategy(name).splits_model()) {  // a layout's ranks: exec/pipeline_parallel.hpp
      if (mpi) mpi->barrier();
      bool reporter = true;
      Measurement m = measure_layout(job, settings, plan, model::strategy(name).normalise(options),
                                     workload, platform, data, shape, mpi, reporter, log);
      if (reporter) run.measurements.push_back(std::move(m));
      continue;
    }
    if (plan.asynchronous) {  // worker and server threads or ranks: exec/async_ranks.hpp
      if (mpi) mpi->barrier();
      bool reporter = true;
      Measurement m =
          measure_asynchronous(settings, plan, platform, data, shape, mpi, reporter, log);
      if (reporter) run.measurements.push_back(std::move(m));
      continue;
    }
    Setup setup = make_setup(job, settings, plan, platform, mpi);
    if (mpi) mpi->barrier();
    if (!setup.participate) {
      mpi->barrier(false);  // waits, with no deadline, for rank 0 training alone
      continue;
    }
    if (setup.mpi && setup.mpi->is_server()) {
      // A server rank serves the workers' collectives, then sends its spans and its own
      // processing to rank 0.
      ServerProcessing processing;
      const std::vector<TraceEvent> spans =
          setup.mpi->serve(settings.train.trace_rounds, &processing);
      setup.mpi->gather_to_first(serialize_trace(spans));
      setup.mpi->gather_to_first(server_processing_json(processing).dump());
      continue;
    }
    if (log) {
      *log << "measure: " << name << " K=" << plan.workers << " tau=" << plan.tau
           << " b=" << plan.batch << " on " << setup.comm->name();
      if (setup.mpi)
        *log << " (" << plan.collective << ": " << plan.workers << " worker ranks"
             << (setup.comm->size() > plan.workers
                     ? " + " + std::to_string(setup.comm->size() - plan.workers) + " server ranks"
                     : std::string())
             << ")";
      *log << " (" << to_string(settings.train.timing) << ") ...\n";
    }
    Measurement m = train(plan, platform, data, shape, *setup.comm, setup.factory, settings.train);
    if (setup.alone) mpi->barrier(false);
    if (setup.mpi) {
      // One trace for the run: every rank's spans (workers and servers) on rank 0.
      const std::vector<std::string> parts = setup.mpi->gather_to_first(serialize_trace(m.trace));
      if (!parts.empty()) m.trace.clear();
      for (const std::string& part : parts) {
        std::vector<TraceEvent> spans = parse_trace(part);
        m.trace.insert(m.trace.end(), spans.begin(), spans.end());
      }
      if (setup.mpi->size() > setup.mpi->workers()) gather_servers(*setup.mpi, m);
    }
    if (log && std::getenv("TAUPLAN_TESTBED_HOST"))
      for (const WorkerReport& w : m.per_worker)
        if (!w.ran_on.empty() && w.ran_on != w.host_name)
          *log << "measure: note: worker " << w.worker << " is planned on host " << w.host_name
               << " but its rank ran on " << w.ran_on << "\n";
    if (log)
      *log << "measure: " << name << ": accuracy " << m.final_accuracy
           << (m.reached ? " reached" : " NOT reached") << " after " << m.steps << " steps ("
           << m.rounds << " rounds), training " << m.total_s << " s, wall " << m.wall_s << " s\n";
    run.measurements.push_back(std::move(m));
  }
  return run;
}

}  // namespace tauplan::exec
