// system.hpp: the few system calls the testbed needs, each bounded in time.
//
// Runs iproute2 (`ip`) without a shell and with a time limit, checks the rights to create
// network namespaces, moves the calling thread into a namespace (setns: the network namespace is
// per thread, so one process can measure between namespaces from several threads), lists
// namespaces and the processes inside them, and checks whether a recorded pid is still the
// process it was. What it leaves out: anything outside iproute2 and /proc (no netlink library).
#pragma once

#include <string>
#include <vector>

namespace tauplan::testbed {

struct CommandOutput {
  int exit_code = -1;  ///< 128 + signal when killed (124 after the time limit)
  std::string out;
  std::string err;
};

/// Runs argv[0] (looked up in PATH) with `argv`, no shell, stdin from /dev/null, and kills it
/// after `timeout_s`. Throws std::runtime_error when it cannot start.
CommandOutput run_command(const std::vector<std::string>& argv, double timeout_s = 15);
/// run_command, and std::runtime_error naming the command and its stderr unless it exits 0.
std::string run_checked(const std::vector<std::string>& argv, double timeout_s = 15);

/// Seconds on CLOCK_MONOTONIC (one clock for every namespace of this machine).
double monotonic_s();

/// Whether this process may create network namespaces and enter them (effective CAP_NET_ADMIN
/// and CAP_SYS_ADMIN, and an `ip` that runs); `why` says what is missing otherwise.
bool can_manage_namespaces(std::string& why);

/// What stops this process from running a testbed: `key` "privileges" (no effective CAP_NET_ADMIN
/// and CAP_SYS_ADMIN), "ip" (no iproute2 `ip` that runs) or "mpirun" (no OpenMPI `mpirun` on the
/// PATH: the testbed's ranks are MPI ranks), the first found, with what was expected and why;
/// an empty key when nothing does.
struct TestbedBlocker {
  std::string key;
  std::string expected;
  std::string why;
};
TestbedBlocker testbed_blocker();

/// Whether an executable `name` is on the PATH.
bool on_path(const std::string& name);

/// Names of the network namespaces iproute2 knows (/run/netns), sorted.
std::vector<std::string> list_namespaces();
/// Pids of the processes inside namespace `name` (`ip netns pids`); empty if none or unknown.
std::vector<int> namespace_pids(const std::string& name);
/// Whether the calling thread is in network namespace `name` (same inode as /run/netns/name).
bool in_namespace(const std::string& name);

/// Moves the calling thread into network namespace `name` for the life of the object, and back
/// on destruction. Throws std::runtime_error when the namespace cannot be entered.
class NamespaceGuard {
 public:
  explicit NamespaceGuard(const std::string& name);
  ~NamespaceGuard();
  NamespaceGuard(const NamespaceGuard&) = delete;
  NamespaceGuard& operator=(const NamespaceGuard&) = delete;

 private:
  int home_fd_ = -1;
};

/// Moves the calling thread into network namespace `name` for good (a process about to exec).
void enter_namespace(const std::string& name);

/// Whether `pid` runs and its command line contains `marker` (so a recycled pid is not taken
/// for the process a state file recorded).
bool process_matches(int pid, const std::string& marker);
/// The command line of `pid` with arguments separated by spaces ("" when it is gone).
std::string process_command_line(int pid);
/// CPU seconds (user + system) `pid` has used, or -1 when it is gone.
double process_cpu_seconds(int pid);

/// Sends SIGTERM, waits up to `grace_s` for the pid to go, then SIGKILL. Only for pids the
/// caller made or found inside its own namespaces.
void stop_process(int pid, double grace_s);

/// The path of the running executable (/proc/self/exe resolved).
std::string self_executable();

}  // namespace tauplan::testbed
