// ring_steps.cpp: a bare MPI ring all-reduce whose every step is timed on every rank, for
// `tauplan testbed run` (experiments/testbed/README.md, "Where the rings' time goes"; built as
// testbed_ring_steps, run by experiments/testbed/data/ring-gap-diagnosis/run-steps.sh).
//
// The ranks run the ring of exec/p2p_ring.cpp (K-1 reduce-scatter steps, then K-1 all-gather
// steps, each one MPI_Sendrecv of a chunk to the right neighbour while receiving one from the
// left, the reduce-scatter's chunk summed into the rank's own) with nothing else around it: no
// model, no compute, no evaluation. Each round starts at an instant rank 0 chooses and
// broadcasts on CLOCK_MONOTONIC, which every network namespace of one machine shares, so the
// ranks' times are on one clock and need no offsets. Every rank records, for every step, when it
// entered and left MPI_Sendrecv; rank 0 gathers them and prints one line per (round, rank, step):
//   step ROUND RANK STEP ENTER_S LEAVE_S       (seconds from the round's agreed start)
// and one line per round with that start itself, for traces taken beside it on the same clock:
//   start ROUND MONOTONIC_S
// Usage: ring_steps CHUNK_FLOATS ROUNDS [PIECE_FLOATS]; with PIECE_FLOATS, a step between two
// ranks that send each other their chunks (a ring of 2) posts pieces of that many floats at once.
// OpenMPI's TCP tick is set as tauplan sets it (OMPI_MCA_mpi_event_tick_rate=1 unless the
// environment sets it). What it leaves out: the final division by the weight, and everything of a
// training round but the collective.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "tests/exec/testbed/diagnosis_support.hpp"

using tauplan::testbed_diagnosis::monotonic_s;
using tauplan::testbed_diagnosis::sleep_until;

namespace {

/// A step between two ranks that send each other a chunk: every piece of PIECE floats posted at
/// once, each way (below the eager limit, a piece needs no answer from its receiver).
void exchange_in_pieces(const float* send, float* recv, long chunk, long piece, int peer, int tag) {
  std::vector<MPI_Request> requests;
  for (long at = 0; at < chunk; at += piece) {
    const int n = static_cast<int>(std::min(piece, chunk - at));
    requests.emplace_back();
    MPI_Irecv(recv + at, n, MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &requests.back());
  }
  for (long at = 0; at < chunk; at += piece) {
    const int n = static_cast<int>(std::min(piece, chunk - at));
    requests.emplace_back();
    MPI_Isend(send + at, n, MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &requests.back());
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, k = 1;
  tauplan::testbed_diagnosis::start_mpi(argc, argv, rank, k);
  const long chunk = argc > 1 ? std::atol(argv[1]) : 78387;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 30;
  const long piece = argc > 3 ? std::atol(argv[3]) : 0;
  if (chunk < 1 || rounds < 1 || k < 2 || piece < 0) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: ring_steps CHUNK_FLOATS ROUNDS [PIECE_FLOATS] (2 ranks or more)\n");
    MPI_Finalize();
    return 2;
  }
  std::vector<float> data(static_cast<size_t>(chunk * k), 1.0f),
      incoming(static_cast<size_t>(chunk));
  const int right = (rank + 1) % k, left = (rank + k - 1) % k;
  const int steps = 2 * (k - 1);
  std::vector<double> times;   // per round, per step: enter, leave
  std::vector<double> starts;  // per round: the agreed start on CLOCK_MONOTONIC
  for (int round = 0; round < rounds; ++round) {
    double start = monotonic_s() + 0.05;
    MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    starts.push_back(start);
    sleep_until(start);
    for (int s = 0; s < steps; ++s) {
      const bool scatter = s < k - 1;
      const int send_block = ((rank - s) % k + k) % k;
      const int recv_block = ((rank - s - 1) % k + k) % k;
      float* send = data.data() + send_block * chunk;
      float* recv = scatter ? incoming.data() : data.data() + recv_block * chunk;
      times.push_back(monotonic_s() - start);
      if (piece > 0 && right == left) {
        exchange_in_pieces(send, recv, chunk, piece, right, s);
      } else {
        MPI_Sendrecv(send, static_cast<int>(chunk), MPI_FLOAT, right, s, recv,
                     static_cast<int>(chunk), MPI_FLOAT, left, s, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
      }
      times.push_back(monotonic_s() - start);
      if (scatter) {
        float* own = data.data() + recv_block * chunk;
        for (long i = 0; i < chunk; ++i)
          own[i] += incoming[static_cast<size_t>(i)];
      }
    }
  }
  std::vector<double> all(rank == 0 ? times.size() * static_cast<size_t>(k) : 0);
  MPI_Gather(times.data(), static_cast<int>(times.size()), MPI_DOUBLE, all.data(),
             static_cast<int>(times.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int round = 0; round < rounds; ++round)
      std::printf("start %d %.9f\n", round, starts[static_cast<size_t>(round)]);
    for (int r = 0; r < k; ++r)
      for (int round = 0; round < rounds; ++round)
        for (int s = 0; s < steps; ++s) {
          const size_t at = static_cast<size_t>(r) * times.size() +
                            2 * (static_cast<size_t>(round) * static_cast<size_t>(steps) +
                                 static_cast<size_t>(s));
          std::printf("step %d %d %d %.6f %.6f\n", round, r, s, all[at], all[at + 1]);
        }
  }
  MPI_Finalize();
  return 0;
}
