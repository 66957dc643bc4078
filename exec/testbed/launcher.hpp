// launcher.hpp: MPI ranks inside the testbed, one per host namespace.
//
// `testbed run` enters the control namespace and execs OpenMPI's mpirun there with:
//   --host <prefix>r0,<prefix>r1,...  -np N       rank r on the r-th testbed host (one slot each)
//   --mca plm_rsh_agent "<tauplan> testbed agent --prefix P"   how mpirun "logs in" to a host:
//        the agent enters the host's namespace and runs the daemon's command line through
//        /bin/sh (mpirun hands it over as shell words), so orted and its ranks live there
//   --mca plm_rsh_no_tree_spawn 1                 every daemon started from the control namespace
//   --mca pml ob1 --mca btl tcp,self              no shared memory or UCX between ranks: rank to
//   --mca btl_tcp_if_include 10.211.0.0/24        rank traffic crosses the emulated network only
//   --mca oob_tcp_if_include 10.211.1.0/24        the daemons talk over the management bridge
//   --bind-to none                                each namespace looks like a separate node, so
//                                                 mpirun would pin every rank to core 0
//   --mca mpi_yield_when_idle 1                   ranks share the cores with each other and the
//        fabric: 2 busy-polling ranks on 2 cores added 4 ms to every 16 ms MPI round trip
//        (19.8-21.1 ms in 7 runs; 16.2 ms yielding, as with 3 or more ranks; measured before
//        tauplan's ranks read their sockets on every progress call, exec/mpi_communicator.hpp)
//   <tauplan> testbed rank --prefix P -- COMMAND  which finds the namespace it runs in, sets
//        TAUPLAN_TESTBED_HOST (the platform's host name), TAUPLAN_TESTBED_NETNS,
//        TAUPLAN_TESTBED_SCALE and TAUPLAN_TESTBED_PLATFORM, and execs COMMAND
// so a program can check that it runs where its plan puts it. What it leaves out: other MPI
// implementations, and oversubscription (at most one rank per host).
#pragma once

#include <string>
#include <vector>

#include "exec/testbed/lifecycle.hpp"

namespace tauplan::testbed {

/// The testbed hosts (indices into spec.hosts) that run ranks 0, 1, ...: the named hosts in
/// that order when `names` is given, else the first `ranks` hosts (0: all). Throws InputError
/// naming --np or --hosts for a count out of 1 .. hosts, an unknown or repeated host, or both
/// given and disagreeing.
std::vector<int> rank_hosts(const State& state, int ranks, const std::vector<std::string>& names);

/// The mpirun command (argv) that runs `command` as one rank on each of `hosts` (indices into
/// spec.hosts, rank r on hosts[r]); `executable` is this tauplan. Throws InputError when the
/// command is empty.
std::vector<std::string> mpirun_command(const State& state, const std::vector<int>& hosts,
                                        const std::vector<std::string>& command,
                                        const std::string& executable);

/// Enters the control namespace and execs `mpirun_argv`; returns only by throwing.
void exec_in_control_namespace(const State& state, const std::vector<std::string>& mpirun_argv);

/// mpirun's remote-shell agent: `netns` must be a host namespace of the testbed; enters it and
/// execs /bin/sh -c "<words joined by spaces>". Returns only by throwing.
void exec_agent(const State& state, const std::string& netns,
                const std::vector<std::string>& words);

/// The testbed host whose namespace the calling thread is in, or -1.
int current_host(const Spec& spec);

/// Sets TAUPLAN_TESTBED_* for the host this process runs in and execs `command`. Throws
/// std::runtime_error when the process is in none of the testbed's namespaces.
void exec_rank(const State& state, const std::vector<std::string>& command);

}  // namespace tauplan::testbed
