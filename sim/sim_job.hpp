// sim_job.hpp: the job keys the simulator declares, and job -> simulator options.
//
// Every key is also a CLI flag (network_model <-> --network-model). The CLI concatenates this
// table with model_job_keys() (and exec's). What it leaves out: keys the model owns (seed,
// workers, collective ...), which the simulator reads from the same Job.
#pragma once

#include <string>
#include <vector>

#include "model/ir/job.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simulator.hpp"

namespace tauplan::sim {

/// network_model, crosstraffic, tcp_gamma, sim_mode, sim_rounds, sim_reuse_steps, stragglers,
/// failures, failure_restart_s, trace.
std::vector<model::KeySpec> sim_job_keys();

/// Network options from a job (validated by the loader against sim_job_keys()).
NetworkOptions network_options(const model::Job& job);
/// Simulator options from a job; parses straggler and failure entries (InputError naming the
/// job file and key, or the flag that gave it, on a malformed entry). Reads `seed` from the model's
/// keys when present.
SimOptions sim_options(const model::Job& job);

/// "HOST:FACTOR:FRACTION" or "HOST:FACTOR" (every step), e.g. "gpu-3:2:0.1"; errors name `where`
/// ({job file, key} or {"command line", "--key"}: Job::origin_of).
Straggler parse_straggler(const std::string& text,
                          const std::pair<std::string, std::string>& where);
/// "HOST@TIME" (fails once, e.g. "gpu-3@30s") or "HOST~MTBF" (e.g. "*~2h"); errors name `where`.
Failure parse_failure(const std::string& text, const std::pair<std::string, std::string>& where);

}  // namespace tauplan::sim
