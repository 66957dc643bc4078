// measure.cpp: communicator choice, replica placement and the loop over strategies.
#include "exec/measure.hpp"

#include <cmath>
#include <cstdlib>
#include <memory>

#include "exec/async_trainer.hpp"
#include "exec/cpu_replica.hpp"
#include "exec/dataset.hpp"
#include "exec/job_keys.hpp"
#include "exec/mpi_async.hpp"
#include "exec/thread_communicator.hpp"
#include "model/error.hpp"
#include "model/strategy.hpp"
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
    throw InputError(job.file, "device", "cpu, or a machine with a usable CUDA GPU",
                     "cuda with none (" + why + ")");
  if (gpus < needed)
    throw InputError(job.file, "workers", "at most " + std::to_string(gpus) + " workers " + what,
                     std::to_string(needed));
  return gpus;
}
#endif

Setup make_setup(const model::Job& job, const ExecSettings& settings, const model::Plan& plan,
                 const model::Platform& platform, MpiSession* mpi) {
  const int world = mpi ? mpi->size() : 1;
  const int rank = mpi ? mpi->rank() : 0;
  const bool cuda = settings.device == Device::Cuda;
  std::string kind = settings.communicator;
  if (kind == "auto") kind = world > 1 ? (cuda ? "nccl" : "mpi") : (cuda ? "device" : "threads");
  if (!cuda && (kind == "device" || kind == "nccl"))
    throw InputError(job.file, "communicator", "threads or mpi with device: cpu", kind);
  if (cuda && (kind == "threads" || kind == "mpi"))
    throw InputError(job.file, "communicator", "device or nccl with device: cuda", kind);
#ifndef TAUPLAN_HAVE_CUDA
  if (cuda)
    throw InputError(job.file, "device", "cpu (this tauplan was built without CUDA)", "cuda");
#endif

  Setup setup;
  const bool distributed = kind == "mpi" || (kind == "nccl" && world > 1);
  if (!distributed && world > 1) {
    // A process-local communicator under mpirun: only `single` makes sense, on rank 0.
    if (plan.workers > 1)
      throw InputError(
          job.file, "communicator",
          "mpi or nccl (or auto) when started by mpirun with " + std::to_string(world) + " ranks",
          kind);
    setup.participate = rank == 0;
    setup.alone = rank == 0;
  }
  if (distributed && plan.workers == 1) {
    // `single` in an MPI run: rank 0 alone, with a process-local communicator.
    setup.participate = rank == 0;
    setup.alone = rank == 0 && world > 1;
    kind = cuda ? "device" : "threads";
  }
  if (!setup.participate) return setup;

  if (kind == "threads") {
    setup.comm = std::make_unique<ThreadCommunicator>(plan.workers);
    setup.factory = cpu_replica_factory();
  } else if (kind == "mpi") {
    if (!mpi)
      throw InputError(job.file, "communicator",
                       "threads, or mpi under an MPI launcher (mpirun -np " +
                           std::to_string(plan.workers) + " tauplan measure ...)",
                       "mpi without a launcher");
    auto communicator = std::make_unique<MpiCommunicator>(plan, platform, job.file);
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
      throw InputError(job.file, "communicator", "device (this tauplan was built without NCCL)",
                       "nccl");
    cuda::NcclId id{};
    if (world > 1) {
      if (plan.workers != world)
        throw InputError(
            job.file, "workers",
            "the MPI world size " + std::to_string(world) + " (one GPU per rank: mpirun -np K)",
            std::to_string(plan.workers));
      const int gpus = require_gpus(job, 1, "per node");
      const int device = local_rank(rank);
      if (device >= gpus)
        throw InputError(
            job.file, "workers",
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
Measurement measure_asynchronous(const model::Job& job, const ExecSettings& settings,
                                 const model::Plan& plan, const model::Platform& platform,
                                 const Dataset& data, const MlpShape& shape, MpiSession* mpi,
                                 bool& reporter, std::ostream* log) {
  if (settings.device != Device::Cpu)
    throw InputError(job.file, "device", "cpu for " + plan.strategy, "cuda");
  const bool distributed = mpi && mpi->size() > 1;
  const std::string kind = settings.communicator;
  if (kind != "auto" && kind != (distributed ? "mpi" : "threads"))
    throw InputError(job.file, "communicator",
                     std::string(distributed ? "mpi or auto" : "threads or auto") + " for " +
                         plan.strategy + (distributed ? " under mpirun" : ""),
                     kind);
  if (log && (!mpi || mpi->rank() == 0))
    *log << "measure: " << plan.strategy << " K=" << plan.workers
         << " servers=" << plan.server_hosts.size() << " b=" << plan.batch << " on "
         << (distributed ? "mpi" : "threads") << " (concurrent, wall clock) ...\n";
  if (distributed) return train_async_mpi(plan, platform, data, shape, settings.train, reporter);
  reporter = true;
  return train_async_threads(plan, platform, data, shape, settings.train);
}

}  // namespace

MeasureRun measure(const model::Job& job, const model::Workload& workload,
                   const model::Platform& platform, const std::vector<std::string>& strategies,
                   MpiSession* mpi, std::ostream* log) {
  MeasureRun run;
  run.reporter = !mpi || mpi->rank() == 0;
  if (!run.reporter) log = nullptr;
  const ExecSettings settings = exec_settings(job);
  if (mpi) mpi->set_wait_timeout(settings.mpi_timeout_s);
  for (const std::string& name : strategies)  // before anything is loaded or logged
    if (!model::strategy(name, job.file).measurable())
      throw InputError(job.file, "strategies",
                       "strategies the exec engine trains (tensor and pipeline parallel MLP "
                       "training is tauplan_model_parallel)",
                       "'" + name + "'");
  const Dataset data = load_dataset(settings.data);
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
  const model::StrategyOptions options = model::strategy_options(job);
  // The rounds the convergence model gives are not used: training runs to the target.
  const std::unique_ptr<model::ConvergenceModel> convergence = model::convergence_model(job);
  for (const std::string& name : strategies) {
    const model::Plan plan = model::make_plan(name, options, workload, platform, *convergence);
    if (plan.asynchronous) {  // worker and server threads or ranks: exec/async_trainer.hpp
      if (mpi) mpi->barrier();
      bool reporter = true;
      Measurement m =
          measure_asynchronous(job, settings, plan, platform, data, shape, mpi, reporter, log);
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
      // A server rank serves the workers' collectives, then sends its spans to rank 0.
      const std::vector<TraceEvent> spans = setup.mpi->serve(settings.train.trace_rounds);
      setup.mpi->gather_to_first(serialize_trace(spans));
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
