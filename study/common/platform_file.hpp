// platform_file.hpp: the one way studies load a user's platform file, SimGrid XML or a cluster
// spec (YAML, model/inputs/cluster_spec_file.hpp).
//
// A path ending in .yaml or .yml is a cluster spec: its cluster is generated as SimGrid XML
// (model/inputs/cluster_generator.hpp) into ${TMPDIR:-/tmp}/tauplan-platforms/STEM-HASH.xml, HASH
// being FNV-1a of the spec's bytes and of this build's version and commit (a new build regenerates,
// so a cached file never outlives a change of presets or generator), written only when absent,
// through a temporary name and a rename, so parallel sweeps never see half a file. That file is
// loaded with sim::load_platform; the Platform's source_file names the spec ("SPEC.yaml
// (generated)"), its source_hash stays the loaded XML's (the simulator checks it). Provenance
// (platform_provenance) names the spec and the hash of its bytes, plus the generated file.
// What it leaves out: cleaning the cache, and the testbed and calibration verbs (their
// platforms are XML files they write or read back).
#pragma once

#include <map>
#include <string>

#include "model/inputs/platform.hpp"
#include "sim/platform_loader.hpp"

namespace tauplan::study {

/// The SimGrid XML for `path`: `path` itself, or for a cluster spec the generated, cached file
/// (generated now if absent). InputError naming the spec and key for a bad spec, or the cache
/// folder when it cannot be written.
std::string platform_xml_path(const std::string& path);

/// Loads `path` (XML or cluster spec) with `network`.
model::Platform load_user_platform(const std::string& path,
                                   const sim::NetworkOptions& network = {});

/// Where a platform came from, for a result's context.
struct PlatformProvenance {
  std::string file;  ///< the user's file, as resolved
  std::string hash;  ///< FNV-1a of its bytes
  /// For a cluster spec: "platform_xml" (the generated file) and "platform_xml_hash"; else empty.
  std::map<std::string, std::string> extra;
};
/// The provenance of `platform`, loaded from `path` by load_user_platform.
PlatformProvenance platform_provenance(const std::string& path, const model::Platform& platform);

}  // namespace tauplan::study
