// cluster_spec_file.hpp: a generated GPU cluster described in a few lines of YAML (a "cluster
// spec"), and the overrides it shares with `tauplan platform`'s flags.
//
// A cluster spec names a preset of model/inputs/cluster_generator.hpp and a node count, and may
// replace any of the preset's numbers:
//
//   preset: dgx-h100          # required: dgx-a100, dgx-h100, hgx-h200, dgx-b200
//   nodes: 2048               # required
//   wiring: rail              # rail | plain
//   oversubscription: 2       # leaf down:up
//   nic_bandwidth: 400Gbps    # bandwidths and times need their unit
//
// Override keys: wiring, gpus_per_node, gpu, efficiency, nvlink_bandwidth, nic_bandwidth,
// nvlink_latency, nic_latency, switch_latency, leaf_down_ports, oversubscription,
// domains_per_pod, core_oversubscription. Each replaces the preset's number and, where the spec
// keeps one, its source ("given in FILE"). The spec is checked with cluster_shape when read, so a
// bad file fails with one InputError naming the file and the key.
// What it leaves out: generating or caching the XML (study/common/platform_file.hpp does, for every
// place that takes a platform), and anything but one flat map of scalars (no anchors, no lists).
#pragma once

#include <string>
#include <vector>

#include "model/inputs/cluster_generator.hpp"

namespace tauplan::model::cluster {

/// The override keys, in the order above (YAML spelling; the CLI's flag is "--" + the key with
/// '-' for '_').
const std::vector<std::string>& override_keys();

/// Every key of a cluster spec YAML with its meaning, for `tauplan help-keys`: preset, nodes,
/// then override_keys() in order (the reader accepts exactly these).
struct SpecKey {
  std::string name;
  std::string meaning;
};
std::vector<SpecKey> spec_keys();

/// Replaces one number of `spec` (or the wiring or the GPU) from its text. `field` is one of
/// override_keys(); errors are InputError(origin, key, ...): a whole number, a number, a
/// bandwidth or time with its unit ("400Gbps", "1.4us"; a bare number is refused), a latency
/// >= 0. `source` replaces the number's source, where the spec keeps one.
void apply_override(ClusterSpec& spec, const std::string& field, const std::string& text,
                    const std::string& origin, const std::string& key, const std::string& source);

/// A cluster spec from YAML text; `origin` names it in errors and sources. Checked with
/// cluster_shape(spec, origin).
ClusterSpec parse_cluster_spec(const std::string& text, const std::string& origin);
/// The same, from a file.
ClusterSpec read_cluster_spec(const std::string& yaml_path);

/// True when `path` ends in .yaml or .yml: a cluster spec where a platform is expected.
bool is_cluster_spec_path(const std::string& path);

}  // namespace tauplan::model::cluster
