// cluster_spec_file.cpp: the override table shared by cluster spec files and `tauplan platform`,
// and the YAML reader; see cluster_spec_file.hpp.
#include "model/inputs/cluster_spec_file.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/units.hpp"
#include "model/base/yaml_util.hpp"

namespace tauplan::model::cluster {
namespace {

enum class Kind { Wiring, Word, Whole, Real, Bandwidth, Time };

// One override key: what its text is, the spec's member it sets and the source it replaces.
struct Field {
  const char* key;
  Kind kind;
  const char* meaning;  ///< for `tauplan help-keys`
  double ClusterSpec::*real = nullptr;
  int ClusterSpec::*whole = nullptr;
  std::string ClusterSpec::*word = nullptr;
  std::string ClusterSpec::*source = nullptr;
};

const Field kFields[] = {
    {"wiring", Kind::Wiring,
     "rail (NIC j of every node on rail leaf j) or plain (a node's NICs on one leaf)"},
    {"gpus_per_node", Kind::Whole, "GPUs (and NICs) per node", nullptr,
     &ClusterSpec::gpus_per_node},
    {"gpu", Kind::Word, "a GPU of model/catalog/gpus.yaml with a bf16 peak", nullptr, nullptr,
     &ClusterSpec::gpu_model, &ClusterSpec::gpu_source},
    {"efficiency", Kind::Real, "fraction of the dense bf16 peak a host reaches, in (0, 1]",
     &ClusterSpec::efficiency, nullptr, nullptr, &ClusterSpec::efficiency_source},
    {"nvlink_bandwidth", Kind::Bandwidth, "per GPU, per direction, with a unit (e.g. 450GBps)",
     &ClusterSpec::nvlink_bandwidth_Bps, nullptr, nullptr, &ClusterSpec::nvlink_source},
    {"nic_bandwidth", Kind::Bandwidth,
     "per NIC (one per GPU), per direction, with a unit (e.g. 400Gbps)",
     &ClusterSpec::nic_bandwidth_Bps, nullptr, nullptr, &ClusterSpec::nic_source},
    {"nvlink_latency", Kind::Time, "GPU to NVSwitch, one way, with a unit (e.g. 1us)",
     &ClusterSpec::nvlink_latency_s, nullptr, nullptr, &ClusterSpec::nvlink_latency_source},
    {"nic_latency", Kind::Time, "GPU -> PCIe -> NIC -> leaf port, one way, with a unit",
     &ClusterSpec::nic_latency_s, nullptr, nullptr, &ClusterSpec::nic_latency_source},
    {"switch_latency", Kind::Time, "one switch hop, with a unit", &ClusterSpec::switch_latency_s,
     nullptr, nullptr, &ClusterSpec::switch_latency_source},
    {"leaf_down_ports", Kind::Whole, "leaf ports facing NICs", nullptr,
     &ClusterSpec::leaf_down_ports, nullptr, &ClusterSpec::leaf_source},
    {"oversubscription", Kind::Real, "leaf down : up bandwidth (1 = non-blocking)",
     &ClusterSpec::oversubscription},
    {"domains_per_pod", Kind::Whole, "domains (leaf groups) per pod; 0: every domain in one pod",
     nullptr, &ClusterSpec::domains_per_pod},
    {"core_oversubscription", Kind::Real, "a pod's NIC bandwidth : its uplink",
     &ClusterSpec::core_oversubscription},
};

// Whole numbers beyond this are refused here; cluster_shape checks the real ranges.
constexpr double kMaxWhole = 1e9;

// Text in single quotes, for messages (not named `quoted`: std::quoted, found by argument-
// dependent lookup where <iomanip> is included, would win for a non-const std::string).
std::string in_quotes(const std::string& text) {
  return "'" + text + "'";
}

int whole_number(const std::string& text, const std::string& origin, const std::string& key) {
  double value = 0;
  if (!parse_number(text, value) || value != std::floor(value) || std::abs(value) > kMaxWhole)
    throw InputError(origin, key, "a whole number", in_quotes(text));
  return static_cast<int>(value);
}

double real_number(const std::string& text, const std::string& origin, const std::string& key) {
  double value = 0;
  if (!parse_number(text, value)) throw InputError(origin, key, "a number", in_quotes(text));
  return value;
}

// A bandwidth or a time: a bare number is refused, since its unit would be a guess.
double quantity(Kind kind, const std::string& text, const std::string& origin,
                const std::string& key) {
  double bare = 0;
  const bool bandwidth = kind == Kind::Bandwidth;
  if (parse_number(text, bare))
    throw InputError(origin, key,
                     bandwidth ? "a bandwidth with its unit (400Gbps, 450GBps)"
                               : "a time with its unit (1.4us, 500ns)",
                     in_quotes(text) + " (no unit)");
  if (bandwidth) return parse_bandwidth(text, origin, key);
  const double seconds = parse_seconds(text, origin, key);
  if (seconds < 0) throw InputError(origin, key, "a latency >= 0", in_quotes(text));
  return seconds;
}

const Field& field_of(const std::string& field) {
  for (const Field& f : kFields)
    if (field == f.key) return f;
  throw std::invalid_argument("apply_override: no override key " + field);
}

// The text of a scalar value; a list, a map or nothing is an InputError naming the key.
std::string scalar(const YAML::Node& node, const std::string& origin, const std::string& key) {
  if (node.IsScalar()) return node.Scalar();
  throw InputError(origin, key, "a single value",
                   node.IsSequence() ? "a list"
                   : node.IsMap()    ? "a map"
                                     : "nothing");
}

}  // namespace

const std::vector<std::string>& override_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const Field& f : kFields)
      out.emplace_back(f.key);
    return out;
  }();
  return keys;
}

void apply_override(ClusterSpec& spec, const std::string& field, const std::string& text,
                    const std::string& origin, const std::string& key, const std::string& source) {
  const Field& f = field_of(field);
  switch (f.kind) {
    case Kind::Wiring:
      spec.wiring = parse_wiring(text, origin, key);
      break;
    case Kind::Word:
      spec.*f.word = text;
      break;
    case Kind::Whole:
      spec.*f.whole = whole_number(text, origin, key);
      break;
    case Kind::Real:
      spec.*f.real = real_number(text, origin, key);
      break;
    case Kind::Bandwidth:
    case Kind::Time:
      spec.*f.real = quantity(f.kind, text, origin, key);
      break;
  }
  if (f.source != nullptr) spec.*f.source = source;
}

std::vector<SpecKey> spec_keys() {
  std::vector<SpecKey> keys = {
      {"preset", fmt::format("the cluster it starts from: {}", fmt::join(preset_names(), ", "))},
      {"nodes", "number of nodes (whole, >= 1)"}};
  for (const Field& f : kFields)
    keys.push_back({f.key, f.meaning});
  return keys;
}

ClusterSpec parse_cluster_spec(const std::string& text, const std::string& origin) {
  const YAML::Node root = yaml_util::parse(text, origin);
  if (!root.IsMap())
    throw InputError(origin, "(document)", "a map of cluster keys (preset, nodes, ...)");
  std::vector<std::string> known = {"preset", "nodes"};
  known.insert(known.end(), override_keys().begin(), override_keys().end());
  yaml_util::reject_unknown_keys(root, known, origin);
  for (const char* required : {"preset", "nodes"})
    if (!root[required])
      throw InputError(origin, required, "a value (a cluster spec needs preset and nodes)", "none");
  ClusterSpec spec = preset(scalar(root["preset"], origin, "preset"), origin, "preset");
  spec.nodes = whole_number(scalar(root["nodes"], origin, "nodes"), origin, "nodes");
  const std::string source = "given in " + origin;
  for (const std::string& key : override_keys())
    if (const YAML::Node node = root[key])
      apply_override(spec, key, scalar(node, origin, key), origin, key, source);
  cluster_shape(spec, origin);
  return spec;
}

ClusterSpec read_cluster_spec(const std::string& yaml_path) {
  return parse_cluster_spec(yaml_util::read_file(yaml_path, "platform"), yaml_path);
}

bool is_cluster_spec_path(const std::string& path) {
  const auto ends_with = [&](const std::string& tail) {
    return path.size() > tail.size() &&
           path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends_with(".yaml") || ends_with(".yml");
}

}  // namespace tauplan::model::cluster
