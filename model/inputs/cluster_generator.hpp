// cluster_generator.hpp: GPU clusters "as they are built", written as SimGrid platform XML.
//
// What it models
// - `nodes` nodes of `gpus_per_node` GPUs. Host n<K>-gpu<J> has the speed catalog dense bf16 peak
//   x `efficiency` (a GEMM efficiency the user gives or the preset cites) and the props gpu_model,
//   gpu_memory_bytes, node=n<K>, role=worker, precision=bf16, efficiency, compute_source.
// - Inside a node: GPU J has an NVLink link (SPLITDUPLEX, per-direction bandwidth) to the node's
//   NVSwitch, so GPU i -> GPU j is [n<K>-gpu<i>-nvlink UP, n<K>-gpu<j>-nvlink DOWN]; and its own
//   NIC link n<K>-gpu<J>-nic (SPLITDUPLEX, the NIC's bandwidth) to the node's gateway, so one flow
//   never gets more than one NIC and the GPUs of a node do not share a NIC.
// - A leaf domain d<D>: the nodes whose rail-aligned traffic (GPU j to GPU j of another node)
//   stays under one leaf layer. Rail wiring (NIC j of every node on rail leaf j) gives
//   `leaf_down_ports` nodes per domain; plain wiring (all NICs of a node on one leaf) gives
//   leaf_down_ports / gpus_per_node. The leaf is non-blocking: d<D>-leaf is a SHARED link with the
//   switch hop latency and the bandwidth of all its input ports together, so it never binds (not
//   a FATPIPE: SimGrid 3.32 shares one between flows of unequal route latencies). Between domains,
//   traffic crosses the domain's uplink d<D>-uplink (SPLITDUPLEX, domain NIC bandwidth /
//   oversubscription) and the pod's spine p<P>-spine (SHARED, as wide as its input ports). Pods of
//   `domains_per_pod` domains reach each other through their uplink p<P>-uplink (SPLITDUPLEX, pod
//   NIC bandwidth / core_oversubscription) and the core (SHARED, as wide as the pods' uplinks).
//   Each switch hop costs `switch_latency_s` (on its link; uplinks have no latency of their own),
//   so GPU to GPU is 2 NIC latencies plus 1, 3 or 5 switch hops.
// - Routes, for GPU a of node A to GPU b of node B:
//     same node     [A-gpu<a>-nvlink UP, A-gpu<b>-nvlink DOWN]
//     same domain   [A-gpu<a>-nic UP, d-leaf, B-gpu<b>-nic DOWN]
//     same pod      [A-gpu<a>-nic UP, dA-leaf, dA-uplink UP, p-spine, dB-uplink DOWN, dB-leaf,
//                    B-gpu<b>-nic DOWN]
//     other pod     [..., dA-uplink UP, pA-spine, pA-uplink UP, core, pB-uplink DOWN, pB-spine,
//                    dB-uplink DOWN, ...]
// - Zones (SimGrid loads 24,576 GPUs in seconds this way; a flat zone would be cubic):
//   world (Full) > pods p<P> (Full) > domains d<D> (Full) > nodes n<K> (Full: hosts and the router
//   n<K>-gw). Gateways are routers alone in zones of their own (d<D>-leaf, p<P>-spine), because
//   SimGrid's DTD puts no router beside sub-zones and a zoneRoute joins two zones, never with an
//   empty link list. A zone routes its children with explicit zoneRoutes between them. Every
//   link is declared in world's first sub-zone `links` (routing None): SimGrid 3.32 looks a
//   link up by a depth-first search from the root, so links spread over the node zones made
//   loading quadratic (15 s instead of 1.8 s at 16,384 GPUs). sim::load_platform (checker,
//   SimGrid, conversion) took 2.1 s and 205 MB at 16,384 GPUs, 4.5 s and 303 MB at 24,576 (2
//   shared cores; SimGrid's own lookup of each new host name still visits every zone).
// What it leaves out
// - Cross-rail traffic in rail wiring (GPU a to GPU b != a of another node) is assumed to go
//   over NVLink to the GPU on the destination's rail first (NCCL's PXN), so it is modelled as
//   rail-aligned: one leaf hop, never the spine, and no NVLink hop is charged for it.
// - PCIe: the NIC link stands for GPU -> PCIe switch -> NIC; PCIe is assumed faster than the NIC.
// - The rail leaves of a domain (gpus_per_node switches in rail wiring) are one non-blocking
//   leaf; a domain's uplinks are one link, a pod's uplinks one link: ECMP is perfect, no hash
//   collisions. No adaptive routing, no congestion control, no failures of links or switches.
// - Host-side data loading, CPU, storage and the frontend network.
#pragma once

#include <string>
#include <vector>

#include "model/inputs/simgrid_xml.hpp"

namespace tauplan::model::cluster {

enum class Wiring { Rail, Plain };

/// Everything the generator needs; every number carries the text of its source.
struct ClusterSpec {
  std::string preset;  ///< the preset it started from ("" when none)
  int nodes = 0;
  int gpus_per_node = 8;
  std::string gpu_model;  ///< a key of model/catalog/gpus.yaml with a bf16 peak
  std::string gpu_source;
  double efficiency = 0;  ///< fraction of the dense bf16 peak a host reaches
  std::string efficiency_source;
  double nvlink_bandwidth_Bps = 0;  ///< per GPU, per direction
  std::string nvlink_source;
  double nvlink_latency_s = 0;  ///< GPU <-> NVSwitch link
  std::string nvlink_latency_source;
  double nic_bandwidth_Bps = 0;  ///< per NIC (one per GPU), per direction
  std::string nic_source;
  double nic_latency_s = 0;  ///< GPU -> PCIe -> NIC -> leaf port, one way
  std::string nic_latency_source;
  double switch_latency_s = 0;  ///< one switch hop
  std::string switch_latency_source;
  Wiring wiring = Wiring::Rail;
  int leaf_down_ports = 32;  ///< leaf ports facing NICs
  std::string leaf_source;
  double oversubscription = 1;       ///< leaf down : up bandwidth (1 = non-blocking)
  int domains_per_pod = 0;           ///< 0: every domain in one pod
  double core_oversubscription = 1;  ///< pod NIC bandwidth : pod uplink
};

/// The shape `spec` gives, in counts and bandwidths (B/s, one direction).
struct ClusterShape {
  int gpus = 0;
  int nodes = 0;
  int nodes_per_domain = 0;
  int domains = 0;
  int domains_per_pod = 0;
  int pods = 0;
  double host_speed_flops = 0;
  double peak_flops = 0;
  double domain_uplink_Bps = 0;  ///< 0 with one domain
  double pod_uplink_Bps = 0;     ///< 0 with one pod
  /// Half the GPUs to the other half, one direction, through the highest level that has more
  /// than one child: pods / 2 x a pod's egress (the smaller of its uplink and its domains'
  /// uplinks), else domains / 2 x a domain uplink, else GPUs / 2 x a NIC (counts halved as reals,
  /// so an odd count splits a pod or a domain evenly).
  double bisection_Bps = 0;
  /// What the same GPUs would have with every uplink at 1:1 (half the NICs at full rate).
  double full_bisection_Bps = 0;
};

/// Preset names, in order: dgx-a100, dgx-h100, hgx-h200, dgx-b200.
std::vector<std::string> preset_names();
/// A preset's numbers with their sources (nodes left at 0). Throws InputError(origin, key,
/// "one of dgx-a100, ...", name) for an unknown name.
ClusterSpec preset(const std::string& name, const std::string& origin = "<cluster>",
                   const std::string& key = "preset");

/// "rail" or "plain"; throws InputError(origin, key, ...) otherwise.
Wiring parse_wiring(const std::string& text, const std::string& origin, const std::string& key);
const char* wiring_name(Wiring wiring);

/// Checks `spec` and computes its shape. Throws InputError(origin, key_prefix + FIELD, ...) on
/// the first bad field (nodes, gpus_per_node, gpu, efficiency, bandwidths, latencies,
/// leaf_down_ports, oversubscription, domains_per_pod, core_oversubscription, and nodes or
/// domains that do not divide into full domains or pods). `key_prefix` is "--" for the CLI, whose
/// flags are the fields less their unit suffix, with '-' for '_' (nic_bandwidth_Bps is
/// --nic-bandwidth, gpu_model is --gpu).
ClusterShape cluster_shape(const ClusterSpec& spec, const std::string& origin = "<cluster>",
                           const std::string& key_prefix = "");

/// The platform (checked with cluster_shape first), with a header comment giving every number
/// and its source.
simgrid_xml::Platform make_cluster_platform(const ClusterSpec& spec,
                                            const std::string& origin = "<cluster>",
                                            const std::string& key_prefix = "");

/// One paragraph: GPUs, nodes, domains, pods, uplinks, bisection bandwidth.
std::string cluster_summary(const ClusterSpec& spec, const ClusterShape& shape);

}  // namespace tauplan::model::cluster
