// exec_engine.cpp: the real engine behind the Engine interface (`tauplan measure`).
//
// Trains the job's MLP for real, once per strategy, from the same Plans predict and simulate
// use (exec/measure.hpp): CPU workers as threads (or one per MPI rank when started by an MPI
// launcher), or CUDA workers. Under MPI every rank trains and only rank 0 returns rows. The
// context says how time was taken (timing, combine, communicator, data set). What it leaves
// out: calibration fits (validate's job).
#include "exec/exec_engine.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/cpu_blas.hpp"
#include "exec/cpu_steal.hpp"
#include "exec/job_keys.hpp"
#include "exec/measure.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/report.hpp"
#include "model/base/error.hpp"

namespace tauplan::exec {
namespace {

/// The context's network: the communicator the strategies were measured on, or each one's when
/// they differ (under MPI, single trains on threads in one rank while the others use MPI).
std::string measured_network(const std::vector<Measurement>& measurements) {
  if (measurements.empty()) return "measured";
  std::vector<std::pair<std::string, std::string>> by_communicator;  // communicator, strategies
  for (const Measurement& m : measurements) {
    auto it = std::find_if(by_communicator.begin(), by_communicator.end(),
                           [&](const auto& entry) { return entry.first == m.communicator; });
    if (it == by_communicator.end())
      by_communicator.emplace_back(m.communicator, m.strategy);
    else
      it->second += ", " + m.strategy;
  }
  if (by_communicator.size() == 1)
    return "measured (" + by_communicator.front().first + " communicator)";
  std::string text = "measured (communicators:";
  for (std::size_t i = 0; i < by_communicator.size(); ++i)
    text += (i ? "; " : " ") + by_communicator[i].first + " for " + by_communicator[i].second;
  return text + ")";
}

class ExecEngine : public model::Engine {
 public:
  const char* name() const override { return "exec"; }
  const char* verb() const override { return "measure"; }
  const char* description() const override {
    return "real training (CPU threads or MPI ranks, CUDA + NCCL)";
  }
  model::EngineCapabilities capabilities() const override {
    model::EngineCapabilities can;
    can.runs_as_verb = true;
    return can;
  }
  std::vector<model::ResultRow> run(const model::JobInputs& inputs,
                                    model::RunContext& context) const override {
    // Under an MPI launcher every rank runs this; MPI lives as long as the measurement.
    std::unique_ptr<MpiSession> mpi;
    if (mpi_compiled() && launched_by_mpi_launcher())
      mpi = std::make_unique<MpiSession>(nullptr, nullptr);
    const ExecSettings settings = exec_settings(inputs.job);
    // The `trace` key: the first trace_rounds rounds of every strategy, as Chrome trace events.
    std::ofstream trace;
    const bool reporter = !mpi || mpi->rank() == 0;
    if (reporter && inputs.job.has("trace") && !inputs.job.text("trace").empty()) {
      const std::string path = inputs.job.output_path("trace");
      trace.open(path);
      if (!trace) throw InputError(inputs.job.origin_of("trace"), "a writable file", path);
    }
    const StealMeter steal;
    const MeasureRun run = measure(inputs.job, inputs.workload, inputs.platform, inputs.strategies,
                                   mpi.get(), inputs.log);
    if (!run.reporter) return {};

    std::vector<model::ResultRow> rows;
    for (const Measurement& m : run.measurements)
      rows.push_back(to_result_row(m));
    context.engine = settings.train.engine;
    context.network_model = measured_network(run.measurements);
    context.convergence = "measured: steps to test accuracy " +
                          std::to_string(settings.train.target_accuracy) + ", evaluated every " +
                          std::to_string(settings.train.eval_every_steps) + " steps";
    context.extra["timing"] = to_string(settings.train.timing);
    // The kernels' floating-point summation order: counts and curves are exact per backend.
    context.extra["compute_backend"] = compute_backend_description();
    context.extra["combine"] = to_string(settings.train.combine);
    // The hypervisor's share of this machine's CPU time while it measured (exec/cpu_steal.hpp).
    context.extra["cpu_steal"] =
        describe_steal(steal.fraction()) +
        (mpi ? " of rank 0's host's CPU time" : " of this machine's CPU time");
    if (!run.measurements.empty()) {
      const Measurement& m = run.measurements.front();
      context.extra["dataset"] = m.dataset + (m.synthetic ? " (synthetic stand-in)" : "");
      context.extra["mlp"] = m.mlp;
    }
    if (mpi) {
      context.extra["mpi_ranks"] = std::to_string(mpi->size());
      if (const std::string progress = mpi_tcp_progress(); !progress.empty())
        context.extra["mpi_tcp_progress"] = progress;
    }
    if (trace.is_open()) {
      write_chrome_trace(run.measurements, trace);
      std::cerr << "measure: wrote the Chrome trace " << inputs.job.output_path("trace") << "\n";
    }
    return rows;
  }
};

}  // namespace

std::unique_ptr<model::Engine> make_exec_engine() {
  return std::make_unique<ExecEngine>();
}

}  // namespace tauplan::exec
