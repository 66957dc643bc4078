// diagnosis_support.hpp: what the testbed's diagnosis programs (ring_steps.cpp, queue_probe.cpp)
// share: their MPI start as tauplan's ranks start, and the one clock they time on. Every network
// namespace of one machine shares CLOCK_MONOTONIC, so ranks in different testbed hosts read the
// same time and need no offsets. What it leaves out: anything across machines (real hosts would
// need a synchronised clock).
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <ctime>

namespace tauplan::testbed_diagnosis {

/// MPI_Init with OpenMPI's TCP tick as tauplan sets it (OMPI_MCA_mpi_event_tick_rate=1 unless
/// the environment sets it); this rank's index and the number of ranks.
inline void start_mpi(int& argc, char**& argv, int& rank, int& ranks) {
  setenv("OMPI_MCA_mpi_event_tick_rate", "1", 0);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
}

/// CLOCK_MONOTONIC in seconds.
inline double monotonic_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Returns at `when_s` (monotonic_s): sleeps until 1 ms before it, then spins.
inline void sleep_until(double when_s) {
  while (true) {
    const double left = when_s - monotonic_s();
    if (left <= 0) return;
    if (left > 2e-3) {
      const double nap = left - 1e-3;
      timespec t{static_cast<time_t>(nap),
                 static_cast<long>((nap - static_cast<time_t>(nap)) * 1e9)};
      nanosleep(&t, nullptr);
    }
  }
}

}  // namespace tauplan::testbed_diagnosis
