// mpi_ping.cpp: a program for `tauplan testbed run`: every rank says where it runs (the testbed
// host and namespace it was given), and ranks 0 and N-1 time, over MPI point-to-point on the
// wall clock, a ping-pong of 8-byte messages (median of 20 round trips after 5 warm-up ones) and
// one-way transfers of `bytes` (argv[1], default 1e6) each answered by 1 byte (median of 3 after
// one warm-up). Rank 0 prints:
//   rank R host H netns N          one line per rank, in rank order
//   ping rtt_s X transfer_bytes S transfer_s T
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "(unset)";
}

}  // namespace

#if TAUPLAN_SANITIZED
// LeakSanitizer would report OpenMPI's allocations at exit (as exec/mpi_communicator.cpp says);
// this program is MPI from its first line to its last.
extern "C" int __lsan_is_turned_off() {
  return 1;
}
#endif

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int bytes = argc > 1 ? std::atoi(argv[1]) : 1000000;

  constexpr int kName = 128;
  char mine[kName] = {};
  std::snprintf(mine, kName, "host %s netns %s", env("TAUPLAN_TESTBED_HOST").c_str(),
                env("TAUPLAN_TESTBED_NETNS").c_str());
  std::vector<char> all(static_cast<std::size_t>(kName * size));
  MPI_Gather(mine, kName, MPI_CHAR, all.data(), kName, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      std::printf("rank %d %s\n", r, all.data() + static_cast<std::ptrdiff_t>(r) * kName);

  const int peer = size - 1;
  if (size >= 2 && (rank == 0 || rank == peer)) {
    const int other = rank == 0 ? peer : 0;
    char small[8] = {};
    std::vector<double> round_trips;
    for (int i = 0; i < 25; ++i) {
      if (rank == 0) {
        const double start = MPI_Wtime();
        MPI_Send(small, 8, MPI_CHAR, other, 1, MPI_COMM_WORLD);
        MPI_Recv(small, 8, MPI_CHAR, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (i >= 5) round_trips.push_back(MPI_Wtime() - start);
      } else {
        MPI_Recv(small, 8, MPI_CHAR, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(small, 8, MPI_CHAR, other, 1, MPI_COMM_WORLD);
      }
    }
    std::vector<char> data(static_cast<std::size_t>(bytes), 'd');
    std::vector<double> transfers;
    for (int i = 0; i < 4; ++i) {
      if (rank == 0) {
        const double start = MPI_Wtime();
        MPI_Send(data.data(), bytes, MPI_CHAR, other, 2, MPI_COMM_WORLD);
        MPI_Recv(small, 1, MPI_CHAR, other, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (i >= 1) transfers.push_back(MPI_Wtime() - start);
      } else {
        MPI_Recv(data.data(), bytes, MPI_CHAR, other, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(small, 1, MPI_CHAR, other, 3, MPI_COMM_WORLD);
      }
    }
    if (rank == 0)
      std::printf("ping rtt_s %.6f transfer_bytes %d transfer_s %.6f\n", median(round_trips), bytes,
                  median(transfers));
  }
  std::fflush(stdout);
  MPI_Finalize();
  return 0;
}
