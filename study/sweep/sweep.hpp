// sweep.hpp: `tauplan sweep JOB.yaml --set KEY=V1,V2,... [--set ...] [--engine ENGINE] [--out
// DIR] [--jobs N] [--json]`, the grid of every combination of job keys, by an engine that
// predicts (analytic, the default, or simgrid; chosen by its capabilities).
//
// Points are the Cartesian product of the --set axes (the first axis varies slowest), each a
// job with those keys overridden (on top of the job file and any job flags given to sweep).
// Every point is checked before any work (a bad value is exit 2). Points of an engine that
// shares the process (analytic) run in this process when they share one platform and network
// model, else one child per point running the engine's verb (`tauplan predict`); simgrid points
// run one `tauplan simulate` child per point (SimGrid holds one engine per process), --jobs at a
// time (default: the number of cores). Under `mpirun -np N` the points are
// shared among the ranks (round robin over the points still to do) and rank 0 gathers them and
// writes the merged result. Each finished point is kept in DIR/points/<hash>.json, the hash
// naming the job file's content, the engine, the point's keys and the bytes of the files they
// name (the platform, a workload or table file), so an interrupted sweep
// started again computes only the points that are missing (--fresh recomputes all). Results:
// DIR/sweep.csv (columns: point, set.<key> for each swept key, status, then the result schema)
// and DIR/sweep.json, and the CSV (or with --json the JSON) on stdout.
// Points of an engine that does not inject failures (analytic), for a job with `failures:
// [HOST~MTBF, ...]`, get the expected time with failures and restarts
// (study/common/revocation.hpp) as total_s, the failure-free time in failure_free_total_s;
// HOST@TIME failures are left to the simulator.
// Exit codes: 0 every point succeeded; 2 bad input (nothing computed); 3 the sweep finished but
// some points failed (bad value for that point, simulation error): they are listed in the
// output with status "error"; 1 internal error.
// What it leaves out: retrying crashed children (a point whose child crashed is not kept, so a
// second run retries it), load balancing by cost (round robin), and sharing the work of one
// point between processes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tauplan::study {

struct SweepRequest {
  std::string job_file;
  std::map<std::string, std::string> overrides;  ///< job flags given to sweep
  std::vector<std::string> sets;                 ///< --set KEY=V1,V2,...
  std::string engine = "analytic";
  std::string out;
  int jobs = 0;
  bool fresh = false;
  bool quiet = false;
};

struct SweepOutcome {
  bool reporter = false;  ///< this process reports (rank 0, or no MPI)
  nlohmann::json document;
  std::string csv;
  std::size_t failed = 0;
  std::string summary;  ///< for stderr: counts, where the results are, each failed point
};

SweepOutcome run_sweep(const SweepRequest& request);

}  // namespace tauplan::study
