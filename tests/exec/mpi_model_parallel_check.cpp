// mpi_model_parallel_check.cpp: run under `mpirun -np 4`: tensor- and pipeline-parallel steps
// over MPI ranks give the unsplit model's loss and gradients, bit for bit the threads' result.
//
// For each 4-rank mesh (t2 p2, d2 p2, t4, d2 t2) every rank runs one step from the same
// parameters and batch through MpiPeers, and rank 0 compares the gathered gradient with the
// unsplit MLP's (relative 1e-5) and with the same mesh on 4 threads of its own process (equal:
// both sum along the same ring). Exits 0 on success, 1 on a mismatch, 77 (skip) without 4 ranks.
#include <cmath>
#include <cstdio>
#include <random>

#include "exec/mpi_communicator.hpp"
#include "exec/mpi_peers.hpp"
#include "exec/pipeline_parallel.hpp"
#include "tests/exec/exec_support.hpp"

using namespace tauplan;
using namespace tauplan::exec;

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  if (session.size() != 4) {
    if (session.rank() == 0)
      std::printf("mpi_model_parallel_check: needs 4 ranks, got %d: skipped\n", session.size());
    return 77;
  }
  MpiPeers peers;
  MlpShape shape;
  shape.widths = {784, 256, 128, 10};
  Mlp reference(shape);
  reference.init(3);
  const test::PixelBatch batch = test::pixel_batch();
  const std::vector<float>& x = batch.x;
  const std::vector<int>& y = batch.y;
  const double loss = reference.forward_backward(x.data(), y.data(), 32);
  const std::vector<float> parameters(reference.parameters(),
                                      reference.parameters() + reference.parameter_count());
  int failures = 0;
  struct Mesh {
    int d, t, p, m;
  };
  for (const Mesh& mesh :
       {Mesh{1, 2, 2, 4}, Mesh{2, 1, 2, 4}, Mesh{1, 4, 1, 2}, Mesh{2, 2, 1, 1}}) {
    ModelParallelOptions o;
    o.shape = shape;
    o.data = mesh.d, o.tensor = mesh.t, o.pipeline = mesh.p, o.micro_batches = mesh.m;
    o.batch = 32;
    const StepGradients mpi = step_gradients(o, parameters, x.data(), y.data(), peers);
    peers.barrier();
    if (session.rank() != 0) continue;
    const StepGradients threads = step_gradients_threads(o, parameters, x.data(), y.data());
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const double want = static_cast<double>(reference.gradients()[i]);
      const double d = static_cast<double>(mpi.gradients[i]) - want;
      diff += d * d;
      norm += want * want;
    }
    const double gradient_error = std::sqrt(diff / norm);
    const double loss_error = std::abs(mpi.loss - loss) / loss;
    const bool same_as_threads = mpi.gradients == threads.gradients;
    const bool ok = gradient_error <= 1e-5 && loss_error <= 1e-5 && same_as_threads;
    std::printf("%-16s mpi: gradient rel. error %.2e, loss rel. error %.2e, %s threads: %s\n",
                o.label().c_str(), gradient_error, loss_error,
                same_as_threads ? "equal to" : "DIFFERENT from", ok ? "ok" : "MISMATCH");
    if (!ok) ++failures;
  }
  return failures == 0 ? 0 : 1;
}
