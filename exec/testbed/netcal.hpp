// netcal.hpp: network calibration of a live testbed, and the calibrated platform it writes.
//
// Measures across the testbed (probe.hpp: TCP between threads inside the host namespaces,
// wall clock): on a set of routes, the ping-pong round trip (the fastest of many small messages)
// and one-way transfer times t(S) at sizes up to what the route carries in `transfer_s`, all
// repeats fitted by the line t = alpha + S / beta under every one of them that is highest at their
// mean size (model::fit_lower_envelope; R^2 of the samples about it reported): a transfer is never
// faster than the route, but some repeats stall by milliseconds (lost packets or a busy core; not
// traced), and the median of three repeats read routes up to 15% under their shaped rate (the
// recorded runs, experiments/testbed/README.md); the sharing of one host's
// incoming links by N = 1..4 concurrent flows (rates against the max-min fair share of the
// testbed's links); whether the two directions of a route contend (both at once against
// each alone); and, for each link that is the narrowest link of no route (an uplink faster than
// the NICs below it), concurrent flows through it chosen so that on the testbed's links nothing
// else can hold them back (plan_fill). Routes measured by default: a greedy cover in which every
// link is the narrowest link of some measured route when the platform makes it one (so its
// bandwidth is observable), and lies on some measured route otherwise; --all-pairs measures
// every ordered pair.
//
// The fitted platform has the testbed's hosts (names, speeds and props copied: compute is not
// measured here), links and routes (every ordered pair, explicitly, in a Full zone), with each
// link's latency and bandwidth fitted. Round trips only give sums over their links (which link
// of a round trip adds how much is not observable), so a link's latency is its configured
// testbed latency plus the smallest correction (least squares, minimum norm) that makes every
// measured round trip equal the sum over its links, clamped at 0; a link's bandwidth is
// the fastest measured route bandwidth (1 / slope) among the routes where the platform makes it
// the narrowest link, or, when it is never the narrowest, the measured total of the concurrent
// flows that filled it; when no traffic of the testbed can fill it (two 100 Mbit/s servers
// behind a 400 Mbit/s link), a lower bound where it holds back none of the flows tried, marked
// so. Before fills, such links were written at the fastest single route through them, which made
// them bottlenecks the testbed does not have (experiments/testbed/README.md, "Held-out matrix,
// first run"). The two halves of a split-duplex link are written as one SPLITDUPLEX link
// with their mean (each half in props). Numbers are on the testbed's time scale (what a TCP flow
// really gets there), with the scale in the props. What it leaves out: host compute, TCP
// dynamics beyond alpha-beta (the sharing and duplex results are reported, not modelled), and
// links no selected route crosses.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/testbed/lifecycle.hpp"
#include "exec/testbed/probe.hpp"
#include "exec/testbed/spec.hpp"
#include "model/inputs/calibration.hpp"

namespace tauplan::testbed {

struct NetworkCalibrationRequest {
  bool all_pairs = false;
  int pings = 30;           ///< round trips per route (after 3 warm-up)
  int ping_bytes = 8;       ///< payload of a ping
  int sizes = 6;            ///< transfer sizes per route, evenly spaced up to the largest
  int repeats = 3;          ///< of each size
  double transfer_s = 0.2;  ///< the largest size takes this long at the route's bandwidth
  std::string share_to;     ///< host the sharing flows go to (default: first server, else last)
  std::vector<int> flow_counts{1, 2, 3, 4};  ///< N concurrent flows, each run (at most hosts - 1)
  double window_s = 1.5;                     ///< measured window of each sharing and duplex run
  bool duplex = true;                        ///< run the both-directions experiment
  /// Left out at the start of each run: at least this, and at least 10 round trips of the
  /// slowest route in the run (slow start's overshoot and its loss recovery; in-order bytes
  /// that a lost packet held back would otherwise reach the window in one burst).
  double warmup_s = 0.5;
};

struct RouteMeasurement {
  int src = 0;
  int dst = 0;
  std::vector<double> round_trips_s;
  double round_trip_s = 0;  ///< the fastest (TCP); 2 alpha (MPI messages)
  std::vector<TransferSample> samples;
  model::LinearFit fit;             ///< seconds against bytes
  double bandwidth_Bps = 0;         ///< 1 / slope
  double testbed_round_trip_s = 0;  ///< the spec's latency there and back
  double testbed_bandwidth_Bps = 0;
};

struct ShareMeasurement {
  std::vector<std::pair<int, int>> flows;
  std::vector<double> rates_Bps;
  std::vector<double> fair_Bps;  ///< max-min fair share on the testbed's links
  double fabric_cpu_s = 0;       ///< fabric CPU during the run
  double seconds = 0;            ///< length of the run
};

struct DuplexMeasurement {
  int a = 0;
  int b = 0;
  double alone_ab_Bps = 0;
  double alone_ba_Bps = 0;
  double both_ab_Bps = 0;
  double both_ba_Bps = 0;
  std::vector<std::string> shared_links;  ///< links the two directions have in common
};

/// Concurrent flows run to fill one link that no single route shows at its rate (its rate is
/// above the narrowest link of every route through it).
struct FillMeasurement {
  int link = 0;  ///< index into Spec::links
  std::vector<std::pair<int, int>> flows;
  /// Their max-min fair total on the testbed's links with this link left out: above the link's
  /// rate (by kFillMargin) the link is the only thing that can hold them back, and their measured
  /// total is its rate; below, no traffic of the testbed fills it (a lower bound).
  double headroom_Bps = 0;
  bool fills = false;
  std::vector<double> rates_Bps;  ///< measured, one per flow (the run of the largest total)
  double seconds = 0;             ///< length of the runs
  int runs = 0;                   ///< how many times the flows were run (fill_runs_again)
};

/// A link is filled by flows whose fair total without it is at least this times its rate (a
/// tie with another link would leave which one held the flows back unknown).
constexpr double kFillMargin = 1.25;

/// A fill's flows are run again (kFillRuns times at most, the largest total kept) while their
/// measured total is under this share of their max-min fair total on the testbed's links: the
/// hypervisor's steal slows the emulated links, never speeds them (at 20% steal one fill read an
/// uplink of 37.5 MB/s at 30.0, where fills at 2% steal read 37.48-37.52: experiments/testbed/
/// README.md, "The second held-out matrix").
constexpr double kFillShortfall = 0.97;
constexpr int kFillRuns = 3;

/// Whether `fill` (measured) should run again: fewer than kFillRuns runs, and its total under
/// kFillShortfall x its flows' max-min fair total on the testbed's links.
bool fill_runs_again(const Spec& spec, const FillMeasurement& fill);

struct LinkFit {
  int link = 0;  ///< index into Spec::links
  double latency_s = 0;
  double bandwidth_Bps = 0;
  bool bandwidth_lower_bound = false;  ///< neither a route's narrowest link nor filled
  bool bandwidth_filled = false;       ///< the measured total of concurrent flows that filled it
  std::string bandwidth_from;          ///< the route it came from, "a -> b", or the flows
};

/// Compute of one host measured elsewhere (validate's calibration of K busy ranks): replaces the
/// testbed platform's speed, adds the props.
struct HostCompute {
  double speed_flops = 0;
  std::map<std::string, std::string> props;
};

/// One triple of the queued-window probe (exec/window_probe.hpp), by host name: the echoes'
/// wait behind the sender's messages as each starts, times its first link's calibrated rate.
struct QueuedWindowReading {
  std::string sender, receiver, pinger;
  double quiet_median_s = 0;
  std::vector<double> message_waits_s;  ///< each message's largest echo less the quiet median
  double queue_wait_s = 0;              ///< their median
  int busy_pings = 0;
  double link_Bps = 0;      ///< the sender's first link, calibrated
  double window_bytes = 0;  ///< queue_wait_s x link_Bps
};

struct NetworkCalibration {
  std::string date;
  std::string commit;
  NetworkCalibrationRequest request;
  std::vector<RouteMeasurement> routes;
  std::vector<ShareMeasurement> shares;
  std::vector<DuplexMeasurement> duplex;
  std::vector<FillMeasurement> fills;
  std::vector<LinkFit> links;
  std::vector<std::string> warnings;
  double seconds = 0;  ///< wall time of the whole calibration
  /// The hypervisor's share of the machine's CPU time while it calibrated, TCP and MPI parts
  /// (exec/cpu_steal.hpp); -1 unknown. The emulated links run slower while it is high.
  double steal_fraction = -1;
  /// How the routes' round trips and bandwidths were measured when not by TCP (MPI messages,
  /// `testbed calibrate --mpi`); empty: TCP. The TCP measurements are then in tcp_routes.
  std::string message_method;
  std::vector<RouteMeasurement> tcp_routes;
  /// With MPI messages: every link's latency is its TCP fit times this (0: TCP alone); a message
  /// above the eager limit pays three of those latencies (rendezvous).
  double mpi_latency_factor = 0;
  /// With MPI messages, the MPI library's eager limit (bytes): the calibrated platform's protocol
  /// is then a rendezvous above it (model/inputs/platform.hpp: MessageProtocol). Negative: plain.
  double eager_limit_bytes = -1;
  /// Payload bytes of the testbed's packets (its MTU less kTcpIpHeaderBytes): its links forward
  /// them store-and-forward (exec/testbed/fabric.hpp), and the calibrated platform says so
  /// (prop packet_bytes: model::Platform::packet_bytes). 0: not known (a pipe).
  double packet_bytes = 0;
  /// Bytes of a host's outgoing message that stand ahead of a control message it sends
  /// (`testbed calibrate --queued-window`: the median of the readings' windows), written as the
  /// prop queued_window_bytes (sim/rendezvous.hpp). Negative: not measured (no prop).
  double queued_window_bytes = -1;
  std::vector<QueuedWindowReading> window_readings;
  /// Hosts whose compute was measured (by name); the others keep the testbed platform's.
  std::map<std::string, HostCompute> compute;
  std::string compute_method;  ///< how, for the file's comment
};

/// Text safe inside an XML comment: every "--" written "- -".
std::string comment_safe(std::string text);

/// Fits a route's transfers (m.samples; m.src, m.dst name it in errors): m.fit by
/// model::fit_lower_envelope over every sample, m.bandwidth_Bps = 1 / slope. Throws
/// MeasurementError when the time does not grow with the size (a measurement the machine
/// spoiled: measure again).
void fit_transfers(const Spec& spec, RouteMeasurement& m);

/// A route's MPI messages, fitted.
struct MessageFit {
  double alpha_s = 0;        ///< what a message pays on top of its bytes
  double bandwidth_Bps = 0;  ///< the route's rate as the messages see it
  model::LinearFit line;     ///< t = alpha + S / bandwidth, R^2 and residuals of the messages
};

/// Fits a route's MPI messages: the bandwidth is 1 / slope of their lower envelope
/// (model::fit_lower_envelope: noise on this machine, the hypervisor's steal or a busy core,
/// only slows a message), what the ranks' own messages get; alpha is what the smallest messages
/// pay on top of their bytes at that rate, the least over their repeats (their bytes take the
/// least time, so an error of the rate moves alpha least). The TCP transfers' fit of the same
/// route is not used: under steal it read routes shaped at 12.5 MB/s at 10.4-11.0 MB/s while
/// the messages read 12.44-12.54, and above the shaped rate by up to 2.7% where the messages
/// stayed within 1.2% below it (experiments/testbed/README.md, "Calibrations that repeat").
/// Throws MeasurementError naming `route` when the messages do not take longer when larger or
/// alpha is not positive (a reading the machine spoiled: measure again); std::invalid_argument
/// when there are no samples.
MessageFit fit_messages(const std::vector<TransferSample>& samples, const std::string& route);

/// The MPI message sizes to time on every route: `sizes` sorted, each once, the largest left
/// out while it would take more than `longest_s` at `slowest_Bps` (the slowest route's shaped
/// rate: a testbed's time scale, not a reading that steal can move), at least two kept; each
/// one left out is described in `left_out`. Throws std::invalid_argument when fewer than two
/// distinct sizes are given or slowest_Bps is not positive.
std::vector<double> message_sizes(std::vector<double> sizes, double slowest_Bps, double longest_s,
                                  std::vector<std::string>& left_out);

/// The links of `spec` fitted as fit_links does, with each route's bandwidth from
/// `message_routes` (fit_messages' rates) and its round trip from `tcp_routes` (the TCP echoes:
/// the messages' alphas do not say which link of a route adds how much, see
/// scale_latencies_to_messages); the same routes in the same order. Adds the fit's warnings that
/// `warnings` does not hold yet (a TCP fit of the same round trips gave it the others). Throws
/// std::invalid_argument when the lists differ or a link lies on no route.
std::vector<LinkFit> fit_links_to_messages(const Spec& spec,
                                           const std::vector<RouteMeasurement>& message_routes,
                                           const std::vector<RouteMeasurement>& tcp_routes,
                                           std::vector<std::string>& warnings);

/// The links that are the narrowest link of no route of `spec` (a single route cannot show their
/// rate), in index order.
std::vector<int> links_no_route_shows(const Spec& spec);

/// The flows to run at once to fill `link`: greedily, the route through it that raises the
/// flows' max-min fair total without the link the most (first in route order on a tie), until
/// that total reaches kFillMargin x the link's rate, no route raises it, or `max_flows` are
/// chosen. Returns the flows with headroom_Bps and fills set (nothing measured).
FillMeasurement plan_fill(const Spec& spec, int link, int max_flows = 8);

/// Sets the bandwidth of every link of `links` that is a lower bound from the fill of that link
/// in `fills` (measured): filled, the flows' measured total (not a lower bound any more; a total
/// under the link's single-route lower bound keeps the bound and adds a warning: a run the
/// machine slowed); not filled, the largest of the lower bound, the measured total and the fair
/// total those flows would have without the link on the links as fitted, still a lower bound (no
/// traffic of the testbed fills it, so it is written where it holds none of them back).
void fill_lower_bounds(const Spec& spec, const std::vector<FillMeasurement>& fills,
                       std::vector<LinkFit>& links, std::vector<std::string>& warnings);

/// The ordered pairs measured by default (see the file comment), in rank order.
std::vector<std::pair<int, int>> covering_pairs(const Spec& spec);

/// Fits every link of `spec` from measured routes; throws std::invalid_argument when a link
/// lies on no measured route.
std::vector<LinkFit> fit_links(const Spec& spec, const std::vector<RouteMeasurement>& routes,
                               std::vector<std::string>& warnings);

/// What a transfer of at least a full packet from `src` to `dst` waits beyond the pipe model on
/// the testbed's links as fitted in `links`: one packet (spec.mtu less kTcpIpHeaderBytes)
/// serialised on each link of the route but the narrowest (model::Route::forwarding_s_per_byte).
double route_forwarding_s(const Spec& spec, const std::vector<LinkFit>& links, int src, int dst);

/// MPI messages over the links of a TCP calibration: fits alpha(route) = trips x factor x the
/// route's TCP one-way latency (half its measured round trip) + its store-and-forward
/// (route_forwarding_s, once a message: what fitted the testbed's messages best, 2026-12-03)
/// through the origin, over `mpi_routes` (alpha in fit.intercept) and
/// `tcp_routes` (the same routes, same order), where `trips` is the one-way latencies a message
/// pays (3 for a rendezvous); multiplies every link's latency in `links` by the factor and returns
/// it. Each route whose alpha the fit misses by more than 10% adds a warning. Throws
/// std::invalid_argument when the lists differ, trips < 1 or no round trip is positive.
double scale_latencies_to_messages(const Spec& spec,
                                   const std::vector<RouteMeasurement>& mpi_routes,
                                   const std::vector<RouteMeasurement>& tcp_routes, int trips,
                                   std::vector<LinkFit>& links, std::vector<std::string>& warnings);

/// Measures the testbed of `state` (which must be up) and fits its links. `progress` gets one
/// line per step. Throws std::runtime_error when a measurement fails.
NetworkCalibration calibrate_network(const State& state, const NetworkCalibrationRequest& request,
                                     const std::function<void(const std::string&)>& progress);

/// The calibrated platform as SimGrid XML (see the file comment); provenance in a comment and in
/// the zone's props.
std::string calibrated_platform_xml(const Spec& spec, const NetworkCalibration& calibration);

nlohmann::json to_json(const NetworkCalibration& calibration, const Spec& spec);

}  // namespace tauplan::testbed
