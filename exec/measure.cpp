// measure.cpp: communicator choice, replica placement and the loop over strategies.
#include "exec/measure.hpp"

#include <cmath>
#include <cstdlib>
#include <memory>

#include "exec/cpu_replica.hpp"
#include "exec/dataset.hpp"
#include "exec/job_keys.hpp"
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
                 MpiSession* mpi) {
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
  }
  if (distributed && plan.workers == 1) {
    // `single` in an MPI run: rank 0 alone, with a process-local communicator.
    setup.participate = rank == 0;
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
    setup.comm = std::make_unique<MpiCommunicator>(plan.workers, job.file);
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

}  // namespace

MeasureRun measure(const model::Job& job, const model::Workload& workload,
                   const model::Platform& platform, const std::vector<std::string>& strategies,
                   MpiSession* mpi, std::ostream* log) {
  MeasureRun run;
  run.reporter = !mpi || mpi->rank() == 0;
  if (!run.reporter) log = nullptr;
  const ExecSettings settings = exec_settings(job);
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
  for (const std::string& name : strategies) {
    const model::Plan plan =
        model::strategy_generator(name, job.file).generate(options, workload, platform);
    Setup setup = make_setup(job, settings, plan, mpi);
    if (mpi) mpi->barrier();
    if (!setup.participate) continue;
    if (log)
      *log << "measure: " << name << " K=" << plan.workers << " tau=" << plan.tau
           << " b=" << plan.batch << " on " << setup.comm->name() << " ("
           << to_string(settings.train.timing) << ") ...\n";
    Measurement m = train(plan, platform, data, shape, *setup.comm, setup.factory, settings.train);
    if (log)
      *log << "measure: " << name << ": accuracy " << m.final_accuracy
           << (m.reached ? " reached" : " NOT reached") << " after " << m.steps << " steps ("
           << m.rounds << " rounds), training " << m.total_s << " s, wall " << m.wall_s << " s\n";
    run.measurements.push_back(std::move(m));
  }
  return run;
}

}  // namespace tauplan::exec
