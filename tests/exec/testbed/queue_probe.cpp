// queue_probe.cpp: what a host's first link holds queued while one of its MPI messages leaves,
// seen by the small messages it sends to another host meanwhile; for `tauplan testbed run`
// (experiments/testbed/README.md, "The queue behind a message"; built as testbed_queue_probe).
//
// Three ranks: rank 0 (the sender) sends BYTES to rank 1 (MPI_Isend, then MPI_Test in a busy
// loop so the rendezvous progresses) and, INTERVAL seconds after the last one (a call into MPI
// may stall the loop: no catch-up), from the same instant until
// the message is done and one more interval, an 8-byte message carrying its send time to rank 2
// (eager, on another connection, leaving over the same NIC). Rank 2 stamps each on arrival. A
// small message that waits behind the sender's queued bytes arrives late by the time those
// bytes take to serialise; the delay over the quiet one (the first rounds' pings sent before
// the message starts) is that wait. Every round starts at an instant rank 0 chooses on
// CLOCK_MONOTONIC, shared by every namespace of one machine. Rank 0 prints, per round:
//   done ROUND SECONDS_FROM_START        (rank 1's receive complete)
//   ping ROUND SENT_S ARRIVED_S          (seconds from the round's start, one line per ping)
// Usage: queue_probe BYTES ROUNDS [INTERVAL_S=0.0005]. OpenMPI's TCP tick as tauplan sets it.
// What it leaves out: more than one concurrent message, and which queue (the NIC's or the
// kernel's) holds the bytes: the delay is their sum.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "tests/exec/testbed/diagnosis_support.hpp"

namespace {

constexpr int kPingTag = 7, kBulkTag = 8, kCountTag = 9;

}  // namespace

using tauplan::testbed_diagnosis::monotonic_s;
using tauplan::testbed_diagnosis::sleep_until;

int main(int argc, char** argv) {
  int rank = 0, k = 1;
  tauplan::testbed_diagnosis::start_mpi(argc, argv, rank, k);
  const long bytes = argc > 1 ? std::atol(argv[1]) : 235148;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
  const double interval = argc > 3 ? std::atof(argv[3]) : 5e-4;
  if (bytes < 1 || rounds < 1 || !(interval > 0) || k != 3) {
    if (rank == 0) std::fprintf(stderr, "usage: queue_probe BYTES ROUNDS [INTERVAL_S] (3 ranks)\n");
    MPI_Finalize();
    return 2;
  }
  std::vector<char> bulk(static_cast<size_t>(bytes), 1);
  std::vector<double> lines;  // rank 0: done per round; rank 2: (sent, arrived) per ping
  for (int round = 0; round < rounds; ++round) {
    double start = monotonic_s() + 0.05;
    MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    sleep_until(start);
    if (rank == 0) {
      MPI_Request request;
      MPI_Isend(bulk.data(), static_cast<int>(bytes), MPI_CHAR, 1, kBulkTag, MPI_COMM_WORLD,
                &request);
      int done = 0, pings = 0;
      double next = start, finished = -1;
      while (true) {
        if (!done) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done && finished < 0) finished = monotonic_s();
        const double now = monotonic_s();
        if (now >= next) {
          if (finished >= 0 && now > finished + interval) break;
          const double sent = now - start;
          MPI_Send(&sent, 1, MPI_DOUBLE, 2, kPingTag, MPI_COMM_WORLD);
          ++pings;
          next = now + interval;  // no catch-up burst after a stall
        }
      }
      MPI_Send(&pings, 1, MPI_INT, 2, kCountTag, MPI_COMM_WORLD);
      double received_at = 0;
      MPI_Recv(&received_at, 1, MPI_DOUBLE, 1, kCountTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      lines.push_back(received_at);
    } else if (rank == 1) {
      MPI_Recv(bulk.data(), static_cast<int>(bytes), MPI_CHAR, 0, kBulkTag, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      const double received_at = monotonic_s() - start;
      MPI_Send(&received_at, 1, MPI_DOUBLE, 0, kCountTag, MPI_COMM_WORLD);
    } else {
      std::vector<double> got;
      int pings = -1;
      while (pings < 0 || static_cast<int>(got.size()) < 2 * pings) {
        MPI_Status status;
        MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        if (status.MPI_TAG == kCountTag) {
          MPI_Recv(&pings, 1, MPI_INT, 0, kCountTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          continue;
        }
        double sent = 0;
        MPI_Recv(&sent, 1, MPI_DOUBLE, 0, kPingTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        got.push_back(sent);
        got.push_back(monotonic_s() - start);
      }
      lines.push_back(static_cast<double>(round));
      lines.push_back(static_cast<double>(pings));
      lines.insert(lines.end(), got.begin(), got.end());
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // Rank 2's pings to rank 0, which prints everything.
  int count = static_cast<int>(lines.size());
  if (rank == 2) {
    MPI_Send(&count, 1, MPI_INT, 0, kCountTag, MPI_COMM_WORLD);
    MPI_Send(lines.data(), count, MPI_DOUBLE, 0, kCountTag, MPI_COMM_WORLD);
  } else if (rank == 0) {
    int n = 0;
    MPI_Recv(&n, 1, MPI_INT, 2, kCountTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::vector<double> pings(static_cast<size_t>(n));
    MPI_Recv(pings.data(), n, MPI_DOUBLE, 2, kCountTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int round = 0; round < rounds; ++round)
      std::printf("done %d %.6f\n", round, lines[static_cast<size_t>(round)]);
    for (size_t at = 0; at + 1 < pings.size();) {
      const int round = static_cast<int>(pings[at]);
      const int m = static_cast<int>(pings[at + 1]);
      at += 2;
      for (int i = 0; i < m && at + 1 < pings.size(); ++i, at += 2)
        std::printf("ping %d %.6f %.6f\n", round, pings[at], pings[at + 1]);
    }
  }
  MPI_Finalize();
  return 0;
}
