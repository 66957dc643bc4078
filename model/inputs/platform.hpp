// platform.hpp: the plain description of a cluster that every engine reads.
//
// Models hosts (one per GPU or CPU worker) with an effective training speed in flop/s, the
// GPU properties that matter for planning (model, memory), and routes between hosts made of
// links with a latency and a bandwidth, and the protocol a message follows across them (a
// plain transfer, or a rendezvous handshake above an eager limit, as MPI libraries do), and
// whether its links forward store-and-forward, a packet at a time (packet_bytes). What it
// leaves out: contention. A Route here is the alpha-beta view of one path (sum of latencies,
// narrowest bandwidth); sharing between flows is the simulator's business (sim/). model/ never
// includes SimGrid: sim/ loads SimGrid XML into this struct and supplies the routes through
// RouteOracle.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tauplan::model {

enum class HostRole { Worker, Server };

struct Host {
  std::string name;
  double speed_flops = 0;       ///< effective flop/s this worker reaches in training
  std::string gpu_model;        ///< key of the GPU catalog, empty for a CPU host
  double gpu_memory_bytes = 0;  ///< 0 when unknown (no memory check)
  std::string node;             ///< machine the host lives in (several GPUs share one node)
  HostRole role = HostRole::Worker;
  /// Every <prop> of the host as written in the platform file (provenance, and the props
  /// that only documentation uses: precision, efficiency ...).
  std::map<std::string, std::string> properties;
};

enum class LinkSharing { SplitDuplex, Shared, FatPipe };

struct Link {
  std::string name;
  double bandwidth_Bps = 0;
  double latency_s = 0;
  LinkSharing sharing = LinkSharing::Shared;
};

/// One path between two hosts. `links` index Platform::links; latency_s is their sum and
/// bandwidth_Bps the narrowest of them (infinite for a host to itself).
struct Route {
  std::vector<int> links;
  double latency_s = 0;
  double bandwidth_Bps = 0;
  /// Seconds a byte of a packet adds where the links forward store-and-forward: each link
  /// receives a whole packet before it sends it on, so a packet is serialised on every link of
  /// the route, where a pipe (latency + bytes over the narrowest link) counts it once: the sum
  /// over the route's links of 1 / bandwidth, less the narrowest link's. Times the packet's
  /// bytes (Platform::forwarding_s).
  double forwarding_s_per_byte = 0;
};

/// Route::forwarding_s_per_byte summed link by link: add each link of a route once, in any
/// order. The one place the store-and-forward rule is written; the analytic platform, the
/// simulator's routes and its per-transfer latency factor, and the testbed calibration use it.
class ForwardingPerByte {
 public:
  void add_link(double bandwidth_Bps) {
    sum_ += 1 / bandwidth_Bps;
    most_ = std::max(most_, 1 / bandwidth_Bps);
  }
  double s_per_byte() const { return sum_ - most_; }

 private:
  double sum_ = 0;
  double most_ = 0;
};

/// Sets a route's latency (the sum over its links), bandwidth (the narrowest; infinite with no
/// link) and forwarding_s_per_byte from `links`, which its link indices point into.
void total_route(Route& route, const std::vector<Link>& links);

/// How a message crosses a route, from the root zone's props `message_protocol` ("plain", the
/// default, or "rendezvous") and `eager_limit_bytes`. With a rendezvous, a message of more than
/// eager_limit_bytes is a request to the receiver, its clear-to-send back once the receiver has
/// posted the receive, then the bytes (OpenMPI ob1's protocol over TCP: exec/message_probe.hpp);
/// the sender is done when the clear-to-send arrives (the bytes go to its socket buffer). A
/// smaller message, or any with the plain protocol, is one transfer.
struct MessageProtocol {
  /// One-way latencies of a rendezvous: request, clear to send, data.
  static constexpr int kRendezvousTrips = 3;
  bool rendezvous = false;
  double eager_limit_bytes = 0;
  /// With rendezvous: the most of a message that its sender's TCP keeps queued at the first link
  /// of its route, a first-in-first-out queue (the root zone's prop `queued_window_bytes`). A
  /// request or clear-to-send the host sends over that link meanwhile waits behind what is
  /// queued, up to this, at the link's rate (experiments/testbed/README.md, "A ring step, packet
  /// by packet"). The simulator only; 0, the default: links share as fluids and a control
  /// message passes at once.
  double queued_window_bytes = 0;
  /// One-way route latencies a message of `bytes` pays when alone on its route: 3 for a
  /// rendezvous (request, clear to send, data), 1 otherwise. A `two_way` message (two ranks
  /// sending each other at once, a ring of 2's step) is sent as pieces below the eager limit
  /// (exec/mpi_peers.hpp: its clear-to-send would wait behind the rank's own bytes), so 1.
  int latency_trips(double bytes, bool two_way = false) const {
    return rendezvous && !two_way && bytes > eager_limit_bytes ? kRendezvousTrips : 1;
  }
};

/// Supplies routes between host indices. sim/ implements it over SimGrid's routing; tests and
/// generated platforms can use CrossbarRoutes below.
class RouteOracle {
 public:
  virtual ~RouteOracle() = default;
  virtual Route route(int src_host, int dst_host) const = 0;
};

/// Each host owns a private up link and down link (split duplex); a route from a to b is
/// up(a) then down(b). This is SimGrid's FLAT cluster without backbone.
class CrossbarRoutes : public RouteOracle {
 public:
  /// up_links[i] and down_links[i] are indices into the platform's links for host i.
  CrossbarRoutes(std::vector<Link> links, std::vector<int> up_links, std::vector<int> down_links);
  Route route(int src_host, int dst_host) const override;

 private:
  std::vector<Link> links_;
  std::vector<int> up_links_;
  std::vector<int> down_links_;
};

class Platform {
 public:
  std::string source_file;  ///< where it was loaded from ("<built-in>" for code-made platforms)
  std::string source_hash;  ///< FNV-1a 64 of the file's bytes, hex, for provenance
  std::vector<Host> hosts;
  std::vector<Link> links;
  std::shared_ptr<const RouteOracle> routes;
  MessageProtocol protocol;
  /// Payload bytes of the largest packet the links forward store-and-forward (the root zone's
  /// prop `packet_bytes`; the testbed writes its MTU less the TCP/IP headers); 0, the default:
  /// the links are pipes, as SimGrid models them.
  double packet_bytes = 0;

  /// What a message of `bytes` alone on a route of `route_latency_s` pays before its bytes
  /// flow: the latency times protocol.latency_trips(bytes) (the analytic engines' alpha).
  double message_latency_s(double route_latency_s, double bytes, bool two_way = false) const {
    return route_latency_s * protocol.latency_trips(bytes, two_way);
  }
  /// What a message of `bytes` waits beyond the pipe model for its links to forward it a packet
  /// at a time: its last packet (min(bytes, packet_bytes)) serialised on every link of the route
  /// but the narrowest. 0 with packet_bytes 0.
  double forwarding_s(double route_forwarding_s_per_byte, double bytes) const {
    return packet_bytes > 0 && bytes > 0
               ? std::min(bytes, packet_bytes) * route_forwarding_s_per_byte
               : 0.0;
  }
  /// A message alone on `route`: message_latency_s plus forwarding_s once (the analytic
  /// engines' alpha). Once for a rendezvous too: on the testbed an MPI message's alpha less three
  /// TCP latencies held one packet's forwarding, not two (experiments/testbed/README.md).
  double message_latency_s(const Route& route, double bytes, bool two_way = false) const {
    return message_latency_s(route.latency_s, bytes, two_way) +
           forwarding_s(route.forwarding_s_per_byte, bytes);
  }

  /// Host index by name, or -1.
  int find_host(const std::string& name) const;
  /// Worker hosts (role Worker) in natural name order (gpu-2 before gpu-10).
  std::vector<int> worker_hosts() const;
  /// Server hosts (role Server) in natural name order.
  std::vector<int> server_hosts() const;
  /// The alpha-beta view of the path from src to dst (memoised).
  const Route& route(int src_host, int dst_host) const;

 private:
  mutable std::unordered_map<long long, Route> route_cache_;
};

/// A homogeneous-link crossbar of `speeds.size()` hosts named h0, h1, ...: every host has a
/// private split-duplex link of the given bandwidth and latency (route = 2 x latency).
/// Used by tests and by planning inventories; `roles` may mark servers (default all workers).
Platform make_crossbar_platform(const std::vector<double>& speeds_flops, double link_bandwidth_Bps,
                                double link_latency_s, double gpu_memory_bytes = 0,
                                const std::vector<HostRole>& roles = {});

/// A prop tauplan reads from a platform file (`<prop id=... value=.../>`): where it goes
/// ("workers", "all hosts", "the root zone"), its name and what it means. platforms/README.md's
/// props table lists the same (architecture_tests checks both ways), and `tauplan help-keys` prints
/// it.
struct PlatformProperty {
  const char* on;
  const char* name;
  const char* meaning;
};
const std::vector<PlatformProperty>& platform_properties();

/// "a10" < "a2"? No: natural order compares digit runs as numbers (a2 < a10).
bool natural_less(const std::string& a, const std::string& b);

/// Parses the whole of a prop's text as a finite number; false (value untouched) otherwise.
bool parse_prop_number(const std::string& text, double& value);

/// FNV-1a 64-bit hash of bytes, as 16 hex digits.
std::string fnv1a_hex(const std::string& bytes);

}  // namespace tauplan::model
