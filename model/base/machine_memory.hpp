// machine_memory.hpp: how much memory this machine can still give a process, for the checks that
// refuse a job whose Plan or simulation would not fit (one line and exit 2, not a kill by the
// kernel half an hour in).
//
// Reads MemAvailable from /proc/meminfo (Linux's estimate of memory available to a new workload
// without swapping). What it leaves out: cgroup limits (a container's memory.max), other
// processes that grow meanwhile, and systems without /proc (the check is then skipped).
#pragma once

namespace tauplan::model {

/// Bytes this machine has available now (MemAvailable), or a negative value when unknown.
double available_memory_bytes();

}  // namespace tauplan::model
