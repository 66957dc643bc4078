// inputs.cpp: see inputs.hpp.
#include "study/common/inputs.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "exec/job_keys.hpp"
#include "model/base/error.hpp"
#include "model/inputs/cluster_spec_file.hpp"
#include "model/ir/compute_source.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sim_job.hpp"
#include "study/common/platform_file.hpp"

#ifndef TAUPLAN_PLATFORM_DIR
#define TAUPLAN_PLATFORM_DIR "platforms"
#endif

namespace tauplan::study {

std::vector<model::KeySpec> all_job_keys() {
  std::vector<model::KeySpec> keys = model::model_job_keys();
  for (auto&& more : {sim::sim_job_keys(), exec::exec_job_keys()})
    keys.insert(keys.end(), more.begin(), more.end());
  return keys;
}

std::string resolve_platform_path(const model::Job& job) {
  const std::string value = job.text("platform");
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  const fs::path as_given(value);
  if (as_given.is_absolute()) {
    candidates.push_back(as_given);
  } else {
    if (!job.folder.empty()) candidates.push_back(fs::path(job.folder) / as_given);
    candidates.push_back(as_given);
    const char* env = std::getenv("TAUPLAN_PLATFORM_DIR");
    const fs::path dir = env && *env ? fs::path(env) : fs::path(TAUPLAN_PLATFORM_DIR);
    candidates.push_back(dir / as_given);
    if (as_given.extension() != ".xml") candidates.push_back(dir / (value + ".xml"));
    if (!model::cluster::is_cluster_spec_path(value))
      candidates.push_back(dir / "clusters" / (value + ".yaml"));
  }
  for (const auto& candidate : candidates)
    if (fs::is_regular_file(candidate)) return candidate.lexically_normal().string();
  const auto [origin, key] = job.origin_of("platform");
  throw InputError(origin, key,
                   "a platform XML file or cluster spec (.yaml), or the name of one in " +
                       std::string(TAUPLAN_PLATFORM_DIR) + " or its clusters/",
                   "'" + value + "' (not found)");
}

model::Workload load_job_workload(const model::Job& job) {
  std::string workload = job.text("workload");
  namespace fs = std::filesystem;
  std::error_code error;
  if (!job.folder.empty() && !fs::path(workload).is_absolute() &&
      fs::is_regular_file(fs::path(job.folder) / workload, error))
    workload = (fs::path(job.folder) / workload).lexically_normal().string();
  try {
    return model::load_workload(workload);
  } catch (const InputError& e) {
    // Name the job file and key (or the flag); keep the loader's detail.
    const auto [origin, key] = job.origin_of("workload");
    throw InputError(origin, key, e.what());
  }
}

model::JobInputs load_inputs(const std::string& job_file,
                             const std::map<std::string, std::string>& overrides) {
  model::JobInputs inputs;
  inputs.job = model::load_job(job_file, all_job_keys(), overrides);
  const model::Job& job = inputs.job;
  inputs.workload = load_job_workload(job);
  inputs.platform_path = resolve_platform_path(job);
  sim::NetworkOptions network = sim::network_options(job);
  network.origin = job.file;
  inputs.platform = load_user_platform(inputs.platform_path, network);
  inputs.convergence = model::convergence_model(job, inputs.workload);
  inputs.options = model::strategy_options(job);
  inputs.strategies = job.list("strategies");
  inputs.log = &std::cerr;
  if (inputs.strategies.empty()) throw InputError(job.file, "strategies", "at least one strategy");
  return inputs;
}

std::string compute_sources(const model::Platform& platform) {
  std::set<std::string> sources;
  for (const model::Host& host : platform.hosts)
    if (host.role == model::HostRole::Worker)
      sources.insert(model::host_compute_source(host, platform));
  std::string joined;
  for (const std::string& source : sources)
    joined += (joined.empty() ? "" : " | ") + source;
  return joined;
}

model::RunContext make_context(const model::JobInputs& inputs, const std::string& verb,
                               const std::string& engine) {
  model::RunContext context;
  context.verb = verb;
  context.engine = engine;
  context.job_file = inputs.job.file;
  PlatformProvenance provenance = platform_provenance(inputs.platform_path, inputs.platform);
  context.platform_file = provenance.file;
  context.platform_hash = provenance.hash;
  context.extra.merge(provenance.extra);
  context.workload = inputs.workload.name + " (" + inputs.workload.source + ")";
  context.convergence = inputs.convergence->describe();
  context.seed = static_cast<unsigned long long>(inputs.job.integer("seed"));
  context.extra["simgrid_version"] = sim::simgrid_version();
  context.extra["compute"] = compute_sources(inputs.platform);
  return context;
}

}  // namespace tauplan::study
