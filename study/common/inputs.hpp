// inputs.hpp: a job loaded with every input an engine needs, and its provenance.
//
// The job file and its flags are checked against every key the executable knows (model's,
// sim's and exec's tables); the workload comes from the catalog or a file, the platform from
// SimGrid XML or a cluster spec (study/common/platform_file.hpp, with the job's network model), the
// convergence model from the job. What it leaves out: running anything (study/common/engines.hpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/ir/engine.hpp"
#include "model/ir/job.hpp"
#include "model/ir/result.hpp"

namespace tauplan::study {

/// Every job key the executable knows: model's, sim's and exec's tables together.
std::vector<model::KeySpec> all_job_keys();

/// A platform name ("sparknet-ec2") or path, resolved against the job's folder, then the
/// platforms/ folder (TAUPLAN_PLATFORM_DIR, or the source tree's platforms/): NAME, NAME.xml,
/// then clusters/NAME.yaml. A path ending in .yaml or .yml is a cluster spec
/// (study/common/platform_file.hpp loads it).
std::string resolve_platform_path(const model::Job& job);

/// The job's `workload`: a file named relative to the job file is found there (as the platform
/// and the convergence table are), a catalog name or another path is taken as given; errors
/// name the job file and key `workload` with the loader's detail. Every verb loads a job's
/// workload through this.
model::Workload load_job_workload(const model::Job& job);

/// Loads the job (file + overrides, key -> value), the workload, the platform and the
/// convergence model. InputError on any bad input.
model::JobInputs load_inputs(const std::string& job_file,
                             const std::map<std::string, std::string>& overrides);

/// Provenance shared by every engine (job, platform and hash, workload, convergence, seed).
/// Where the workers' compute times come from: each distinct source once
/// (model/ir/compute_source.hpp).
std::string compute_sources(const model::Platform& platform);
model::RunContext make_context(const model::JobInputs& inputs, const std::string& verb,
                               const std::string& engine);

}  // namespace tauplan::study
