// verb_measure.cpp: `tauplan measure JOB.yaml [--json] [--trace FILE]`, the real engine.
//
// Trains the job's MLP for real, once per strategy, from the same Plans predict and simulate
// use: CPU workers as threads (or one per MPI rank when started by `mpirun -np K`), or CUDA
// workers (K logical workers on one GPU, or NCCL with one GPU per worker). Reports per strategy
// the measured C(b) per worker, S, rounds to the target accuracy (Na, Ma), round and total time
// and the accuracy curve, in the common result schema (engine exec-cpu | exec-cuda, timing
// lockstep | concurrent). Under MPI every rank trains and rank 0 prints. What it leaves out:
// calibration fits (validate's job) and traces of other ranks' workers.
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/verb.hpp"
#include "exec/job_keys.hpp"
#include "exec/measure.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/report.hpp"
#include "model/error.hpp"

namespace tauplan::cli {

void register_measure(CLI::App& app) {
  auto args = std::make_shared<JobArgs>();
  CLI::App* verb = app.add_subcommand(
      "measure", "real training (exec engine: CPU threads or MPI ranks, CUDA + NCCL)");
  add_job_options(*verb, *args);  // includes --trace FILE (the `trace` job key)
  verb->callback([args] {
    // Under mpirun every rank runs this verb; MPI lives as long as the measurement.
    std::unique_ptr<exec::MpiSession> mpi;
    if (exec::mpi_compiled() && exec::launched_by_mpi_launcher())
      mpi = std::make_unique<exec::MpiSession>(nullptr, nullptr);
    const Inputs inputs = load_inputs(*args);
    const exec::ExecSettings settings = exec::exec_settings(inputs.job);
    // --trace FILE: the first trace_rounds rounds of every strategy, as Chrome trace events.
    std::ofstream trace;
    const bool reporter = !mpi || mpi->rank() == 0;
    if (reporter && inputs.job.has("trace") && !inputs.job.text("trace").empty()) {
      const std::string path = inputs.job.path("trace");
      trace.open(path);
      if (!trace) throw InputError(inputs.job.file, "trace", "a writable file", path);
    }
    const exec::MeasureRun run = exec::measure(inputs.job, inputs.workload, inputs.platform,
                                               inputs.strategies, mpi.get(), &std::cerr);
    if (!run.reporter) return;

    std::vector<model::ResultRow> rows;
    for (const exec::Measurement& m : run.measurements)
      rows.push_back(exec::to_result_row(m));
    model::RunContext context = make_context(inputs, "measure", settings.train.engine);
    context.network_model =
        run.measurements.empty()
            ? "measured"
            : "measured (" + run.measurements.front().communicator + " communicator)";
    context.convergence = "measured: steps to test accuracy " +
                          std::to_string(settings.train.target_accuracy) + ", evaluated every " +
                          std::to_string(settings.train.eval_every_steps) + " steps";
    context.extra["timing"] = exec::to_string(settings.train.timing);
    context.extra["combine"] = exec::to_string(settings.train.combine);
    if (!run.measurements.empty()) {
      const exec::Measurement& m = run.measurements.front();
      context.extra["dataset"] = m.dataset + (m.synthetic ? " (synthetic stand-in)" : "");
      context.extra["mlp"] = m.mlp;
    }
    if (mpi) context.extra["mpi_ranks"] = std::to_string(mpi->size());
    print_results(context, rows, args->json);
    if (trace.is_open()) exec::write_chrome_trace(run.measurements, trace);
  });
}

static const VerbRegistration kRegistration{30, register_measure};

}  // namespace tauplan::cli
