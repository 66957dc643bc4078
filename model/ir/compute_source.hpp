// compute_source.hpp: where a host's compute time comes from, and the time of a transformer
// stage's work on it.
//
// A host is timed by a compute profile (model/compute/) when one is named: its `compute_profile`
// prop (a profile of the catalog, model/catalog/profiles/NAME.json, or a JSON file, relative to
// the platform file), else the `compute_profile` of its GPU's catalog entry. Otherwise (CPU
// hosts, GPUs without a profile, workloads that are not transformers) its compute is flop /
// speed, the host's speed being what its platform says (and its `efficiency` prop says why).
// Every result names the source (host_compute_source). What it leaves out: profiles of several
// precisions for one host (one profile per host).
#pragma once

#include <string>
#include <vector>

#include "model/compute/compute_profile.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/layout.hpp"

namespace tauplan::model {

/// A profile of the catalog by name; InputError naming `file` and `key` when there is none.
const ComputeProfile& catalog_compute_profile(const std::string& name, const std::string& file,
                                              const std::string& key);
std::vector<std::string> catalog_profile_names();

/// The profile that times `host`, or null when its compute is flop / speed. Profiles are read
/// once per process and kept (the pointer stays valid).
const ComputeProfile* host_compute_profile(const Host& host, const Platform& platform);
/// One line naming where the host's compute time comes from.
std::string host_compute_source(const Host& host, const Platform& platform);

/// How far (a factor in the GEMM's m, n, k together: the Euclidean distance of their logs) a
/// profile's efficiency may be carried from its nearest measured shape. Beyond it the profile
/// says nothing about the shape, and timing it is refused.
inline constexpr double kMaxProfileExtrapolation = 8;
/// InputError naming the profile's file and `gemms` (or `attention`) when an op of `ops` lies
/// farther than kMaxProfileExtrapolation from every measured sample of its kind (profiles
/// without samples of a kind, timed by their default efficiency, are not checked for it).
void check_profile_covers(const ComputeProfile& profile, const std::vector<ComputeOp>& ops);

/// Seconds of one micro-batch's forward and backward (recomputation included) on one tensor
/// rank of pipeline stage `stage`, from the profile: the stage's layers, the logits on the
/// last stage. The embedding lookups are left out (a gather of b s h values).
struct PassSeconds {
  double forward = 0;
  double backward = 0;
  OpsTime split;  ///< forward + backward by kind
};
PassSeconds stage_pass_seconds(const Workload& workload, const Layout& layout, double batch,
                               int stage, const ComputeProfile& profile);

}  // namespace tauplan::model
