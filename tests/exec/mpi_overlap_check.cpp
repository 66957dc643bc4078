// mpi_overlap_check.cpp: run under `mpirun -np 3`: sync with gradient buckets overlapped with
// the backward pass (exec/bucket_stream.hpp), concurrent timing, through MPI.
//
// Cases: the ring with K = 3 workers, and a parameter server (K = 2, one server rank), on a
// platform where worker 1 is half as fast (its slowdown is slept layer by layer inside the step).
// The MLP (256-256-128-10) is cut into three buckets, one per layer. Each worker rank trains 20
// steps and checks:
//  1. the run says it overlapped (extra "overlap" names the second thread);
//  2. its final parameters equal those of the same plan trained by K threads (lockstep, the
//     buckets one after another on one thread) to 1e-5 relative: overlapping moved no number;
//  3. some bucket's collective entered before that rank's backward pass had ended
//     (extra "buckets_entered_during_backward" > 0): measured on the wall clock, so the test is
//     labelled `timing` (the first bucket leaves before two of the three layers' backward).
// Rank 0 prints one line per case. Exits 0 when every case passes, 1 otherwise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "exec/cpu_replica.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/trainer.hpp"
#include "exec_support.hpp"

using namespace tauplan;
using namespace tauplan::exec;

namespace {

MlpShape shape() {
  MlpShape s;
  s.widths = {256, 256, 128, 10};
  return s;
}

model::Workload workload() {
  model::Workload w;
  w.name = "mlp-256-256-128-10";
  w.source = "<mpi_overlap_check>";
  w.parameters = static_cast<double>(shape().parameters());
  w.bytes_per_parameter = 4;
  w.flop_per_sample = shape().flop_per_sample();
  w.layers = {{"fc1", 256 * 256 + 256, 6.0 * 256 * 256},
              {"fc2", 256 * 128 + 128, 6.0 * 256 * 128},
              {"fc3", 128 * 10 + 10, 6.0 * 128 * 10}};
  return w;
}

double relative_difference(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size() || got.empty()) return 1e300;
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  const int rank = session.rank();
  if (session.size() != 3) {
    if (rank == 0) std::printf("run under mpirun -np 3\n");
    return 2;
  }
  const Dataset data = test::mixture_data(3000, 300, 256, 10, 5);
  int failures = 0;
  const auto fail = [&](const std::string& what) {
    std::printf("rank %d: FAIL: %s\n", rank, what.c_str());
    ++failures;
  };

  struct Case {
    std::string collective;
    int workers;
  };
  for (const Case& c : {Case{"ring", 3}, Case{"ps", 2}}) {
    std::vector<model::HostRole> roles(static_cast<std::size_t>(c.workers),
                                       model::HostRole::Worker);
    roles.resize(3, model::HostRole::Server);
    std::vector<double> speeds(3, 1e9);
    speeds[1] = 5e8;  // worker 1 at half speed: slowdown 2, slept inside the step
    const model::Platform platform = model::make_crossbar_platform(speeds, 1e9, 1e-5, 0, roles);
    model::StrategyOptions so;
    so.file = "<mpi_overlap_check>";
    so.workers = c.workers;
    so.batch = 32.0 * c.workers;
    so.collective = c.collective;
    so.servers = 1;
    so.overlap = true;
    so.bucket_bytes = 4096;  // one bucket per layer
    so.check_memory = false;
    const model::Plan plan =
        model::make_plan("sync", so, workload(), platform, model::FixedCounts(1));
    TrainOptions o = test::quick_options(20);
    o.timing = Timing::Concurrent;
    MpiCommunicator comm(plan, platform, "<mpi_overlap_check>");
    if (comm.is_server()) {
      comm.serve(0);
      continue;
    }
    const Measurement overlapped =
        train(plan, platform, data, shape(), comm, cpu_replica_factory(), o);
    TrainOptions lockstep = o;
    lockstep.timing = Timing::Lockstep;
    ThreadCommunicator threads(c.workers);
    const Measurement reference =
        train(plan, platform, data, shape(), threads, cpu_replica_factory(), lockstep);

    const std::string how = overlapped.extra.value("overlap", std::string());
    const double during = overlapped.extra.value("buckets_entered_during_backward", -1.0);
    const double rel = relative_difference(overlapped.final_parameters, reference.final_parameters);
    const std::string label = "sync " + c.collective + " K=" + std::to_string(c.workers);
    if (how.find("on a second thread") == std::string::npos)
      fail(label + ": did not overlap: " + how);
    if (!(rel <= 1e-5)) fail(label + ": parameters differ from threads by " + std::to_string(rel));
    if (!(during > 0))
      fail(label + ": no bucket entered its collective during the backward pass (" +
           std::to_string(during) + ")");
    if (rank == 0)
      std::printf(
          "%s, %d buckets: trained rel %.2g, buckets entered during backward %.2f, "
          "round %.2f ms (%s)\n",
          label.c_str(), static_cast<int>(plan.count(model::OpKind::Collective)), rel, during,
          overlapped.round_median_s * 1e3, how.c_str());
  }
  return failures == 0 ? 0 : 1;
}
