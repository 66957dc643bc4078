// spec.hpp: what an emulated testbed is made of, computed from a platform (pure: no system calls).
//
// A testbed emulates the network of a SimGrid platform between a selection of its hosts: one
// network namespace per host, and for every ordered pair of hosts the platform's route, link by
// link. This file turns a model::Platform into that description (a Spec): the hosts in rank
// order with their namespace and addresses, every link some selected route crosses with its
// scaled rate, latency, sharing and queue, and the route of every ordered pair. It checks what
// the testbed cannot build (too few or unknown hosts, a route of too many links, a link faster or
// slower than this host emulates at the chosen scale) and says so as an InputError naming the
// platform file and the host, link or route.
//
// Time scale: --scale F divides every bandwidth by F and multiplies every latency by F, so a
// transfer of S bytes over a route, latency + S / bandwidth, takes exactly F times as long on
// the testbed as on the platform (an identity of the alpha-beta model, not a measurement).
// What it leaves out: building anything (exec/testbed/lifecycle.hpp), and links that no route
// between selected hosts crosses (they are not emulated).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/inputs/platform.hpp"

namespace tauplan::testbed {

/// Bytes of header in a full-size TCP segment over IPv4 as Linux sends it: IPv4 20, TCP 20,
/// timestamp option 12 (RFC 7323; on by default, net.ipv4.tcp_timestamps = 1). The fabric
/// charges every packet its IP length, so a link carries payload at rate x (mtu - 52) / mtu.
constexpr int kTcpIpHeaderBytes = 52;

/// What this host emulates accurately. The defaults are measured (exec/testbed/README.md,
/// "Limits", gives the commands and the numbers); flags may override them.
struct Limits {
  /// Full-size packets per second the fabric forwards with link rates within 0.5% on a 2-core
  /// VM like ours, with a factor of 2 to spare: its cost is per packet (wake-ups, copies, the
  /// receiver's TCP), so the fastest link it shapes is this times the MTU. Measured (README.md,
  /// "Limits"): 25e6 B/s at MTU 1500 within 0.4% here (84-88% of a core), but 11.8% short
  /// (22.06e6 B/s) on the CI machine; 50e6 at 1500 was 8% short here (CPU-bound); at MTU 9000,
  /// 1e8 and 2e8 B/s within 0.1% (75-78% and 89% of a core). Half of what was accurate here.
  double max_packet_rate = 12.5e6 / 1500;
  /// The fastest link (payload bytes/s after scaling) the fabric shapes at `mtu`.
  double max_rate_Bps(int mtu) const { return max_packet_rate * mtu; }
  /// Slowest link: below it a full 9000-byte packet takes more than 0.14 s to serialise, and
  /// TCP's minimum retransmission timer (0.2 s) fires behind a queue of two.
  double min_rate_Bps = 65536;
  /// Longest route, in links (every hop costs the fabric one timer event per packet).
  int max_route_links = 8;
  /// Most hosts in one testbed (the fabric forwards for all of them on one core).
  int max_hosts = 32;
  /// Longest route latency after scaling: beyond it, MPI's and TCP's timers are the experiment.
  double max_route_latency_s = 2.0;
};

/// What `testbed up` asks for.
struct Options {
  std::vector<std::string> hosts;  ///< platform host names in rank order; empty: all, workers first
  double scale = 0;                ///< > 0; 0 picks the default (see make_spec)
  std::string prefix = "tp-";      ///< of every namespace and interface name
  /// Of the emulated interfaces; 0 picks one (choose_mtu). The fabric's cost is per packet, so
  /// 9000 forwards about 6 times the bytes of 1500 per CPU second; but a packet that takes
  /// milliseconds to serialise lets TCP's timers, not the links, set the rates (README.md).
  int mtu = 0;
  /// Each link's queue holds this many seconds of its rate (and at least the bandwidth-delay
  /// product of the longest round trip through it, and 16 packets). Shallower queues drop the
  /// bursts a sender writes into its TUN at memory speed (no NIC queue pushes back), which cost
  /// TCP its rate and its fairness (measured: README.md, "Queues").
  double queue_s = 0.05;
  Limits limits;
};

struct SpecHost {
  std::string name;  ///< the platform's host name
  std::string node;
  std::string role;          ///< worker | server
  std::string netns;         ///< <prefix>r<rank>
  std::string address;       ///< on the emulated network (10.211.0.0/24)
  std::string mgmt_address;  ///< on the unshaped management bridge, for MPI's daemons only
  double speed_flops = 0;    ///< the platform's (the calibrated platform keeps it)
  std::map<std::string, std::string> properties;  ///< the platform's <prop>s of the host
};

enum class Sharing { SplitDuplex, Shared, FatPipe };
std::string sharing_name(Sharing sharing);

struct SpecLink {
  std::string name;                   ///< the platform's link name (h0-link_UP, backbone ...)
  double platform_bandwidth_Bps = 0;  ///< as in the platform file
  double platform_latency_s = 0;
  Sharing sharing = Sharing::Shared;
  double bandwidth_Bps = 0;  ///< payload rate on the testbed: platform / scale
  double latency_s = 0;      ///< on the testbed: platform x scale
  double wire_rate_Bps =
      0;                   ///< what the fabric charges IP bytes at: payload rate x mtu / (mtu - 52)
  double queue_bytes = 0;  ///< drop-tail limit of the link's queue (see make_spec)
};

struct SpecRoute {
  int src = 0;  ///< host index (rank)
  int dst = 0;
  std::vector<int> links;    ///< indices into Spec::links, in the order a packet crosses them
  double latency_s = 0;      ///< testbed: sum of link latencies
  double bandwidth_Bps = 0;  ///< testbed: narrowest link (payload)
  double platform_latency_s = 0;
  double platform_bandwidth_Bps = 0;
};

struct Spec {
  std::string prefix;
  std::string platform_file;
  std::string platform_hash;
  double scale = 1;
  std::string scale_reason;  ///< how the scale was chosen, in words
  int mtu = 1500;
  std::string mtu_reason;  ///< how the MTU was chosen, in words
  Limits limits;
  std::vector<SpecHost> hosts;    ///< in rank order
  std::vector<SpecLink> links;    ///< the links some selected route crosses
  std::vector<SpecRoute> routes;  ///< every ordered pair of distinct hosts, src-major

  /// The route from host `src` to host `dst` (distinct indices).
  const SpecRoute& route(int src, int dst) const;
  /// Host index by platform name, or -1.
  int find_host(const std::string& name) const;
  /// The namespace of mpirun and of the management bridge.
  std::string control_netns() const { return prefix + "ctl"; }
  std::string emulated_interface() const { return prefix + "emu"; }
  std::string mgmt_interface() const { return prefix + "mgmt"; }
  std::string bridge_interface() const { return prefix + "br"; }
  std::string control_mgmt_address() const;
};

/// Subnets: the emulated network (the fabric's) and the management bridge (mpirun's daemons).
constexpr const char* kEmulatedSubnet = "10.211.0.0/24";
constexpr const char* kMgmtSubnet = "10.211.1.0/24";

/// Checks a prefix: "tp", up to 3 lower-case letters or digits, then '-' (e.g. "tp-", "tpt1-"),
/// so that every name stays under the kernel's 15 characters and never matches anything else.
/// Throws InputError(origin, "--prefix", ...) otherwise.
void check_prefix(const std::string& prefix, const std::string& origin);

/// The hosts of a testbed, in rank order: `requested` (checked: known, distinct) or the
/// platform's workers then its servers, each in natural name order.
std::vector<int> select_hosts(const model::Platform& platform,
                              const std::vector<std::string>& requested);

/// A packet must serialise within this on the slowest link for its MTU to be chosen.
constexpr double kMaxSerialisation_s = 1e-3;
/// The largest of 9000, 4500 and 3000 bytes that the slowest link (bytes/s, scaled) serialises
/// within kMaxSerialisation_s, else 1500. Measured: at 9000 a 12.5e6 B/s link (0.7 ms per
/// packet) was shaped within 0.05% and shared by 4 flows within 1.2%; a 2.5e6 B/s one (3.6 ms)
/// let 4 flows deviate by 40% from their share, a 2.5e5 B/s one (36 ms) lost 23% of its rate
/// to 2 flows, where 1500 was within 7% and 0.2% (README.md, "MTU").
int choose_mtu(double slowest_rate_Bps);

/// The testbed of `platform` (loaded from platform.source_file) for `options`. Without --scale,
/// the smallest scale >= 1 that brings every link under the fastest rate the fabric shapes at
/// the MTU chosen for it. Throws InputError
/// naming the platform file and the host, link or route the testbed cannot emulate.
/// Queues: each link's drop-tail queue holds options.queue_s of its rate, at least one
/// bandwidth-delay product of the longest round trip among the routes that cross it (so one TCP
/// flow can keep it busy), and at least 16 full packets.
Spec make_spec(const model::Platform& platform, const Options& options);

/// Max-min fair payload rates of concurrent bulk flows (pairs of host indices) on the testbed's
/// links, by progressive filling: a split-duplex direction or a shared link divides its rate
/// equally among the flows that cross it (a shared link counts both directions), a fat pipe
/// gives each flow its full rate. SimGrid's CM02 model weights shares by route latency; this is
/// the unweighted fair share, what TCP flows of equal round trip tend to.
std::vector<double> max_min_rates(const Spec& spec, const std::vector<std::pair<int, int>>& flows);

/// Max-min fair rates of flows over resources (each flow: the resources it crosses; capacities
/// may be infinite), by progressive filling: every unfrozen flow grows by the same amount until a
/// resource fills, its flows freeze, repeat. A flow crossing nothing, or only infinite
/// resources, gets infinity. Throws std::invalid_argument for a negative or NaN capacity.
std::vector<double> max_min_fair(const std::vector<std::vector<int>>& flow_links,
                                 const std::vector<double>& capacities);

nlohmann::json to_json(const Spec& spec);
/// Throws nlohmann::json exceptions for a missing key or a wrong type, std::invalid_argument for
/// an inconsistent description (unknown host or link index, routes missing).
Spec spec_from_json(const nlohmann::json& j);

}  // namespace tauplan::testbed
