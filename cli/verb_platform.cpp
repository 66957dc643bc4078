// verb_platform.cpp: `tauplan platform --preset NAME --nodes N --out FILE [overrides]` or
// `tauplan platform --spec FILE.yaml --out FILE [--nodes N] [overrides]`, a GPU cluster as it is
// built (DGX/HGX nodes, NVLink, one NIC per GPU, rail or plain leaves, oversubscribed spine and
// core) written as SimGrid XML by model/inputs/cluster_generator.hpp, which says what is modelled
// and left out. Every override flag replaces the preset's (or the spec file's) number and its
// source
// ("given on the command line"), through the table of model/inputs/cluster_spec_file.hpp; --spec
// with
// --preset is refused (the spec names its preset). What it leaves out: loading the platform.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "model/inputs/cluster_generator.hpp"
#include "model/inputs/cluster_spec_file.hpp"

namespace tauplan::cli {
namespace {

namespace mc = model::cluster;

constexpr const char* kOrigin = "command line";

struct PlatformArgs {
  std::string preset;
  std::optional<int> nodes;
  std::string spec;
  std::string out;
  /// Override key of model/inputs/cluster_spec_file.hpp -> its flag's text ("" when not given).
  std::map<std::string, std::string> overrides;
};

std::string flag_of(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return "--" + key;
}

// The base: the spec file's cluster, or the preset's with --nodes.
mc::ClusterSpec base_spec(const PlatformArgs& a) {
  if (!a.spec.empty()) {
    if (!a.preset.empty())
      throw InputError(kOrigin, "--preset", "no preset with --spec (the spec file names one)",
                       "'" + a.preset + "'");
    mc::ClusterSpec s = mc::read_cluster_spec(a.spec);
    if (a.nodes) s.nodes = *a.nodes;
    return s;
  }
  if (a.preset.empty())
    throw InputError(kOrigin, "--preset",
                     "a preset (dgx-a100, dgx-h100, hgx-h200, dgx-b200) or --spec FILE", "none");
  mc::ClusterSpec s = mc::preset(a.preset, kOrigin, "--preset");
  s.nodes = a.nodes.value_or(0);
  return s;
}

// Every override flag given replaces the base's number and its source.
mc::ClusterSpec make_spec(const PlatformArgs& a) {
  if (a.out.empty()) throw InputError(kOrigin, "--out", "a file to write the platform to", "none");
  mc::ClusterSpec s = base_spec(a);
  for (const auto& [key, text] : a.overrides) {
    if (text.empty()) continue;
    const std::string flag = flag_of(key);
    mc::apply_override(s, key, text, kOrigin, flag, "given on the command line (" + flag + ")");
  }
  return s;
}

void run_platform(const PlatformArgs& args) {
  const mc::ClusterSpec spec = make_spec(args);
  const mc::ClusterShape shape = mc::cluster_shape(spec, kOrigin, "--");
  const std::string xml =
      model::simgrid_xml::to_xml(mc::make_cluster_platform(spec, kOrigin, "--"));
  std::ofstream file(args.out, std::ios::binary);
  if (file) file << xml;
  if (!file) throw InputError(kOrigin, "--out", "a file that can be written", "'" + args.out + "'");
  file.close();
  std::cout << "wrote " << args.out << " (" << xml.size() << " bytes)\n"
            << mc::cluster_summary(spec, shape) << "\n";
}

struct OverrideFlag {
  const char* key;
  const char* help;
  const char* type_name;
};

const OverrideFlag kOverrideFlags[] = {
    {"wiring", "rail (NIC j on rail leaf j) | plain (a node on a leaf)", "WORD"},
    {"gpus_per_node", "GPUs per node [preset: 8]", "INT"},
    {"gpu", "gpu_model, a key of model/catalog/gpus.yaml", "MODEL"},
    {"efficiency", "fraction of the dense bf16 peak a host reaches", "REAL"},
    {"nvlink_bandwidth", "per GPU per direction (450GBps)", "BW"},
    {"nic_bandwidth", "per NIC per direction (400Gbps)", "BW"},
    {"nvlink_latency", "GPU <-> NVSwitch link (1.4us)", "TIME"},
    {"nic_latency", "GPU -> NIC -> leaf port (2us)", "TIME"},
    {"switch_latency", "one switch hop (0.5us)", "TIME"},
    {"leaf_down_ports", "leaf ports facing NICs", "INT"},
    {"oversubscription", "leaf down:up ratio >= 1 [1]", "REAL"},
    {"domains_per_pod", "leaf domains per pod [0: one pod]", "INT"},
    {"core_oversubscription", "pod NIC bandwidth : pod uplink >= 1 [1]", "REAL"},
};

void add_flags(CLI::App& verb, PlatformArgs& a) {
  verb.add_option("--preset", a.preset, "dgx-a100 | dgx-h100 | hgx-h200 | dgx-b200")
      ->type_name("NAME");
  verb.add_option("--spec", a.spec,
                  "a cluster spec YAML (platforms/README.md); --nodes and the flags below "
                  "override its values")
      ->type_name("FILE");
  verb.add_option("--nodes", a.nodes, "nodes (a multiple of a leaf domain's nodes, or fewer)");
  verb.add_option("--out", a.out, "the SimGrid XML file to write")->type_name("FILE");
  for (const OverrideFlag& f : kOverrideFlags)
    verb.add_option(flag_of(f.key), a.overrides[f.key], f.help)->type_name(f.type_name);
}

void register_platform(CLI::App& app) {
  auto args = std::make_shared<PlatformArgs>();
  CLI::App* verb = app.add_subcommand(
      "platform", "a GPU cluster as built (presets dgx-a100 ... dgx-b200) as SimGrid XML");
  add_flags(*verb, *args);
  verb->callback([args] { run_platform(*args); });
}

const VerbRegistration kRegistration{58, register_platform};

}  // namespace
}  // namespace tauplan::cli
