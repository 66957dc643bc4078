// cpu_steal.hpp: how much of this machine's CPU time the hypervisor took (steal) over a
// measurement, from the aggregate `cpu` line of /proc/stat.
//
// On a virtual machine, a vCPU that the host does not run for a while shows as steal: the
// guest's processes, the testbed's link emulator among them, simply stop. A wall-clock
// measurement taken under steal is slower than the machine it describes, and two calibrations
// of one testbed taken at different steal disagree (experiments/testbed/README.md: 14% apart
// in the MPI latency factor under 9-47% steal). Every measurement that can records the share
// of CPU time stolen while it ran, so that a reader can tell a slow network from a busy host.
// The share = stolen jiffies / all jiffies of all CPUs over the interval (user, nice, system,
// idle, iowait, irq, softirq, steal; guest time is already counted in user).
// What it leaves out: steal on other machines of a real cluster (each rank's host would have
// to report its own), and which process the stolen time would have run.
#pragma once

#include <string>

namespace tauplan::exec {

/// Cumulative CPU time of all CPUs, in jiffies, as /proc/stat's `cpu` line gives it.
struct CpuTimes {
  double steal = 0;
  double total = 0;
  bool valid = false;  ///< false where /proc/stat could not be read or parsed
};

/// Reads the aggregate `cpu ` line of `proc_stat` (the text of /proc/stat); invalid (valid =
/// false) when there is none or it has fewer than the 8 fields up to steal.
CpuTimes parse_proc_stat(const std::string& proc_stat);

/// This machine's CPU times now; invalid where /proc/stat is absent (not Linux).
CpuTimes read_cpu_times();

/// The share of CPU time stolen between `before` and `after`, in [0, 1]; -1 when either is
/// invalid or no time was counted between them (too short an interval: /proc/stat counts in
/// USER_HZ ticks, 10 ms on Linux).
double steal_fraction(const CpuTimes& before, const CpuTimes& after);

/// Starts counting at construction; fraction() is the steal share since then (-1: unknown).
class StealMeter {
 public:
  StealMeter() : start_(read_cpu_times()) {}
  double fraction() const { return steal_fraction(start_, read_cpu_times()); }

 private:
  CpuTimes start_;
};

/// Above this share of stolen CPU time a measurement's log warns: 5%, against a median of 1%
/// over the main matrix's run on a quiet evening (experiments/testbed/README.md).
constexpr double kStealWarningFraction = 0.05;

/// "12.3%" or "unknown": for logs.
std::string describe_steal(double fraction);

}  // namespace tauplan::exec
