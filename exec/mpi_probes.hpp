// mpi_probes.hpp: the network probes of probe_network.hpp carried by MPI ranks (OpenMPI), one
// rank per host, for probing real machines from `mpirun`.
//
// Rank r is host r of MPI_COMM_WORLD; the probes use point-to-point messages only, on a
// communicator duplicated from the world so that their tags meet nothing else. A round trip is an
// 8-byte message echoed back, timed on the sending rank's steady clock after 3 unrecorded echoes.
// A concurrent-rate probe keeps 8 sends of 128 KiB chunks outstanding per flow for the duration;
// each receiver times the chunks completing inside its window [warm-up, duration - 0.1 s] on its
// own clock, and the flow's rate is the least-squares slope of bytes against those times. Every
// rank calls the same methods with the same arguments and gets the same answers (broadcast, sum
// over the ranks). This header needs no MPI; without MPI the factory throws. What it leaves out:
// clock synchronisation between ranks (each rank times only itself), several ranks per host,
// shared-memory transports chosen by OpenMPI on one machine, and threads (only the main thread
// calls MPI).
#pragma once

#include <memory>

#include "exec/probe_network.hpp"

namespace tauplan::exec {

/// Probes over MPI_COMM_WORLD, one host per rank. Collective: every rank calls it, after MPI is
/// initialised (MpiSession). Throws std::runtime_error when tauplan was built without MPI.
std::unique_ptr<ProbeNetwork> make_mpi_probe_network();

/// This process's rank in MPI_COMM_WORLD; 0 without MPI or before MPI is initialised.
int mpi_probe_rank();

}  // namespace tauplan::exec
