// cluster_generator.cpp: presets, checks and the zones of a generated GPU cluster (see
// cluster_generator.hpp for what is modelled and what is left out).
#include "model/inputs/cluster_generator.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/inputs/workload.hpp"

namespace tauplan::model::cluster {
namespace {

namespace sx = simgrid_xml;

constexpr int kMaxGpusPerNode = 256;
constexpr int kMaxLeafDownPorts = 1024;
constexpr int kMaxHosts = 65536;  // what model/inputs/simgrid_xml_check.cpp accepts

// Sources shared by several presets.
const char* const kNvlinkLatency =
    "1.4 us per GPU <-> NVSwitch link: p2pBandwidthLatencyTest reports a 2.8 us P2P write "
    "latency between NVSwitch-connected GPUs of an 8 x A100-SXM4-80GB node (public output), as "
    "platforms/selene-a100.xml and platforms/h200-nvlink-ib.xml; no Hopper or Blackwell figure "
    "was found";
const char* const kNicLatency =
    "2 us GPU -> PCIe switch -> NIC -> leaf port, an assumption of the right order (1 us PCIe + "
    "1 us HCA and cable, the pcie and ib links of platforms/h200-nvlink-ib.xml); no end-to-end "
    "GPUDirect RDMA measurement was used";
const char* const kSwitchLatency =
    "0.5 us per switch hop, an assumption: vendor pages put an InfiniBand switch hop below 1 us";
const char* const kHopperGemm =
    "measured peak-GEMM fraction, an upper bound for a layer: bf16 GEMM 8192^3 through PyTorch "
    "reached 769-798 TFLOP/s of the 989.5 dense peak on H100 and H200 (project notes "
    "llm-scale.md, verified 2026-11-26); 0.777 = 769 / 989.5, the low end";
const char* const kNdrLeaf =
    "NVIDIA DGX SuperPOD (DGX H100) reference architecture: a scalable unit of 32 nodes, "
    "rail-optimized, on 64-port NDR Quantum-2 QM9700 leaves with 32 ports down and 32 up (1:1)";

ClusterSpec common_spec(const std::string& name) {
  ClusterSpec s;
  s.preset = name;
  s.gpus_per_node = 8;
  s.nvlink_latency_s = 1.4e-6;
  s.nvlink_latency_source = kNvlinkLatency;
  s.nic_latency_s = 2e-6;
  s.nic_latency_source = kNicLatency;
  s.switch_latency_s = 0.5e-6;
  s.switch_latency_source = kSwitchLatency;
  s.wiring = Wiring::Rail;
  s.leaf_down_ports = 32;
  s.leaf_source = kNdrLeaf;
  return s;
}

ClusterSpec dgx_a100() {
  ClusterSpec s = common_spec("dgx-a100");
  s.gpu_model = "A100-SXM4-80GB";
  s.gpu_source =
      "DGX A100: 8 x A100 SXM4 80 GB (Narayanan et al. 2021, arXiv 2104.04473, Section 5, "
      "Selene)";
  s.efficiency = 0.633;
  s.efficiency_source =
      "fraction of the bf16 peak Megatron's GEMMs reach, fitted on Korthikanti et al. 2022 "
      "(arXiv 2205.05198) Table 4 by the flop / speed model before issue 23; transformer layers "
      "are timed by the A100's fitted compute profile (model/catalog/profiles/"
      "a100-sxm-bf16-fitted.json, `tauplan published` prints the fit), this speed only times "
      "work without a profile";
  s.nvlink_bandwidth_Bps = 300e9;
  s.nvlink_source =
      "NVIDIA A100 datasheet: NVLink 3 600 GB/s per GPU, both directions together (12 links x "
      "25 GB/s per direction) = 300 GB/s per direction";
  s.nic_bandwidth_Bps = 25e9;
  s.nic_source =
      "8 x 200 Gb/s HDR InfiniBand HCAs per node, one per GPU (Narayanan et al. 2021, Section "
      "5) = 25 GB/s per direction";
  s.leaf_down_ports = 20;
  s.leaf_source =
      "NVIDIA DGX SuperPOD (DGX A100) reference architecture: a scalable unit of 20 nodes, "
      "rail-optimized, on 40-port HDR Quantum QM8790 leaves with 20 ports down and 20 up (1:1)";
  return s;
}

ClusterSpec hopper(const std::string& name) {
  ClusterSpec s = common_spec(name);
  s.efficiency = 0.777;
  s.efficiency_source = kHopperGemm;
  s.nvlink_bandwidth_Bps = 450e9;
  s.nvlink_source =
      "NVIDIA H100 / H200 datasheets: NVLink 4 900 GB/s per GPU, both directions together (18 "
      "links) = 450 GB/s per direction";
  s.nic_bandwidth_Bps = 50e9;
  return s;
}

ClusterSpec dgx_h100() {
  ClusterSpec s = hopper("dgx-h100");
  s.gpu_model = "H100-SXM5-80GB";
  s.gpu_source = "NVIDIA DGX H100 datasheet: 8 x H100 SXM5 80 GB";
  s.nic_source =
      "NVIDIA DGX H100 datasheet: 8 x single-port ConnectX-7 400 Gb/s NDR InfiniBand, one per "
      "GPU = 50 GB/s per direction";
  return s;
}

ClusterSpec hgx_h200() {
  ClusterSpec s = hopper("hgx-h200");
  s.gpu_model = "H200-SXM-141GB";
  s.gpu_source = "NVIDIA HGX H200 8-GPU: 8 x H200 SXM 141 GB (H200 datasheet)";
  s.nic_source =
      "the HGX H100/H200 reference design: one 400 Gb/s NDR ConnectX-7 per GPU (as "
      "platforms/h200-nvlink-ib.xml) = 50 GB/s per direction";
  return s;
}

ClusterSpec dgx_b200() {
  ClusterSpec s = common_spec("dgx-b200");
  s.gpu_model = "B200-SXM-180GB";
  s.gpu_source = "NVIDIA DGX B200 datasheet: 8 x B200, 1,440 GB GPU memory in all";
  s.efficiency = 0.777;
  s.efficiency_source =
      "ASSUMED: the H100/H200 measured peak-GEMM fraction (an upper bound for a layer; no "
      "B200 measurement): " +
      std::string(kHopperGemm);
  s.nvlink_bandwidth_Bps = 900e9;
  s.nvlink_source =
      "NVIDIA DGX B200 datasheet: NVLink 5 1.8 TB/s per GPU, both directions together = 900 "
      "GB/s per direction";
  s.nic_bandwidth_Bps = 50e9;
  s.nic_source =
      "NVIDIA DGX B200 datasheet: 8 x single-port ConnectX-7 VPI, up to 400 Gb/s InfiniBand, "
      "one per GPU = 50 GB/s per direction";
  s.leaf_source = std::string("ASSUMED as for DGX H100: ") + kNdrLeaf;
  return s;
}

struct PresetEntry {
  const char* name;
  ClusterSpec (*make)();
};
const PresetEntry kPresets[] = {
    {"dgx-a100", dgx_a100}, {"dgx-h100", dgx_h100}, {"hgx-h200", hgx_h200}, {"dgx-b200", dgx_b200}};

// The key of `field` for errors: "--gpu-model" style for the CLI (key_prefix "--").
std::string key_of(const std::string& prefix, std::string field) {
  if (prefix == "--") std::replace(field.begin(), field.end(), '_', '-');
  return prefix + field;
}

// Shortest text that reads back as the same double ("0.777", "85899345920").
std::string shortest(double value) {
  return fmt::format("{}", value);
}

// A number for people: "9.895e+14", "7.688415e+14".
std::string readable(double value) {
  return fmt::format("{:.10g}", value);
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const PresetEntry& p : kPresets)
    names.emplace_back(p.name);
  return names;
}

ClusterSpec preset(const std::string& name, const std::string& origin, const std::string& key) {
  std::string names;
  for (const PresetEntry& p : kPresets) {
    if (name == p.name) return p.make();
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  }
  throw InputError(origin, key, "one of " + names, "'" + name + "'");
}

Wiring parse_wiring(const std::string& text, const std::string& origin, const std::string& key) {
  if (text == "rail") return Wiring::Rail;
  if (text == "plain") return Wiring::Plain;
  throw InputError(origin, key,
                   "rail (NIC j of every node on rail leaf j) or plain (all NICs of a node on one "
                   "leaf)",
                   "'" + text + "'");
}

const char* wiring_name(Wiring wiring) {
  return wiring == Wiring::Rail ? "rail" : "plain";
}

namespace {

// Checks one field of a spec; throws InputError naming it.
class SpecChecker {
 public:
  SpecChecker(std::string origin, std::string prefix)
      : origin_(std::move(origin)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const char* field, const std::string& expected,
                         const std::string& got) const {
    throw InputError(origin_, key_of(prefix_, field), expected, got);
  }

  void whole(const char* field, int value, int lo, int hi) const {
    if (value < lo || value > hi)
      fail(field, fmt::format("a whole number in [{}, {}]", lo, hi), std::to_string(value));
  }

  void real(const char* field, double value, double lo, double hi, const char* what) const {
    if (!(value >= lo && value <= hi) || !std::isfinite(value))
      fail(field, fmt::format("{} in [{:g}, {:g}]", what, lo, hi), shortest(value));
  }

 private:
  std::string origin_;
  std::string prefix_;
};

void check_numbers(const ClusterSpec& s, const SpecChecker& c) {
  c.whole("gpus_per_node", s.gpus_per_node, 1, kMaxGpusPerNode);
  c.whole("nodes", s.nodes, 1, kMaxHosts / s.gpus_per_node);
  const GpuSpec* gpu = nullptr;
  for (const GpuSpec& g : gpu_catalog())
    if (g.model == s.gpu_model) gpu = &g;
  if (gpu == nullptr || gpu->peak_bf16_flops <= 0) {
    std::string names;
    for (const GpuSpec& g : gpu_catalog())
      if (g.peak_bf16_flops > 0) names += (names.empty() ? "" : ", ") + g.model;
    c.fail("gpu", "a GPU of model/catalog/gpus.yaml with a bf16 peak (" + names + ")",
           "'" + s.gpu_model + "'");
  }
  c.real("efficiency", s.efficiency, 1e-6, 1, "a fraction of the bf16 peak");
  c.real("nvlink_bandwidth", s.nvlink_bandwidth_Bps, kMinBandwidthBps, kMaxBandwidthBps, "B/s");
  c.real("nic_bandwidth", s.nic_bandwidth_Bps, kMinBandwidthBps, kMaxBandwidthBps, "B/s");
  c.real("nvlink_latency", s.nvlink_latency_s, 0, kMaxLatencySeconds, "seconds");
  c.real("nic_latency", s.nic_latency_s, 0, kMaxLatencySeconds, "seconds");
  c.real("switch_latency", s.switch_latency_s, 0, kMaxLatencySeconds, "seconds");
  c.whole("leaf_down_ports", s.leaf_down_ports, 1, kMaxLeafDownPorts);
  c.real("oversubscription", s.oversubscription, 1, 1e6, "a ratio down:up");
  c.real("core_oversubscription", s.core_oversubscription, 1, 1e6, "a ratio down:up");
  c.whole("domains_per_pod", s.domains_per_pod, 0, kMaxHosts);
}

// Nodes per domain, domains, pods: whole numbers or an InputError.
void check_division(const ClusterSpec& s, const SpecChecker& c, ClusterShape& shape) {
  const bool rail = s.wiring == Wiring::Rail;
  if (!rail && s.leaf_down_ports % s.gpus_per_node != 0)
    c.fail("leaf_down_ports",
           fmt::format("a multiple of gpus_per_node ({}) with plain wiring (all NICs of a node on "
                       "one leaf)",
                       s.gpus_per_node),
           std::to_string(s.leaf_down_ports));
  const int per_domain = rail ? s.leaf_down_ports : s.leaf_down_ports / s.gpus_per_node;
  if (s.nodes > per_domain && s.nodes % per_domain != 0)
    c.fail("nodes",
           fmt::format("at most {0} or a multiple of {0}, the nodes of a leaf domain ({1} wiring, "
                       "{2} leaf down ports{3})",
                       per_domain, wiring_name(s.wiring), s.leaf_down_ports,
                       rail ? "" : fmt::format(", {} GPUs per node", s.gpus_per_node)),
           std::to_string(s.nodes));
  shape.nodes_per_domain = std::min(per_domain, s.nodes);
  shape.domains = s.nodes / shape.nodes_per_domain;
  const int per_pod = s.domains_per_pod;
  if (per_pod > 0 && shape.domains > per_pod && shape.domains % per_pod != 0)
    c.fail("domains_per_pod",
           fmt::format("a divisor of the {} leaf domains ({} nodes, {} per domain), or 0 for "
                       "one pod",
                       shape.domains, s.nodes, shape.nodes_per_domain),
           std::to_string(per_pod));
  shape.domains_per_pod = per_pod == 0 ? shape.domains : std::min(per_pod, shape.domains);
  shape.pods = shape.domains / shape.domains_per_pod;
}

void fill_bandwidths(const ClusterSpec& s, ClusterShape& shape) {
  const double nic = s.nic_bandwidth_Bps;
  const double domain_nics = static_cast<double>(shape.nodes_per_domain) * s.gpus_per_node * nic;
  const double pod_nics = domain_nics * shape.domains_per_pod;
  shape.domain_uplink_Bps = shape.domains > 1 ? domain_nics / s.oversubscription : 0;
  shape.pod_uplink_Bps = shape.pods > 1 ? pod_nics / s.core_oversubscription : 0;
  shape.full_bisection_Bps = shape.gpus / 2.0 * nic;
  if (shape.pods > 1) {
    const double pod_egress =
        std::min(shape.pod_uplink_Bps, shape.domain_uplink_Bps * shape.domains_per_pod);
    shape.bisection_Bps = shape.pods / 2.0 * pod_egress;
  } else if (shape.domains > 1) {
    shape.bisection_Bps = shape.domains / 2.0 * shape.domain_uplink_Bps;
  } else {
    shape.bisection_Bps = shape.full_bisection_Bps;
  }
}

}  // namespace

ClusterShape cluster_shape(const ClusterSpec& spec, const std::string& origin,
                           const std::string& key_prefix) {
  const SpecChecker checker(origin, key_prefix);
  check_numbers(spec, checker);
  ClusterShape shape;
  shape.nodes = spec.nodes;
  shape.gpus = spec.nodes * spec.gpus_per_node;
  check_division(spec, checker, shape);
  shape.peak_flops = gpu_spec(spec.gpu_model).peak_bf16_flops;
  shape.host_speed_flops = shape.peak_flops * spec.efficiency;
  fill_bandwidths(spec, shape);
  return shape;
}

namespace {

sx::LinkUse up(const std::string& link) {
  return {link, "UP"};
}
sx::LinkUse down(const std::string& link) {
  return {link, "DOWN"};
}
sx::LinkUse whole(const std::string& link) {
  return {link, ""};
}

sx::Link split_duplex(std::string id, double bandwidth, double latency) {
  return {std::move(id), bandwidth, latency, "SPLITDUPLEX"};
}
// A non-blocking switch: a SHARED link as wide as all its input ports together (every flow
// crossing it enters through one of them, so they can never fill it). Not a FATPIPE: SimGrid
// 3.32's max-min solver shares a FATPIPE between flows of unequal route latencies (a ring step
// of 4 one-NIC flows through one took 18% longer than one flow alone).
sx::Link switch_link(std::string id, double input_ports_Bps, double latency) {
  return {std::move(id), input_ports_Bps, latency, "SHARED"};
}

// A zone holding nothing but one router: the gateway of a level (a leaf, a spine).
sx::Zone router_zone(const std::string& id) {
  sx::Zone zone;
  zone.id = id;
  zone.routing = "Full";
  zone.routers.push_back(id + "-gw");
  return zone;
}

// The props every host shares; node is set per host.
std::vector<sx::Prop> host_props(const ClusterSpec& s, const ClusterShape& shape) {
  const GpuSpec& gpu = gpu_spec(s.gpu_model);
  const std::string source = fmt::format(
      "{} dense bf16 peak {} flop/s (model/catalog/gpus.yaml) x efficiency {} ({}); preset {}",
      s.gpu_model, readable(shape.peak_flops), shortest(s.efficiency),
      s.efficiency_source.substr(0, s.efficiency_source.find(':')),
      s.preset.empty() ? "none" : s.preset);
  const std::string timed_by =
      gpu.compute_profile.empty()
          ? std::string()
          : "; transformer layers timed by the GPU's compute profile " + gpu.compute_profile +
                " (model/catalog/profiles/), the speed only for work without one";
  return {{"gpu_model", s.gpu_model},
          {"gpu_memory_bytes", fmt::format("{:.0f}", gpu.memory_bytes)},
          {"precision", "bf16"},
          {"efficiency", shortest(s.efficiency)},
          {"compute_source", source + timed_by},
          {"node", ""},
          {"role", "worker"}};
}

// Node n<k>: its GPUs, the gateway router, NVLink and NIC links, every intra-node route.
sx::Zone node_zone(const ClusterSpec& s, const ClusterShape& shape,
                   const std::vector<sx::Prop>& props, int k) {
  const std::string node = "n" + std::to_string(k);
  const int g = s.gpus_per_node;
  sx::Zone zone;
  zone.id = node;
  zone.routing = "Full";
  zone.hosts.reserve(static_cast<size_t>(g));
  std::vector<std::string> gpu(static_cast<size_t>(g));
  for (int j = 0; j < g; ++j) {
    gpu[static_cast<size_t>(j)] = node + "-gpu" + std::to_string(j);
    sx::Host host{gpu[static_cast<size_t>(j)], shape.host_speed_flops, props};
    for (sx::Prop& p : host.props)
      if (p.id == "node") p.value = node;
    zone.hosts.push_back(std::move(host));
  }
  zone.routers.push_back(node + "-gw");
  for (int j = 0; j < g; ++j) {
    const std::string& id = gpu[static_cast<size_t>(j)];
    zone.links.push_back(split_duplex(id + "-nvlink", s.nvlink_bandwidth_Bps, s.nvlink_latency_s));
    zone.links.push_back(split_duplex(id + "-nic", s.nic_bandwidth_Bps, s.nic_latency_s));
  }
  for (int a = 0; a < g; ++a)
    for (int b = a + 1; b < g; ++b) {
      const std::string& from = gpu[static_cast<size_t>(a)];
      const std::string& to = gpu[static_cast<size_t>(b)];
      zone.routes.push_back({from, to, {up(from + "-nvlink"), down(to + "-nvlink")}});
    }
  for (const std::string& id : gpu)
    zone.routes.push_back({id, node + "-gw", {up(id + "-nic")}});
  return zone;
}

// Domain d<d>: its nodes, one leaf hop between any two, and (with several domains) the leaf's
// gateway zone and the uplink towards the spine.
sx::Zone domain_zone(const ClusterSpec& s, const ClusterShape& shape,
                     const std::vector<sx::Prop>& props, int d) {
  const std::string id = "d" + std::to_string(d);
  const std::string leaf = id + "-leaf";
  sx::Zone zone;
  zone.id = id;
  zone.routing = "Full";
  const int first = d * shape.nodes_per_domain;
  for (int k = first; k < first + shape.nodes_per_domain; ++k)
    zone.zones.push_back(node_zone(s, shape, props, k));
  if (shape.domains > 1) zone.zones.push_back(router_zone(leaf));
  // Inputs: the domain's NICs, and the uplink's down direction.
  zone.links.push_back(switch_link(
      leaf,
      shape.nodes_per_domain * s.gpus_per_node * s.nic_bandwidth_Bps + shape.domain_uplink_Bps,
      s.switch_latency_s));
  if (shape.domains > 1)
    zone.links.push_back(split_duplex(id + "-uplink", shape.domain_uplink_Bps, 0));
  for (int a = first; a < first + shape.nodes_per_domain; ++a) {
    const std::string from = "n" + std::to_string(a);
    for (int b = a + 1; b < first + shape.nodes_per_domain; ++b) {
      const std::string to = "n" + std::to_string(b);
      zone.zone_routes.push_back({from, to, from + "-gw", to + "-gw", {whole(leaf)}});
    }
    if (shape.domains > 1)
      zone.zone_routes.push_back({from, leaf, from + "-gw", leaf + "-gw", {whole(leaf)}});
  }
  return zone;
}

// Pod p<p>: its domains, the spine between them, and (with several pods) the spine's gateway
// zone and the uplink towards the core.
sx::Zone pod_zone(const ClusterSpec& s, const ClusterShape& shape,
                  const std::vector<sx::Prop>& props, int p) {
  const std::string id = "p" + std::to_string(p);
  const std::string spine = id + "-spine";
  const bool spine_used = shape.domains_per_pod > 1 || shape.pods > 1;
  sx::Zone zone;
  zone.id = id;
  zone.routing = "Full";
  const int first = p * shape.domains_per_pod;
  const int last = first + shape.domains_per_pod;
  for (int d = first; d < last; ++d)
    zone.zones.push_back(domain_zone(s, shape, props, d));
  if (shape.pods > 1) zone.zones.push_back(router_zone(spine));
  // Inputs of the spine: its domains' uplinks, and the pod uplink's down direction.
  if (spine_used)
    zone.links.push_back(
        switch_link(spine, shape.domains_per_pod * shape.domain_uplink_Bps + shape.pod_uplink_Bps,
                    s.switch_latency_s));
  if (shape.pods > 1) zone.links.push_back(split_duplex(id + "-uplink", shape.pod_uplink_Bps, 0));
  for (int a = first; a < last; ++a) {
    const std::string from = "d" + std::to_string(a);
    for (int b = a + 1; b < last; ++b) {
      const std::string to = "d" + std::to_string(b);
      zone.zone_routes.push_back({from,
                                  to,
                                  from + "-leaf-gw",
                                  to + "-leaf-gw",
                                  {up(from + "-uplink"), whole(spine), down(to + "-uplink")}});
    }
    if (shape.pods > 1)
      zone.zone_routes.push_back(
          {from, spine, from + "-leaf-gw", spine + "-gw", {up(from + "-uplink"), whole(spine)}});
  }
  return zone;
}

}  // namespace

namespace {

std::string rate(double Bps) {
  return Bps > 0 ? fmt::format("{:g} GB/s", Bps / 1e9) : std::string("none");
}

/// "domain uplink 400 GB/s (2:1)", or, where the fabric has no such uplink, "no domain uplink
/// (one leaf domain: oversubscription 2:1 unused)", so that a ratio given is never shown as if
/// it acted.
std::string uplink_text(const char* level, double uplink_Bps, double ratio, const char* why_none) {
  if (uplink_Bps > 0) return fmt::format("{} uplink {} ({:g}:1)", level, rate(uplink_Bps), ratio);
  return fmt::format("no {} uplink ({}{})", level, why_none,
                     ratio != 1 ? fmt::format(": oversubscription {:g}:1 unused", ratio) : "");
}

std::string micro(double seconds) {
  return fmt::format("{:g} us", seconds * 1e6);
}

// The file's opening comment: what it is, every number with its source, the routes' latencies.
std::string header_comment(const ClusterSpec& s, const ClusterShape& shape) {
  const double nic2 = 2 * s.nic_latency_s;
  const double hop = s.switch_latency_s;
  std::string c = fmt::format(
      " Generated by `tauplan platform` (model/inputs/cluster_generator.hpp: what is modelled and "
      "left "
      "out).\n {} GPUs = {} nodes x {} {}{}; {} wiring, {} leaf domain(s) of {} nodes, {} pod(s) "
      "of {} domain(s).\n\n Numbers and sources\n",
      shape.gpus, shape.nodes, s.gpus_per_node, s.gpu_model,
      s.preset.empty() ? "" : " (preset " + s.preset + ")", wiring_name(s.wiring), shape.domains,
      shape.nodes_per_domain, shape.pods, shape.domains_per_pod);
  const auto line = [&c](const std::string& what, const std::string& source) {
    c += "   " + what + "\n       [" + (source.empty() ? "given" : source) + "]\n";
  };
  line(fmt::format("GPU {} ({} per node)", s.gpu_model, s.gpus_per_node), s.gpu_source);
  line(fmt::format("host speed {} flop/s = dense bf16 peak {} (model/catalog/gpus.yaml) x "
                   "efficiency {}",
                   readable(shape.host_speed_flops), readable(shape.peak_flops),
                   shortest(s.efficiency)),
       s.efficiency_source);
  line("NVLink " + rate(s.nvlink_bandwidth_Bps) + " per GPU per direction", s.nvlink_source);
  line("NVLink latency " + micro(s.nvlink_latency_s) + " per link", s.nvlink_latency_source);
  line("NIC " + rate(s.nic_bandwidth_Bps) + " per GPU per direction", s.nic_source);
  line("NIC latency " + micro(s.nic_latency_s) + " one way", s.nic_latency_source);
  line("switch hop " + micro(hop), s.switch_latency_source);
  line(fmt::format("{} leaf ports down", s.leaf_down_ports), s.leaf_source);
  c += fmt::format(
      "   leaves: {}; core: {}\n   bisection bandwidth {} one direction ({} with every uplink "
      "at 1:1)\n\n",
      uplink_text("domain", shape.domain_uplink_Bps, s.oversubscription, "one leaf domain"),
      uplink_text("pod", shape.pod_uplink_Bps, s.core_oversubscription, "one pod"),
      rate(shape.bisection_Bps), rate(shape.full_bisection_Bps));
  c += fmt::format(
      " Routes (latency with the numbers above)\n   same node {}, same domain {}, other domain "
      "of the pod {}, other pod {}\n Zones: world > p<P> > d<D> > n<K> (all Full); gateways "
      "n<K>-gw, d<D>-leaf-gw, p<P>-spine-gw;\n every link in the zone `links` (first in world, "
      "so that SimGrid finds each link at once).\n",
      micro(2 * s.nvlink_latency_s), micro(nic2 + hop), micro(nic2 + 3 * hop),
      micro(nic2 + 5 * hop));
  return c;
}

// Moves every link of `zone` and its sub-zones into `links`.
void collect_links(sx::Zone& zone, std::vector<sx::Link>& links) {
  for (sx::Link& link : zone.links)
    links.push_back(std::move(link));
  zone.links.clear();
  for (sx::Zone& child : zone.zones)
    collect_links(child, links);
}

// SimGrid 3.32 finds the link of a <link_ctn> by a depth-first search of the zones from the root,
// so a link declared in the k-th node zone costs k zones per use: 15 s to load 16,384 GPUs. All
// links in the root's first sub-zone `links` (routing None: it holds no netpoint) cost one
// lookup each (1.8 s; SimGrid alone on 2 cores).
void hoist_links(sx::Zone& world) {
  sx::Zone links;
  links.id = "links";
  links.routing = "None";
  collect_links(world, links.links);
  world.zones.insert(world.zones.begin(), std::move(links));
}

}  // namespace

simgrid_xml::Platform make_cluster_platform(const ClusterSpec& spec, const std::string& origin,
                                            const std::string& key_prefix) {
  const ClusterShape shape = cluster_shape(spec, origin, key_prefix);
  const std::vector<sx::Prop> props = host_props(spec, shape);
  sx::Platform platform;
  platform.comment = header_comment(spec, shape);
  sx::Zone& world = platform.root;
  world.id = "world";
  world.routing = "Full";
  for (int p = 0; p < shape.pods; ++p)
    world.zones.push_back(pod_zone(spec, shape, props, p));
  if (shape.pods > 1)
    world.links.push_back(
        switch_link("core", shape.pods * shape.pod_uplink_Bps, spec.switch_latency_s));
  for (int a = 0; a < shape.pods; ++a)
    for (int b = a + 1; b < shape.pods; ++b) {
      const std::string from = "p" + std::to_string(a);
      const std::string to = "p" + std::to_string(b);
      world.zone_routes.push_back({from,
                                   to,
                                   from + "-spine-gw",
                                   to + "-spine-gw",
                                   {up(from + "-uplink"), whole("core"), down(to + "-uplink")}});
    }
  hoist_links(world);
  return platform;
}

std::string cluster_summary(const ClusterSpec& spec, const ClusterShape& shape) {
  return fmt::format(
      "{} GPUs ({}, {:g} Tflop/s each = {:g} peak x {:g}) in {} nodes of {}; {} wiring: {} leaf "
      "domain(s) of {} nodes ({} GPUs each, {} leaf ports down), {} pod(s) of {} domain(s); "
      "NVLink {} and NIC {} per GPU per direction; {}, {}; bisection bandwidth {} one direction "
      "({:.3g}% of the {} of a non-blocking fabric).",
      shape.gpus, spec.gpu_model, shape.host_speed_flops / 1e12, shape.peak_flops / 1e12,
      spec.efficiency, shape.nodes, spec.gpus_per_node, wiring_name(spec.wiring), shape.domains,
      shape.nodes_per_domain, shape.nodes_per_domain * spec.gpus_per_node, spec.leaf_down_ports,
      shape.pods, shape.domains_per_pod, rate(spec.nvlink_bandwidth_Bps),
      rate(spec.nic_bandwidth_Bps),
      uplink_text("domain", shape.domain_uplink_Bps, spec.oversubscription, "one leaf domain"),
      uplink_text("pod", shape.pod_uplink_Bps, spec.core_oversubscription, "one pod"),
      rate(shape.bisection_Bps),
      shape.full_bisection_Bps > 0 ? 100 * shape.bisection_Bps / shape.full_bisection_Bps : 100.0,
      rate(shape.full_bisection_Bps));
}

}  // namespace tauplan::model::cluster
