// mpi_check.cpp: run under `mpirun -np 2`: MPI ranks and in-process threads give the same model.
//
// Every rank trains sync, local-sgd and Adasum-sync through the MPI communicator (one worker
// per rank), then trains the same plans alone with a 2-worker thread communicator and compares
// the final parameters (bitwise: with K = 2 both sum the two scaled vectors in double). It also
// checks that a plan whose K differs from the world size is an InputError. Exits 0 on success,
// 1 on a mismatch, 77 (skip) when not started with 2 ranks.
#include <cstdio>
#include <string>

#include "exec/cpu_replica.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/trainer.hpp"
#include "exec_support.hpp"
#include "model/error.hpp"

using namespace tauplan;
using namespace tauplan::exec;

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  const int rank = session.rank();
  if (session.size() != 2) {
    if (rank == 0)
      std::printf("mpi_check: needs exactly 2 ranks, got %d: skipped\n", session.size());
    return 77;
  }
  const Dataset data = test::tiny_data();
  const model::Platform platform = test::platform_with_speeds({1e9, 1e9});
  int failures = 0;

  struct Case {
    const char* name;
    model::Plan plan;
    CombineRule rule;
  };
  const Case cases[] = {
      {"sync", test::make_plan("sync", 2, 32, 1, platform), CombineRule::Mean},
      {"local-sgd tau=3", test::make_plan("local-sgd", 2, 16, 3, platform), CombineRule::Mean},
      {"sync adasum", test::make_plan("sync", 2, 32, 1, platform), CombineRule::Adasum},
      {"local-sgd adasum", test::make_plan("local-sgd", 2, 16, 3, platform), CombineRule::Adasum},
  };
  for (const Case& c : cases) {
    TrainOptions o = test::quick_options(12);
    o.combine = c.rule;
    MpiCommunicator mpi(2, "<mpi_check>");
    const Measurement distributed =
        train(c.plan, platform, data, test::tiny_shape(), mpi, cpu_replica_factory(), o);
    ThreadCommunicator threads(2);
    const Measurement local =
        train(c.plan, platform, data, test::tiny_shape(), threads, cpu_replica_factory(), o);
    const double diff = test::max_abs_diff(distributed.final_parameters, local.final_parameters);
    const bool same = distributed.final_parameters == local.final_parameters;
    const bool curve_same = distributed.curve.size() == local.curve.size() &&
                            distributed.curve.back().accuracy == local.curve.back().accuracy;
    std::printf("rank %d: %-18s mpi vs threads max |diff| = %g, accuracy %g vs %g %s\n", rank,
                c.name, diff, distributed.final_accuracy, local.final_accuracy,
                same && curve_same ? "ok" : "MISMATCH");
    if (!same || !curve_same || distributed.communicator != "mpi") ++failures;
  }

  // K must equal the world size.
  try {
    MpiCommunicator wrong(3, "job.yaml");
    std::printf("rank %d: K=3 on 2 ranks was accepted: FAIL\n", rank);
    ++failures;
  } catch (const InputError& e) {
    if (rank == 0) std::printf("rank 0: K=3 on 2 ranks: %s (ok)\n", e.what());
  }
  return failures == 0 ? 0 : 1;
}
