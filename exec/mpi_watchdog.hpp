// mpi_watchdog.hpp: how a distributed run ends when one of its ranks dies or stops answering.
//
// Every blocking MPI call of exec/ runs inside an MpiWait scope, and has two ways out:
// (1) the launcher: when a rank dies (killed, crashed, or exited with an error) OpenMPI's mpirun
//     ends every other rank with SIGTERM (then SIGKILL); the handler installed here prints one
//     line naming this rank, its host and the wait it was in, and exits with kExitRankFailure;
// (2) a deadline: a watchdog thread ends the process the same way when the main thread has
//     stayed in one wait longer than the job's mpi_timeout_s, for a rank that is alive but does
//     not answer (stopped, or behind a cut link), which the launcher cannot see; mpirun then
//     ends the others through (1).
// The deadline bounds the longest legitimate silence between two messages: a round's compute on
// the slowest worker plus an evaluation on rank 0. A wait with no deadline (idle ranks while rank
// 0 trains `single` alone) has way (1) only. Needs no MPI (signals, a thread, atomics).
// What it leaves out: recovering (shrinking the job as ULFM does): a lost rank ends the run.
#pragma once

namespace tauplan::exec {

/// Installs the SIGTERM/SIGINT handler and starts the watchdog thread. `rank`, `size` and the
/// host (TAUPLAN_TESTBED_HOST, else the machine's name) are named in the messages.
void start_mpi_watchdog(int rank, int size);
/// Stops the watchdog thread (the handler stays: MPI is being finalised).
void stop_mpi_watchdog();
/// The longest time one MpiWait may last, in seconds (> 0).
void set_mpi_wait_timeout(double seconds);
double mpi_wait_timeout();

/// Marks the calling (main) thread as blocked in an MPI call for `what` (a string literal, kept
/// by pointer) until the scope ends. Scopes nest; the innermost one counts.
class MpiWait {
 public:
  explicit MpiWait(const char* what, bool deadline = true);
  ~MpiWait();
  MpiWait(const MpiWait&) = delete;
  MpiWait& operator=(const MpiWait&) = delete;

 private:
  const char* previous_what_;
  long long previous_since_ns_;
};

}  // namespace tauplan::exec
