// measure.hpp: a job measured for real, strategy by strategy (the core of `tauplan measure`).
//
// Reads exec's settings from the job, builds each strategy's Plan with the model's generators
// (the same Plan predict and simulate use) and checks the choices that need no data (the
// communicator, the device, an asynchronous plan's timing) for every strategy, then loads the
// data, picks the communicator (MPI ranks under mpirun, else threads on the CPU; on CUDA, K
// logical workers on one GPU or NCCL with one GPU per worker) and trains. Impossible requests are
// InputErrors naming the job file and key, or the flag that gave the value: a communicator the
// build or launch lacks, K different from the MPI world size, K larger than the GPUs available
// to NCCL. Under MPI every rank runs this: workers train, the
// server ranks of ps and sparknet serve (ranks K..K+s-1), `single` runs on rank 0 only while
// the others wait, and every rank's trace spans are gathered to rank 0, then every server rank's
// own processing (the row's `servers`, exec/report.hpp; only runs with server ranks have the key;
// async-ps's come from exec/async_ranks.hpp, on threads as under MPI). A strategy that splits
// the model (mesh) trains the MLP's layout instead, a thread or an MPI rank per rank of its mesh
// (exec/pipeline_parallel.hpp), on the wall clock. A transformer workload trains exec's
// decoder block instead, in every strategy (exec/transformer_measure.hpp). What it leaves out:
// rendering (cli/verb_measure.cpp), calibration fits, and trace spans of a layout's ranks.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "exec/mpi_communicator.hpp"
#include "exec/trainer.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/job.hpp"

namespace tauplan::exec {

struct MeasureRun {
  std::vector<Measurement> measurements;  ///< one per strategy this process took part in
  bool reporter = true;                   ///< this process prints (rank 0)
};

/// `mpi` is non-null when the process was started by an MPI launcher (session initialised).
/// Progress lines go to `log` (rank 0 only) when it is non-null.
MeasureRun measure(const model::Job& job, const model::Workload& workload,
                   const model::Platform& platform, const std::vector<std::string>& strategies,
                   MpiSession* mpi, std::ostream* log);

/// A Measurement of `plan` with its batch split evenly: its strategy, workers, batch and
/// collective (shared by the MLP's and the transformer's layout measurements).
Measurement even_measurement(const model::Plan& plan);

/// A layout run's ranks as the Measurement's workers (each rank's host from the Plan, `samples`
/// per rank, its compute time as both median and measured), and the slowest rank's compute and
/// communication as the run's: shared by the MLP's and the transformer's layout measurements.
template <typename RankTimes>
void add_rank_workers(Measurement& m, const std::vector<RankTimes>& ranks, const model::Plan& plan,
                      const model::Platform& platform, long long samples, long long steps) {
  const RankTimes* slowest = nullptr;
  for (const RankTimes& r : ranks) {
    if (!slowest || r.step_s > slowest->step_s) slowest = &r;
    WorkerReport w;
    w.worker = r.rank;
    w.host = plan.worker_hosts[static_cast<size_t>(r.rank)];
    w.host_name = platform.hosts[static_cast<size_t>(w.host)].name;
    w.samples = samples;
    w.compute_median_s = w.measured_median_s = r.compute_s;
    w.steps = steps;
    m.per_worker.push_back(w);
  }
  if (slowest) {
    m.compute_s = m.compute_median_s = slowest->compute_s;
    m.sync_s = m.sync_mean_s = slowest->comm_s;
  }
}

}  // namespace tauplan::exec
