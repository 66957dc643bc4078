// lifecycle.hpp: bringing a testbed up, finding it, and removing it (and whatever is left of it).
//
// `up` builds, for a Spec: a control namespace <prefix>ctl holding a bridge <prefix>br (the
// management network 10.211.1.0/24: only mpirun and its daemons use it; nothing shapes it); one
// namespace <prefix>r<rank> per host with a TUN interface <prefix>emu on the emulated network
// 10.211.0.0/24 (IPv6 off) and a veth <prefix>mgmt into the bridge; then starts the fabric
// (fabric.hpp) as a detached process and waits until it holds every TUN. Nothing is ever made in
// the root namespace and no namespace has a default route, so no address of the testbed is
// reachable from outside it and no packet of it can leave. The state (spec, fabric pid, phase,
// provenance) is a JSON file, /run/tauplan/<prefix>testbed.json, so that `status`, `down`, the
// launcher and the calibration know what is up. Everything is removed by name prefix, so a run
// killed with SIGKILL leaves nothing that `down` (or the next `up`) cannot find: namespaces named
// <prefix>*, interfaces named <prefix>* in the root namespace (there should never be any),
// processes inside those namespaces, fabric processes of that prefix, and the state files.
// What it leaves out: anything the kernel does not name with the prefix (there is nothing else).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/testbed/fabric.hpp"
#include "exec/testbed/spec.hpp"

namespace tauplan::testbed {

/// Where states live (/run/tauplan, or $TAUPLAN_TESTBED_STATE_DIR).
std::string state_dir();
std::string state_path(const std::string& prefix);
/// The temporary folder (TMPDIR) of a host namespace's MPI daemon and ranks, under state_dir().
std::string host_tmp_dir(const std::string& netns);
std::string fabric_log_path(const std::string& prefix);
std::string fabric_stats_path(const std::string& prefix);

struct State {
  std::string phase;  ///< "building" while `up` runs, then "up"
  int owner_pid = 0;  ///< the `up` process (building)
  int fabric_pid = 0;
  std::string created;  ///< ISO 8601 UTC
  std::string version;
  std::string commit;
  double ttl_s = 0;
  std::string tcp_congestion_control;  ///< of the host namespaces, as read back from them
  Spec spec;
};

nlohmann::json to_json(const State& state);
/// The state of `prefix`, or nothing when no state file exists. Throws std::runtime_error when
/// the file exists but cannot be read as a state (the caller treats it as a leftover).
std::optional<State> read_state(const std::string& prefix);

/// Everything of a prefix that exists now.
struct Leftovers {
  bool state_file = false;
  std::vector<std::string> namespaces;
  std::vector<std::string> root_interfaces;  ///< <prefix>* in the root namespace
  std::vector<int> fabric_pids;              ///< live fabric processes of this prefix
  std::vector<int> processes;                ///< live processes inside the namespaces
  bool empty() const;
  std::string describe() const;
};
Leftovers find_leftovers(const std::string& prefix);

/// Stops the fabric and every process inside the prefix's namespaces, deletes the namespaces,
/// any root-namespace interface of the prefix and the state files; returns what it found. Each
/// step is bounded in time (seconds). Never touches a name without the prefix.
Leftovers remove_testbed(const std::string& prefix);

/// Removes the prefix's lock file and fabric log too (what `down` does after remove_testbed; a
/// failed `up` keeps the log, which its error message names).
void remove_prefix_files(const std::string& prefix);

struct UpOptions {
  FabricOptions fabric;
  std::string tcp_congestion_control;  ///< empty: what new namespaces inherit from the kernel
  /// The executable that runs `testbed fabric` (this one).
  std::string executable;
};

/// Builds the testbed of `spec` and starts its fabric. Throws InputError when a testbed of the
/// prefix is up or being built, and std::runtime_error when a step fails; SIGINT, SIGTERM or
/// SIGHUP during the build throw Interrupted. On every throw, what was made is removed first.
State bring_up(const Spec& spec, const UpOptions& options);

/// A build interrupted by a signal (what was made has been removed).
struct Interrupted : std::runtime_error {
  explicit Interrupted(int signal_number)
      : std::runtime_error("interrupted by signal " + std::to_string(signal_number)),
        signal(signal_number) {}
  int signal;
};

/// What `status` reports.
struct Status {
  std::string health;  ///< "up", "down" or "broken" (state without its fabric or namespaces)
  std::optional<State> state;
  Leftovers leftovers;
  nlohmann::json fabric_stats;  ///< the fabric's last counters (null when none)
  double fabric_cpu_s = -1;     ///< CPU the fabric process has used
  std::string problem;          ///< why it is broken
};
Status testbed_status(const std::string& prefix);

/// The state of a testbed that is up, or InputError naming the state file when none is (or it is
/// broken: its fabric or a namespace is gone).
State require_up(const std::string& prefix);

/// Serialises `up`/`down` of one prefix (an exclusive lock on <prefix>testbed.lock, released
/// when the object goes). Throws InputError when another holds it.
class PrefixLock {
 public:
  explicit PrefixLock(const std::string& prefix);
  ~PrefixLock();
  PrefixLock(const PrefixLock&) = delete;
  PrefixLock& operator=(const PrefixLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tauplan::testbed
