// cpu_affinity.hpp: keeps the calling thread, and the threads and children it starts while the
// guard lives, on one CPU, then gives the thread back the CPUs it had.
//
// Why: validate's lockstep timing compares thread CPU times taken in separate phases (a
// calibration, a measurement in a child process, a calibration again). On a virtual machine whose
// hypervisor reports no steal time, a vCPU whose host is busier makes every thread on it slower
// by the same factor, and a phase that lands on another vCPU than the calibration it is compared
// with is off by that factor (1.6-1.8x seen in a clean-clone CI run on 2026-11-27). On one CPU
// every phase sees the same host. The K worker threads of a lockstep phase then share that CPU:
// its wall time grows, but lockstep times each op in thread CPU time, which sharing does not
// change. Linux only (elsewhere the guard does nothing and cpu() is -1). What it leaves out: it
// pins to the first CPU this process may use, not to the quietest one, and it does nothing where
// the kernel refuses (then `cpu()` is -1 and the caller says so).
#pragma once

#ifdef __linux__
#include <sched.h>
#endif

namespace tauplan::study {

class OneCpu {
 public:
  /// Pins the calling thread to the first CPU of its affinity mask. Threads and child processes
  /// it starts while the guard lives inherit the mask.
  OneCpu();
  /// Restores the mask the thread had.
  ~OneCpu();
  OneCpu(const OneCpu&) = delete;
  OneCpu& operator=(const OneCpu&) = delete;

  /// The CPU the thread runs on while the guard lives, or -1 if it could not be pinned.
  int cpu() const { return cpu_; }

 private:
#ifdef __linux__
  cpu_set_t before_{};
#endif
  int cpu_ = -1;
};

}  // namespace tauplan::study
