// simulator.hpp: runs a model::Plan as a SimGrid (S4U) discrete-event simulation.
//
// Lowering: one actor per worker on its host runs that worker's Compute and Update ops in
// order (per step: sleep the fixed overhead, then execute the step's flop on the host); every
// Collective op, once all its predecessors are done, is driven by a runner actor (one of a pool
// reused from op to op) that starts the flows of its FlowProgram stage by stage
// (collective_lowering.hpp), or, for a copy of a private op, sleeps the time the first copy
// took (private_links.hpp); a Transfer is one flow driven the same way, an Apply executes its
// flop on its server host. Barriers are instantaneous. The
// round repeats; round r+1 starts when round r's last op ends, as in the analytic engine. An
// asynchronous plan (no barrier between workers) runs in async_simulation.hpp instead.
// Heterogeneity beyond host speeds: stragglers (a host slowed by a factor on a seeded random
// fraction of its steps) and failures (a worker or server host failing at a time or at an MTBF
// rate). A failure aborts the round in flight: all its work is lost, the job stalls for
// `restart_s` (replacement host, reload of the last averaged parameters), then the round
// restarts; the result lists every failure and the time lost. What it leaves out: memory,
// PCIe and host-side data loading (beyond the step overhead), the reduction arithmetic, and
// elastic continuation without the failed worker.
// This header does not include SimGrid.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/base/chrome_trace.hpp"
#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"
#include "model/ir/result.hpp"
#include "sim/collective_lowering.hpp"

namespace tauplan::sim {

/// A host that is slowed down by `factor` (step time x factor) on a random `fraction` of its
/// compute steps, drawn per step from the job's seed.
struct Straggler {
  std::string host;
  double factor = 1;
  double fraction = 1;
};

/// A host that fails once at `at_s` seconds of simulated time (from the start of the job), or
/// repeatedly with exponentially distributed gaps of mean `mtbf_s` (seeded). host "*" means
/// every worker host of the job, each independently.
struct Failure {
  std::string host;
  double at_s = -1;
  double mtbf_s = -1;
};

struct SimOptions {
  Granularity granularity = Granularity::Step;
  /// Step reuse: once the first step of a repeated stage (a ring's 2(K-1) steps) has run as
  /// flows, the identical remaining steps take the same time when nothing else can use the
  /// network meanwhile, so they are not re-run as flows. Applied only to a collective that no
  /// other collective of the plan can overlap, on a platform without link profiles; the result
  /// is the same as without reuse (SimGrid's fluid model is deterministic), only faster.
  bool reuse_steps = true;
  /// Rounds to simulate (0: all of the plan's rounds). When fewer than the plan's, total_s is
  /// the simulated rounds' time plus the remaining rounds x the mean simulated round.
  long long sim_rounds = 0;
  /// Each simulated round, every link's latency x (1 + latency_jitter u), u seeded uniform in
  /// [-1, 1) (sim/latency_jitter.hpp); 0: off. Synchronous plans without beside_hosts, in step
  /// mode, on links without latency profiles only (check_latency_jitter).
  double latency_jitter = 0;
  std::vector<Straggler> stragglers;
  std::vector<Failure> failures;
  /// Stall after a failure before the round restarts (replacement, reload of parameters).
  double restart_s = 60;
  unsigned long long seed = 1;
  /// Worker hosts of a second, identical job that runs at the same time on the same platform
  /// (its flows share links with this job's, its compute shares any host they have in common).
  /// Empty: this job alone.
  std::vector<std::string> beside_hosts;
  /// The second job starts at this many offsets, evenly spaced over one round of this job
  /// alone; the row is the mean over them (the jobs' relative phase is not part of the plan).
  int beside_phases = 8;
  /// Job file (or "<command line>") named in errors.
  std::string origin = "<job>";
  /// The keys given as flags (--stragglers), which errors name as the flag, not the job file.
  std::set<std::string> keys_from_command_line;
  /// Where `key` was given, for an error: {origin, key}, or {"command line", "--key"}.
  std::pair<std::string, std::string> origin_of(const std::string& key) const {
    return KeyOrigins(origin, keys_from_command_line).of(key);
  }
  /// Live actors past which new stacks go without a guard page and at 256 KiB (each guarded
  /// stack is two memory mappings; Linux allows 65,530 a process). Tests lower it.
  double guarded_actor_limit = 20000;
};

/// A simulation that did not end cleanly: actors blocked forever (deadlock) or left over.
/// The CLI reports it on one line and exits with code 2.
class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws InputError (key latency_jitter) when options.latency_jitter > 0 and the jitter is not
/// defined for `plan` on the loaded platform: an asynchronous strategy, a job with beside_hosts,
/// sim_mode coarse (its merged steps' latencies are not the links'), or a link with a
/// latency_file (the profile sets that latency). simulate() checks it; an engine running several
/// plans checks them all first, so that none is simulated before one is refused.
void check_latency_jitter(const model::Plan& plan, const SimOptions& options);

/// Simulates `plan` on `platform`, which must be the platform sim::load_platform loaded in
/// this process (SimGrid holds one). Several calls in one process run one after another on the
/// same Engine; each measures its times from its own start. Spans go to `trace` (if not null)
/// under process id `trace_pid`. Returns a ResultRow with engine "simgrid"; its `extra` holds
/// the network model, granularity, simulated rounds, per-worker compute, stragglers, failures
/// and time lost. Throws InputError for a bad option (unknown host ...), SimulationError when
/// the simulation deadlocks or leaves actors behind.
/// With `options.beside_hosts`, a copy of `plan` on those hosts (its first K, K = the plan's
/// workers; same servers) runs beside it, started at each of `beside_phases` offsets in turn;
/// the row is this job's mean over the offsets, each offset's round in extra["beside"]. The
/// other job keeps running (rounds without end) until this one has simulated its rounds.
/// Step reuse is off then (the network is never the job's alone).
model::ResultRow simulate(const model::Plan& plan, const model::Platform& platform,
                          const SimOptions& options, model::ChromeTrace* trace = nullptr,
                          int trace_pid = 0);

/// Engine configuration and simulator options for a RunContext's `extra` block
/// ("simgrid_version", "network/model", "network/crosstraffic", "sim_mode", ...).
std::map<std::string, std::string> context_extra(const SimOptions& options);

const char* to_string(Granularity granularity);

}  // namespace tauplan::sim
