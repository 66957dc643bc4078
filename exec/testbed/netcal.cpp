// netcal.cpp: measuring a live testbed, fitting its links, writing the calibrated platform.
//
// What it leaves out: see netcal.hpp.
#include "exec/testbed/netcal.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "exec/testbed/system.hpp"
#include "model/base/error.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/simgrid_xml.hpp"
#include "model/ir/result.hpp"

namespace tauplan::testbed {

namespace xml = model::simgrid_xml;

std::string comment_safe(std::string text) {
  for (std::size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at))
    text.replace(at, 2, "- -");
  return text;
}

namespace {

std::string num(double v) {
  return fmt::format("{:.17g}", v);
}

std::string short_num(double v) {
  return fmt::format("{:.4g}", v);
}

bool is_narrowest(const Spec& spec, const SpecRoute& route, int link) {
  return spec.links[static_cast<std::size_t>(link)].bandwidth_Bps <=
         route.bandwidth_Bps * (1 + 1e-9);
}

std::string route_name(const Spec& spec, int a, int b) {
  return spec.hosts[static_cast<std::size_t>(a)].name + " -> " +
         spec.hosts[static_cast<std::size_t>(b)].name;
}

Endpoint endpoint(const Spec& spec, int host) {
  const SpecHost& h = spec.hosts[static_cast<std::size_t>(host)];
  return {h.netns, h.address};
}

/// The platform link a spec link belongs to and its direction: "h0-link_UP" -> ("h0-link",
/// "UP") for a split-duplex half, (name, "") otherwise.
std::pair<std::string, std::string> base_link(const SpecLink& link) {
  if (link.sharing == Sharing::SplitDuplex) {
    for (const char* direction : {"UP", "DOWN"}) {
      const std::string suffix = std::string("_") + direction;
      if (link.name.size() > suffix.size() &&
          link.name.compare(link.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return {link.name.substr(0, link.name.size() - suffix.size()), direction};
    }
  }
  return {link.name, ""};
}

int pick_share_target(const Spec& spec, const std::string& requested) {
  if (!requested.empty()) {
    const int index = spec.find_host(requested);
    if (index < 0)
      throw InputError(spec.platform_file, "--share-to", "a host of the testbed", requested);
    return index;
  }
  for (std::size_t i = 0; i < spec.hosts.size(); ++i)
    if (spec.hosts[i].role == "server") return static_cast<int>(i);
  return static_cast<int>(spec.hosts.size()) - 1;
}

/// Runs `flows` at once for the request's window after a warm-up long enough for their routes.
std::vector<StreamRate> run_streams(const Spec& spec, const NetworkCalibrationRequest& request,
                                    const std::vector<std::pair<int, int>>& flows) {
  double round_trip = 0;
  std::vector<std::pair<Endpoint, Endpoint>> endpoints;
  for (const auto& [a, b] : flows) {
    round_trip = std::max(round_trip, spec.route(a, b).latency_s + spec.route(b, a).latency_s);
    endpoints.emplace_back(endpoint(spec, a), endpoint(spec, b));
  }
  const double warmup = std::max(request.warmup_s, 10 * round_trip);
  return streams(endpoints, warmup + request.window_s + 0.1, warmup);
}

DuplexMeasurement measure_duplex(const Spec& spec, const NetworkCalibrationRequest& request, int a,
                                 int b, double alone_ab) {
  DuplexMeasurement d;
  d.a = a;
  d.b = b;
  const SpecRoute& ab = spec.route(a, b);
  const SpecRoute& ba = spec.route(b, a);
  for (int l : ab.links)
    if (std::find(ba.links.begin(), ba.links.end(), l) != ba.links.end())
      d.shared_links.push_back(spec.links[static_cast<std::size_t>(l)].name);
  d.alone_ab_Bps = alone_ab > 0 ? alone_ab : run_streams(spec, request, {{a, b}})[0].rate_Bps;
  d.alone_ba_Bps = run_streams(spec, request, {{b, a}})[0].rate_Bps;
  const auto both = run_streams(spec, request, {{a, b}, {b, a}});
  d.both_ab_Bps = both[0].rate_Bps;
  d.both_ba_Bps = both[1].rate_Bps;
  return d;
}

}  // namespace

std::vector<std::pair<int, int>> covering_pairs(const Spec& spec) {
  const std::size_t nlinks = spec.links.size();
  std::vector<bool> observable(nlinks, false);  // the narrowest link of some route
  for (const SpecRoute& route : spec.routes)
    for (int l : route.links)
      if (is_narrowest(spec, route, l)) observable[static_cast<std::size_t>(l)] = true;
  std::vector<bool> covered(nlinks, false);
  std::vector<bool> chosen(spec.routes.size(), false);
  // Greedy set cover: each round takes the route that makes the most uncovered links observed.
  for (std::size_t round = 0; round < spec.routes.size(); ++round) {
    int best = -1;
    int best_gain = 0;
    for (std::size_t r = 0; r < spec.routes.size(); ++r) {
      if (chosen[r]) continue;
      int gain = 0;
      for (int l : spec.routes[r].links)
        if (observable[static_cast<std::size_t>(l)] && !covered[static_cast<std::size_t>(l)] &&
            is_narrowest(spec, spec.routes[r], l))
          ++gain;
      if (gain > best_gain) {
        best_gain = gain;
        best = static_cast<int>(r);
      }
    }
    if (best < 0) break;
    chosen[static_cast<std::size_t>(best)] = true;
    for (int l : spec.routes[static_cast<std::size_t>(best)].links)
      if (is_narrowest(spec, spec.routes[static_cast<std::size_t>(best)], l))
        covered[static_cast<std::size_t>(l)] = true;
  }
  // Links never the narrowest: on some measured route at least (a lower bound of their rate).
  auto on_chosen = [&](int l) {
    for (std::size_t r = 0; r < spec.routes.size(); ++r)
      if (chosen[r] && std::count(spec.routes[r].links.begin(), spec.routes[r].links.end(), l))
        return true;
    return false;
  };
  for (std::size_t l = 0; l < nlinks; ++l) {
    if (on_chosen(static_cast<int>(l))) continue;
    for (std::size_t r = 0; r < spec.routes.size(); ++r)
      if (std::count(spec.routes[r].links.begin(), spec.routes[r].links.end(),
                     static_cast<int>(l))) {
        chosen[r] = true;
        break;
      }
  }
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t r = 0; r < spec.routes.size(); ++r)
    if (chosen[r]) pairs.emplace_back(spec.routes[r].src, spec.routes[r].dst);
  return pairs;
}

std::vector<LinkFit> fit_links(const Spec& spec, const std::vector<RouteMeasurement>& routes,
                               std::vector<std::string>& warnings) {
  const Eigen::Index nlinks = static_cast<Eigen::Index>(spec.links.size());
  const Eigen::Index nrows = static_cast<Eigen::Index>(routes.size());
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(nrows, nlinks);
  Eigen::VectorXd y(nrows);
  for (Eigen::Index i = 0; i < nrows; ++i) {
    const RouteMeasurement& m = routes[static_cast<std::size_t>(i)];
    for (int l : spec.route(m.src, m.dst).links)
      a(i, l) += 1;
    for (int l : spec.route(m.dst, m.src).links)
      a(i, l) += 1;
    y(i) = m.round_trip_s;
  }
  for (Eigen::Index l = 0; l < nlinks; ++l)
    if (nrows == 0 || a.col(l).cwiseAbs().maxCoeff() == 0)
      throw std::invalid_argument("link " + spec.links[static_cast<std::size_t>(l)].name +
                                  " lies on no measured route");
  // Round trips give sums over links only; the split between the links of a round trip is not
  // observable. Keep the testbed's configured split and add the smallest (least-squares,
  // minimum-norm) correction that makes the sums match the measurements.
  Eigen::VectorXd configured(nlinks);
  for (Eigen::Index l = 0; l < nlinks; ++l)
    configured(l) = spec.links[static_cast<std::size_t>(l)].latency_s;
  const Eigen::VectorXd latency =
      configured + a.completeOrthogonalDecomposition().solve(y - a * configured);

  std::vector<LinkFit> fits;
  for (Eigen::Index l = 0; l < nlinks; ++l) {
    LinkFit fit;
    fit.link = static_cast<int>(l);
    fit.latency_s = latency(l);
    if (fit.latency_s < 0) {
      warnings.push_back(fmt::format("link {}: fitted latency {:.3g} s clamped to 0",
                                     spec.links[static_cast<std::size_t>(l)].name, fit.latency_s));
      fit.latency_s = 0;
    }
    double narrowest = 0;
    double through = 0;
    std::string narrowest_from;
    std::string through_from;
    for (const RouteMeasurement& m : routes) {
      const SpecRoute& route = spec.route(m.src, m.dst);
      if (!std::count(route.links.begin(), route.links.end(), static_cast<int>(l))) continue;
      if (is_narrowest(spec, route, static_cast<int>(l)) && m.bandwidth_Bps > narrowest) {
        narrowest = m.bandwidth_Bps;
        narrowest_from = route_name(spec, m.src, m.dst);
      }
      if (m.bandwidth_Bps > through) {
        through = m.bandwidth_Bps;
        through_from = route_name(spec, m.src, m.dst);
      }
    }
    if (narrowest > 0) {
      fit.bandwidth_Bps = narrowest;
      fit.bandwidth_from = narrowest_from;
    } else if (through > 0) {
      fit.bandwidth_Bps = through;
      fit.bandwidth_from = through_from;
      fit.bandwidth_lower_bound = true;
    } else {
      // On measured round trips only as the way back: its bandwidth was never exercised.
      fit.bandwidth_Bps = spec.links[static_cast<std::size_t>(l)].bandwidth_Bps;
      fit.bandwidth_from = "not measured (the testbed's configured rate)";
      fit.bandwidth_lower_bound = true;
      warnings.push_back("link " + spec.links[static_cast<std::size_t>(l)].name +
                         ": no measured transfer crossed it; its configured rate is written");
    }
    fits.push_back(fit);
  }
  return fits;
}

std::vector<int> links_no_route_shows(const Spec& spec) {
  std::vector<bool> shown(spec.links.size(), false);
  for (const SpecRoute& route : spec.routes)
    for (int l : route.links)
      if (is_narrowest(spec, route, l)) shown[static_cast<std::size_t>(l)] = true;
  std::vector<int> hidden;
  for (std::size_t l = 0; l < spec.links.size(); ++l)
    if (!shown[l]) hidden.push_back(static_cast<int>(l));
  return hidden;
}

namespace {

double fair_total(const Spec& spec, const std::vector<std::pair<int, int>>& flows) {
  double total = 0;
  for (double rate : max_min_rates(spec, flows))
    total += rate;
  return total;
}

/// `spec` with `link` taken out of every flow's way (an infinite rate).
Spec without_link(Spec spec, int link) {
  spec.links.at(static_cast<std::size_t>(link)).bandwidth_Bps =
      std::numeric_limits<double>::infinity();
  return spec;
}

std::string describe_flows(const Spec& spec, const std::vector<std::pair<int, int>>& flows) {
  std::string text = fmt::format("{} flow{} at once:", flows.size(), flows.size() == 1 ? "" : "s");
  for (std::size_t f = 0; f < flows.size(); ++f)
    text += (f == 0 ? " " : ", ") + route_name(spec, flows[f].first, flows[f].second);
  return text;
}

}  // namespace

FillMeasurement plan_fill(const Spec& spec, int link, int max_flows) {
  if (link < 0 || static_cast<std::size_t>(link) >= spec.links.size())
    throw std::invalid_argument("plan_fill: link " + std::to_string(link) + " is not a link");
  FillMeasurement plan;
  plan.link = link;
  const Spec open = without_link(spec, link);
  const double target = kFillMargin * spec.links[static_cast<std::size_t>(link)].bandwidth_Bps;
  std::vector<std::pair<int, int>> candidates;
  for (const SpecRoute& route : spec.routes)
    if (std::count(route.links.begin(), route.links.end(), link))
      candidates.emplace_back(route.src, route.dst);
  std::vector<bool> taken(candidates.size(), false);
  while (static_cast<int>(plan.flows.size()) < max_flows && plan.headroom_Bps < target) {
    int best = -1;
    double best_total = plan.headroom_Bps;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      if (taken[c]) continue;
      std::vector<std::pair<int, int>> flows = plan.flows;
      flows.push_back(candidates[c]);
      const double total = fair_total(open, flows);
      if (total > best_total * (1 + 1e-9)) {
        best = static_cast<int>(c);
        best_total = total;
      }
    }
    if (best < 0) break;
    taken[static_cast<std::size_t>(best)] = true;
    plan.flows.push_back(candidates[static_cast<std::size_t>(best)]);
    plan.headroom_Bps = best_total;
  }
  plan.fills = plan.headroom_Bps >= target * (1 - 1e-9);
  return plan;
}

bool fill_runs_again(const Spec& spec, const FillMeasurement& fill) {
  if (fill.runs >= kFillRuns) return false;
  double measured = 0;
  for (double rate : fill.rates_Bps)
    measured += rate;
  return measured < kFillShortfall * fair_total(spec, fill.flows);
}

void fill_lower_bounds(const Spec& spec, const std::vector<FillMeasurement>& fills,
                       std::vector<LinkFit>& links, std::vector<std::string>& warnings) {
  for (const FillMeasurement& fill : fills) {
    const auto index = static_cast<std::size_t>(fill.link);
    if (index >= links.size() || links[index].link != fill.link)
      throw std::invalid_argument("fill_lower_bounds: no fitted link " + std::to_string(fill.link) +
                                  " in index order");
    if (fill.rates_Bps.size() != fill.flows.size() || fill.flows.empty())
      throw std::invalid_argument("fill_lower_bounds: link " + spec.links[index].name +
                                  "'s fill has " + std::to_string(fill.rates_Bps.size()) +
                                  " rates for " + std::to_string(fill.flows.size()) + " flows");
    LinkFit& fit = links[index];
    if (!fit.bandwidth_lower_bound) continue;  // a measured route shows its rate
    double total = 0;
    for (double rate : fill.rates_Bps)
      total += rate;
    const std::string flows = describe_flows(spec, fill.flows);
    if (fill.fills) {
      if (total < fit.bandwidth_Bps) {
        warnings.push_back(fmt::format(
            "link {}: {} filled it at {:.4g} MB/s in all, under the {:.4g} MB/s of {} alone (a "
            "run the machine slowed): the single route's lower bound is kept",
            spec.links[index].name, flows, total / 1e6, fit.bandwidth_Bps / 1e6,
            fit.bandwidth_from));
        continue;
      }
      fit.bandwidth_Bps = total;
      fit.bandwidth_lower_bound = false;
      fit.bandwidth_filled = true;
      fit.bandwidth_from = flows;
      continue;
    }
    // No traffic of the testbed fills it: written where these flows, on the links as fitted,
    // would not be held back by it.
    Spec fitted = spec;
    for (const LinkFit& other : links)
      fitted.links.at(static_cast<std::size_t>(other.link)).bandwidth_Bps = other.bandwidth_Bps;
    const double clear = fair_total(without_link(fitted, fill.link), fill.flows);
    fit.bandwidth_Bps = std::max({fit.bandwidth_Bps, total, clear});
    fit.bandwidth_from = fmt::format(
        "{} (no traffic of the testbed fills it: {:.4g} MB/s in all, {:.4g} MB/s on the links as "
        "fitted without it)",
        flows, total / 1e6, clear / 1e6);
  }
}

namespace {

/// The routes to measure: every ordered pair, or a cover of every link.
std::vector<std::pair<int, int>> routes_to_measure(const Spec& spec,
                                                   const NetworkCalibrationRequest& request) {
  std::vector<std::pair<int, int>> pairs;
  if (request.all_pairs)
    for (const SpecRoute& r : spec.routes)
      pairs.emplace_back(r.src, r.dst);
  else
    pairs = covering_pairs(spec);
  return pairs;
}

}  // namespace

void fit_transfers(const Spec& spec, RouteMeasurement& m) {
  std::vector<double> x;
  std::vector<double> t;
  for (const TransferSample& s : m.samples) {
    x.push_back(s.bytes);
    t.push_back(s.seconds);
  }
  m.fit =
      model::fit_lower_envelope(x, t, "testbed calibration of " + route_name(spec, m.src, m.dst));
  if (!(m.fit.slope > 0))
    throw MeasurementError("testbed calibrate: transfer time did not grow with size on " +
                           route_name(spec, m.src, m.dst) + " (slope " + short_num(m.fit.slope) +
                           "; a busy machine, or the hypervisor's steal): measure again");
  m.bandwidth_Bps = 1 / m.fit.slope;
}

namespace {

/// Measures one route a -> b: its round trip by ping-pong, its bandwidth by timed transfers.
RouteMeasurement measure_route(const Spec& spec, const NetworkCalibrationRequest& request, int a,
                               int b, const std::function<void(const std::string&)>& progress) {
  const SpecRoute& route = spec.route(a, b);
  RouteMeasurement m;
  m.src = a;
  m.dst = b;
  m.testbed_round_trip_s = route.latency_s + spec.route(b, a).latency_s;
  m.testbed_bandwidth_Bps = route.bandwidth_Bps;
  const double ping_timeout = (request.pings + 3) * (4 * m.testbed_round_trip_s + 0.05) + 10;
  m.round_trips_s = ping_pong(endpoint(spec, a), endpoint(spec, b), request.pings,
                              request.ping_bytes, ping_timeout);
  // The fastest echo: noise on this machine only adds (across recorded calibrations the median
  // moved by up to 19-36% with the hypervisor's steal, the fastest by 6-10%:
  // experiments/testbed/README.md, "Calibrations that repeat").
  if (m.round_trips_s.empty())
    throw std::runtime_error("testbed calibrate: no echo of route " + route_name(spec, a, b));
  m.round_trip_s = *std::min_element(m.round_trips_s.begin(), m.round_trips_s.end());
  const double largest = std::max(64.0 * 1024, route.bandwidth_Bps * request.transfer_s);
  std::vector<double> sizes;
  for (int k = 1; k <= request.sizes; ++k)
    sizes.push_back(std::round(largest * k / request.sizes));
  double total = largest;
  for (double s : sizes)
    total += s * request.repeats;
  const double transfer_timeout =
      3 * total / route.bandwidth_Bps +
      (request.sizes * request.repeats + 1) * 4 * m.testbed_round_trip_s + 20;
  m.samples = transfer_times(endpoint(spec, a), endpoint(spec, b), sizes, request.repeats,
                             transfer_timeout);
  fit_transfers(spec, m);
  progress(
      fmt::format("route {}: round trip {:.4g} ms (testbed {:.4g}), bandwidth {:.4g} MB/s "
                  "(testbed {:.4g}), R^2 {:.4f}",
                  route_name(spec, a, b), m.round_trip_s * 1e3, m.testbed_round_trip_s * 1e3,
                  m.bandwidth_Bps / 1e6, m.testbed_bandwidth_Bps / 1e6, m.fit.r2));
  return m;
}

/// Runs 1, 2, ... concurrent flows (request.flow_counts) from `senders` into `target`.
void measure_shares(const State& state, const NetworkCalibrationRequest& request, int target,
                    const std::vector<int>& senders, NetworkCalibration& cal,
                    const std::function<void(const std::string&)>& progress) {
  const Spec& spec = state.spec;
  for (int n : request.flow_counts) {
    if (n < 1 || n > static_cast<int>(senders.size())) {
      cal.warnings.push_back(fmt::format("{} concurrent flows skipped: the testbed has {} senders",
                                         n, senders.size()));
      continue;
    }
    ShareMeasurement share;
    for (int f = 0; f < n; ++f)
      share.flows.emplace_back(senders[static_cast<std::size_t>(f)], target);
    const double cpu_before = process_cpu_seconds(state.fabric_pid);
    const double t0 = now_s();
    const auto rates = run_streams(spec, request, share.flows);
    share.seconds = now_s() - t0;
    share.fabric_cpu_s = process_cpu_seconds(state.fabric_pid) - cpu_before;
    for (const StreamRate& r : rates)
      share.rates_Bps.push_back(r.rate_Bps);
    share.fair_Bps = max_min_rates(spec, share.flows);
    std::string line =
        fmt::format("{} flow(s) into {}:", n, spec.hosts[static_cast<std::size_t>(target)].name);
    for (int f = 0; f < n; ++f)
      line += fmt::format(" {:.4g}", share.rates_Bps[static_cast<std::size_t>(f)] / 1e6);
    line += fmt::format(" MB/s (fair {:.4g} each at most)", share.fair_Bps.front() / 1e6);
    progress(line);
    cal.shares.push_back(std::move(share));
  }
}

/// Runs both directions at once: the first sender with the target, and a route whose two
/// directions cross a shared link, if the testbed has one.
void measure_duplexes(const Spec& spec, const NetworkCalibrationRequest& request, int target,
                      const std::vector<int>& senders, NetworkCalibration& cal,
                      const std::function<void(const std::string&)>& progress) {
  double alone = 0;  // from the single-flow run, if there was one
  for (const ShareMeasurement& s : cal.shares)
    if (s.flows.size() == 1) alone = s.rates_Bps.front();
  cal.duplex.push_back(measure_duplex(spec, request, senders.front(), target, alone));
  // And across a shared link, when the testbed has one that both directions of a route cross.
  for (const SpecRoute& route : spec.routes) {
    if (route.src > route.dst) continue;
    const SpecRoute& back = spec.route(route.dst, route.src);
    bool common_shared = false;
    for (int l : route.links)
      if (spec.links[static_cast<std::size_t>(l)].sharing == Sharing::Shared &&
          std::count(back.links.begin(), back.links.end(), l))
        common_shared = true;
    if (!common_shared) continue;
    if (std::make_pair(route.src, route.dst) != std::make_pair(senders.front(), target) &&
        std::make_pair(route.dst, route.src) != std::make_pair(senders.front(), target))
      cal.duplex.push_back(measure_duplex(spec, request, route.src, route.dst, 0));
    break;
  }
  for (const DuplexMeasurement& d : cal.duplex)
    progress(
        fmt::format("both directions {}: {:.4g} and {:.4g} MB/s at once, {:.4g} and "
                    "{:.4g} alone",
                    route_name(spec, d.a, d.b), d.both_ab_Bps / 1e6, d.both_ba_Bps / 1e6,
                    d.alone_ab_Bps / 1e6, d.alone_ba_Bps / 1e6));
}

/// Runs, for every link no route shows at its rate, the flows plan_fill chooses to fill it.
void measure_fills(const Spec& spec, const NetworkCalibrationRequest& request,
                   NetworkCalibration& cal,
                   const std::function<void(const std::string&)>& progress) {
  for (int link : links_no_route_shows(spec)) {
    FillMeasurement fill = plan_fill(spec, link);
    if (fill.flows.empty()) continue;
    const double t0 = now_s();
    double total = 0;
    do {
      std::vector<double> rates;
      double run_total = 0;
      for (const StreamRate& r : run_streams(spec, request, fill.flows)) {
        rates.push_back(r.rate_Bps);
        run_total += r.rate_Bps;
      }
      ++fill.runs;
      if (run_total > total) {
        total = run_total;
        fill.rates_Bps = rates;
      }
    } while (fill_runs_again(spec, fill));
    fill.seconds = now_s() - t0;
    progress(fmt::format(
        "link {} (testbed {:.4g} MB/s): {}, {:.4g} MB/s in all ({}; {:.4g} MB/s "
        "fair without it; the largest of {} run{})",
        spec.links[static_cast<std::size_t>(link)].name,
        spec.links[static_cast<std::size_t>(link)].bandwidth_Bps / 1e6,
        describe_flows(spec, fill.flows), total / 1e6, fill.fills ? "fills it" : "cannot fill it",
        fill.headroom_Bps / 1e6, fill.runs, fill.runs == 1 ? "" : "s"));
    cal.fills.push_back(std::move(fill));
  }
}

}  // namespace

NetworkCalibration calibrate_network(const State& state, const NetworkCalibrationRequest& request,
                                     const std::function<void(const std::string&)>& progress) {
  const Spec& spec = state.spec;
  NetworkCalibration cal;
  cal.date = model::utc_now_iso8601();
  cal.commit = model::tauplan_git_commit();
  cal.packet_bytes = state.spec.mtu - kTcpIpHeaderBytes;
  cal.request = request;
  const double started = now_s();

  for (const auto& [a, b] : routes_to_measure(spec, request))
    cal.routes.push_back(measure_route(spec, request, a, b, progress));

  const int target = pick_share_target(spec, request.share_to);
  std::vector<int> senders;
  for (std::size_t i = 0; i < spec.hosts.size(); ++i)
    if (static_cast<int>(i) != target) senders.push_back(static_cast<int>(i));
  measure_shares(state, request, target, senders, cal, progress);
  if (request.duplex && !senders.empty())
    measure_duplexes(spec, request, target, senders, cal, progress);
  measure_fills(spec, request, cal, progress);

  cal.links = fit_links(spec, cal.routes, cal.warnings);
  fill_lower_bounds(spec, cal.fills, cal.links, cal.warnings);
  cal.seconds = now_s() - started;
  return cal;
}

namespace {

/// A platform link as written: split-duplex halves grouped under their platform link.
struct WrittenLink {
  std::string name;
  Sharing sharing = Sharing::Shared;
  std::map<std::string, const LinkFit*> halves;  // "UP"/"DOWN", or "" for one
};

/// Groups the fitted links under the platform links they belong to, in first-use order.
std::vector<WrittenLink> group_links(const Spec& spec, const NetworkCalibration& cal) {
  std::vector<WrittenLink> written;
  std::map<std::string, std::size_t> by_name;
  for (const LinkFit& fit : cal.links) {
    const SpecLink& link = spec.links[static_cast<std::size_t>(fit.link)];
    const auto [name, direction] = base_link(link);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      it = by_name.emplace(name, written.size()).first;
      written.push_back({name, link.sharing, {}});
    }
    written[it->second].halves[direction] = &fit;
  }
  return written;
}

/// The fitted platform's largest route errors against the measurements, and the smallest R^2.
struct FitErrors {
  double max_latency_error = 0;
  double max_bandwidth_error = 0;
  double min_r2 = 1;
};

/// Predicts each measured route from the fitted links and compares.
FitErrors fit_errors(const Spec& spec, const NetworkCalibration& cal) {
  FitErrors e;
  // A message route's round trip is 2 alpha: with a rendezvous, three trips of its links each.
  const double trips = cal.eager_limit_bytes >= 0 ? model::MessageProtocol::kRendezvousTrips : 1;
  for (const RouteMeasurement& m : cal.routes) {
    double predicted_rtt = 0;
    double predicted_bw = std::numeric_limits<double>::infinity();
    for (int l : spec.route(m.src, m.dst).links) {
      predicted_rtt += cal.links[static_cast<std::size_t>(l)].latency_s;
      predicted_bw = std::min(predicted_bw, cal.links[static_cast<std::size_t>(l)].bandwidth_Bps);
    }
    for (int l : spec.route(m.dst, m.src).links)
      predicted_rtt += cal.links[static_cast<std::size_t>(l)].latency_s;
    predicted_rtt *= trips;
    // A message's alpha also holds its store-and-forward (scale_latencies_to_messages).
    if (cal.eager_limit_bytes >= 0 && cal.packet_bytes > 0)
      predicted_rtt += 2 * route_forwarding_s(spec, cal.links, m.src, m.dst);
    e.max_latency_error =
        std::max(e.max_latency_error, std::abs(predicted_rtt - m.round_trip_s) / m.round_trip_s);
    e.max_bandwidth_error =
        std::max(e.max_bandwidth_error, std::abs(predicted_bw - m.bandwidth_Bps) / m.bandwidth_Bps);
    e.min_r2 = std::min(e.min_r2, m.fit.r2);
  }
  return e;
}

/// How the routes were measured: the MPI method if given, else the TCP one with its numbers.
std::string measurement_method(const NetworkCalibration& cal) {
  const std::string tcp_method =
      "TCP sockets between threads inside the testbed namespaces, wall clock: round trip = "
      "the fastest of " +
      std::to_string(cal.request.pings) + " echoes of " + std::to_string(cal.request.ping_bytes) +
      " bytes; bandwidth = 1 / slope of the line t = alpha + S / beta under " +
      std::to_string(cal.request.sizes) + " sizes x " + std::to_string(cal.request.repeats) +
      " one-way transfers that is highest at their mean size (the lower envelope; largest: " +
      short_num(cal.request.transfer_s) + " s at the route's rate) on " +
      std::to_string(cal.routes.size()) + " routes" +
      (cal.request.all_pairs ? " (every ordered pair)" : " (a cover of every link)");
  return cal.message_method.empty() ? tcp_method : cal.message_method;
}

/// The XML declaration, DOCTYPE and the comment that says how the platform was calibrated.
std::string xml_preamble(const Spec& spec, const NetworkCalibration& cal, const std::string& method,
                         const std::string& errors) {
  std::string out;
  out += "<?xml version='1.0'?>\n";
  out += "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  out += "<!--\n";
  out += " Calibrated by `tauplan testbed calibrate` on " + cal.date + " (tauplan commit " +
         cal.commit + ")\n";
  out += " across the emulated testbed of " + comment_safe(spec.platform_file) + " (hash " +
         spec.platform_hash + "),\n";
  out += " time scale " + short_num(spec.scale) + " (" + comment_safe(spec.scale_reason) +
         "): numbers here are the testbed's, i.e. bandwidths\n";
  out +=
      " are the platform's / scale and latencies x scale, as a TCP flow really gets them "
      "there.\n";
  out += " Measured: " + comment_safe(method) + ".\n";
  out += " " + errors + ".\n";
  out +=
      " Latency of a link: least-squares (smallest norm) split of the measured round trips "
      "over their links;\n";
  out +=
      " bandwidth: the fastest route it is the narrowest link of, else the total of concurrent "
      "flows that\n filled it, else a lower bound (props say which).\n";
  if (cal.compute.empty())
    out +=
        " Hosts, speeds and props are copied from the testbed platform: compute is not "
        "measured here.\n";
  else
    out += " Compute of hosts " + std::to_string(cal.compute.size()) + " of " +
           std::to_string(spec.hosts.size()) + ": " + comment_safe(cal.compute_method) +
           "; the others' speeds and props are the testbed platform's.\n";
  out +=
      " Routes: every ordered pair of the testbed's hosts, as on the testbed (Full "
      "routing).\n";
  out += "-->\n";
  return out;
}

/// The zone's props: where the calibration comes from, how it was made, how well it fits.
std::string xml_zone_props(const Spec& spec, const NetworkCalibration& cal,
                           const std::string& method, const FitErrors& e) {
  std::string out;
  auto zone_prop = [&out](const std::string& id, const std::string& value) {
    out += "    <prop id=\"" + id + "\" value=\"" + xml::escape(value) + "\"/>\n";
  };
  zone_prop("calibrated_by", "tauplan testbed calibrate");
  zone_prop("date", cal.date);
  zone_prop("commit", cal.commit);
  zone_prop("testbed_platform", spec.platform_file);
  zone_prop("testbed_platform_hash", spec.platform_hash);
  zone_prop("testbed_scale", num(spec.scale));
  zone_prop("testbed_mtu", std::to_string(spec.mtu));
  zone_prop("method", method);
  zone_prop("max_round_trip_error", num(e.max_latency_error));
  zone_prop("max_bandwidth_error", num(e.max_bandwidth_error));
  zone_prop("min_r2", num(e.min_r2));
  if (cal.eager_limit_bytes >= 0) {
    zone_prop("message_protocol", "rendezvous");
    zone_prop("eager_limit_bytes", num(cal.eager_limit_bytes));
  }
  if (cal.packet_bytes > 0) zone_prop("packet_bytes", num(cal.packet_bytes));
  if (cal.queued_window_bytes >= 0)
    zone_prop("queued_window_bytes", num(std::round(cal.queued_window_bytes)));
  return out;
}

/// The hosts: the testbed's, with measured compute speeds and props where there are some.
std::string xml_hosts(const Spec& spec, const NetworkCalibration& cal) {
  std::string out;
  for (const SpecHost& host : spec.hosts) {
    const auto measured = cal.compute.find(host.name);
    const bool has_compute = measured != cal.compute.end();
    out += "    <host id=\"" + xml::escape(host.name) + "\" speed=\"" +
           num(has_compute ? measured->second.speed_flops : host.speed_flops) + "f\">\n";
    std::map<std::string, std::string> props = host.properties;
    if (has_compute)
      for (const auto& [id, value] : measured->second.props)
        props[id] = value;
    props["node"] = host.node;
    props["role"] = host.role;
    for (const auto& [id, value] : props)
      out += "      <prop id=\"" + xml::escape(id) + "\" value=\"" + xml::escape(value) + "\"/>\n";
    out += "    </host>\n";
  }
  return out;
}

/// One platform link: its halves' fitted rate and latency, and props of what each came from.
std::string xml_link(const Spec& spec, const WrittenLink& w) {
  double bandwidth = 0;
  double latency = 0;
  int count = 0;
  int exact = 0;
  double bound = 0;
  for (const auto& [direction, fit] : w.halves) {
    latency += fit->latency_s;
    ++count;
    if (!fit->bandwidth_lower_bound) {
      bandwidth += fit->bandwidth_Bps;
      ++exact;
    } else {
      bound = std::max(bound, fit->bandwidth_Bps);
    }
  }
  latency /= count;
  bandwidth = exact > 0 ? bandwidth / exact : bound;
  const char* policy = w.sharing == Sharing::SplitDuplex ? "SPLITDUPLEX"
                       : w.sharing == Sharing::FatPipe   ? "FATPIPE"
                                                         : "SHARED";
  std::string out;
  out += "    <link id=\"" + xml::escape(w.name) + "\" bandwidth=\"" + num(bandwidth) +
         "Bps\" latency=\"" + num(latency) + "s\" sharing_policy=\"" + policy + "\">\n";
  for (const auto& [direction, fit] : w.halves) {
    const SpecLink& link = spec.links[static_cast<std::size_t>(fit->link)];
    const std::string p = direction.empty() ? "" : (direction == "UP" ? "up_" : "down_");
    auto link_prop = [&out, &p](const std::string& id, const std::string& value) {
      out += "      <prop id=\"" + p + id + "\" value=\"" + xml::escape(value) + "\"/>\n";
    };
    link_prop("fitted_bandwidth_Bps", num(fit->bandwidth_Bps));
    link_prop("fitted_latency_s", num(fit->latency_s));
    link_prop("bandwidth_from", fit->bandwidth_lower_bound ? "lower bound: " + fit->bandwidth_from
                                : fit->bandwidth_filled
                                    ? "filled by " + fit->bandwidth_from
                                    : "narrowest link of " + fit->bandwidth_from);
    link_prop("testbed_bandwidth_Bps", num(link.bandwidth_Bps));
    link_prop("testbed_latency_s", num(link.latency_s));
    link_prop("platform_bandwidth_Bps", num(link.platform_bandwidth_Bps));
    link_prop("platform_latency_s", num(link.platform_latency_s));
  }
  out += "    </link>\n";
  return out;
}

/// Every ordered pair's route, split-duplex halves named by their platform link and direction.
std::string xml_routes(const Spec& spec) {
  std::string out;
  for (const SpecRoute& route : spec.routes) {
    out += "    <route src=\"" + xml::escape(spec.hosts[static_cast<std::size_t>(route.src)].name) +
           "\" dst=\"" + xml::escape(spec.hosts[static_cast<std::size_t>(route.dst)].name) +
           "\" symmetrical=\"NO\">";
    for (int l : route.links) {
      const auto [name, direction] = base_link(spec.links[static_cast<std::size_t>(l)]);
      out += "<link_ctn id=\"" + xml::escape(name) + "\"";
      if (!direction.empty()) out += " direction=\"" + direction + "\"";
      out += "/>";
    }
    out += "</route>\n";
  }
  return out;
}

}  // namespace

std::string calibrated_platform_xml(const Spec& spec, const NetworkCalibration& cal) {
  const std::vector<WrittenLink> written = group_links(spec, cal);
  const FitErrors e = fit_errors(spec, cal);
  const std::string method = measurement_method(cal);
  const std::string errors = fmt::format(
      "largest route error of the fitted platform against the measurements: round trip {:.3g}%, "
      "bandwidth {:.3g}%; smallest R^2 of a route's fit (its transfers; its messages with MPI) "
      "{:.6f}",
      100 * e.max_latency_error, 100 * e.max_bandwidth_error, e.min_r2);

  std::string out = xml_preamble(spec, cal, method, errors);
  out += "<platform version=\"4.1\">\n";
  out += "  <zone id=\"world\" routing=\"Full\">\n";
  out += xml_zone_props(spec, cal, method, e);
  out += xml_hosts(spec, cal);
  for (const WrittenLink& w : written)
    out += xml_link(spec, w);
  out += xml_routes(spec);
  out += "  </zone>\n</platform>\n";
  return out;
}

MessageFit fit_messages(const std::vector<TransferSample>& samples, const std::string& route) {
  if (samples.empty())
    throw std::invalid_argument("fit_messages: no MPI messages of route " + route);
  std::vector<double> bytes, seconds;
  for (const TransferSample& sample : samples) {
    bytes.push_back(sample.bytes);
    seconds.push_back(sample.seconds);
  }
  const double smallest = *std::min_element(bytes.begin(), bytes.end());
  MessageFit fit;
  if (*std::max_element(bytes.begin(), bytes.end()) > smallest) {
    const double slope =
        model::fit_lower_envelope(bytes, seconds, "MPI messages of route " + route).slope;
    if (slope > 0) fit.bandwidth_Bps = 1 / slope;
  }
  if (!(fit.bandwidth_Bps > 0 && std::isfinite(fit.bandwidth_Bps)))
    throw MeasurementError(fmt::format(
        "testbed calibrate --mpi: route {}: its MPI messages took no longer when larger (a busy "
        "machine, or the hypervisor's steal): measure again",
        route));
  fit.alpha_s = std::numeric_limits<double>::infinity();
  for (const TransferSample& sample : samples)
    if (sample.bytes == smallest)
      fit.alpha_s = std::min(fit.alpha_s, sample.seconds - sample.bytes / fit.bandwidth_Bps);
  if (!(fit.alpha_s > 0))
    throw MeasurementError(fmt::format(
        "testbed calibrate --mpi: route {}: MPI messages of {:.0f} bytes took no longer than "
        "their bytes at {:.4g} MB/s (overhead {:.3g} s; a busy machine, or the hypervisor's "
        "steal): measure again",
        route, smallest, fit.bandwidth_Bps / 1e6, fit.alpha_s));
  fit.line.intercept = fit.alpha_s;
  fit.line.slope = 1 / fit.bandwidth_Bps;
  model::describe_fit(bytes, seconds, fit.line);
  return fit;
}

std::vector<double> message_sizes(std::vector<double> sizes, double slowest_Bps, double longest_s,
                                  std::vector<std::string>& left_out) {
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() < 2) throw std::invalid_argument("message_sizes: fewer than two distinct sizes");
  if (!(slowest_Bps > 0))
    throw std::invalid_argument("message_sizes: the slowest route's rate is not positive");
  while (sizes.size() > 2 && sizes.back() / slowest_Bps > longest_s) {
    left_out.push_back(fmt::format(
        "MPI messages of {:.0f} bytes left out: {:.4g} s at the slowest route's shaped rate "
        "({:.4g} MB/s), more than {:g} s",
        sizes.back(), sizes.back() / slowest_Bps, slowest_Bps / 1e6, longest_s));
    sizes.pop_back();
  }
  return sizes;
}

namespace {

/// Throws std::invalid_argument ("WHO: message and TCP routes differ") unless the two lists hold
/// the same routes in the same order.
void require_same_routes(const std::vector<RouteMeasurement>& message_routes,
                         const std::vector<RouteMeasurement>& tcp_routes, const char* who) {
  bool same = message_routes.size() == tcp_routes.size();
  for (std::size_t i = 0; same && i < tcp_routes.size(); ++i)
    same = message_routes[i].src == tcp_routes[i].src && message_routes[i].dst == tcp_routes[i].dst;
  if (!same) throw std::invalid_argument(std::string(who) + ": message and TCP routes differ");
}

}  // namespace

std::vector<LinkFit> fit_links_to_messages(const Spec& spec,
                                           const std::vector<RouteMeasurement>& message_routes,
                                           const std::vector<RouteMeasurement>& tcp_routes,
                                           std::vector<std::string>& warnings) {
  require_same_routes(message_routes, tcp_routes, "fit_links_to_messages");
  std::vector<RouteMeasurement> rates = tcp_routes;
  for (std::size_t i = 0; i < rates.size(); ++i)
    rates[i].bandwidth_Bps = message_routes[i].bandwidth_Bps;
  std::vector<std::string> fit_warnings;
  std::vector<LinkFit> links = fit_links(spec, rates, fit_warnings);
  for (const std::string& warning : fit_warnings)
    if (std::find(warnings.begin(), warnings.end(), warning) == warnings.end())
      warnings.push_back(warning);
  return links;
}

double route_forwarding_s(const Spec& spec, const std::vector<LinkFit>& links, int src, int dst) {
  model::ForwardingPerByte per_byte;
  for (int l : spec.route(src, dst).links)
    per_byte.add_link(links.at(static_cast<std::size_t>(l)).bandwidth_Bps);
  return (spec.mtu - kTcpIpHeaderBytes) * per_byte.s_per_byte();
}

double scale_latencies_to_messages(const Spec& spec,
                                   const std::vector<RouteMeasurement>& mpi_routes,
                                   const std::vector<RouteMeasurement>& tcp_routes, int trips,
                                   std::vector<LinkFit>& links,
                                   std::vector<std::string>& warnings) {
  if (trips < 1) throw std::invalid_argument("scale_latencies_to_messages: trips < 1");
  require_same_routes(mpi_routes, tcp_routes, "scale_latencies_to_messages");
  std::vector<double> forwarding;
  for (const RouteMeasurement& m : mpi_routes)
    forwarding.push_back(route_forwarding_s(spec, links, m.src, m.dst));
  double sum_al = 0, sum_ll = 0;
  for (std::size_t i = 0; i < mpi_routes.size(); ++i) {
    const double one_way = trips * tcp_routes[i].round_trip_s / 2;
    sum_al += (mpi_routes[i].fit.intercept - forwarding[i]) * one_way;
    sum_ll += one_way * one_way;
  }
  if (!(sum_ll > 0))
    throw std::invalid_argument("scale_latencies_to_messages: no positive TCP round trip");
  const double factor = sum_al / sum_ll;
  for (LinkFit& link : links)
    link.latency_s *= factor;
  for (std::size_t i = 0; i < mpi_routes.size(); ++i) {
    const RouteMeasurement& m = mpi_routes[i];
    const double predicted = trips * factor * tcp_routes[i].round_trip_s / 2 + forwarding[i];
    if (!(std::fabs(predicted / m.fit.intercept - 1) <= 0.10))
      warnings.push_back(fmt::format(
          "route {} -> {}: MPI alpha {:.4g} s, {} x {:.4g} x its TCP latency + {:.4g} s of "
          "store-and-forward predicts {:.4g} s",
          spec.hosts[static_cast<std::size_t>(m.src)].name,
          spec.hosts[static_cast<std::size_t>(m.dst)].name, m.fit.intercept, trips, factor,
          forwarding[i], predicted));
  }
  return factor;
}

namespace {

/// The queued-window probe's readings as JSON.
nlohmann::json window_json(const std::vector<QueuedWindowReading>& readings) {
  nlohmann::json out = nlohmann::json::array();
  for (const QueuedWindowReading& r : readings)
    out.push_back({{"sender", r.sender},
                   {"receiver", r.receiver},
                   {"pinger", r.pinger},
                   {"quiet_median_s", r.quiet_median_s},
                   {"message_waits_s", r.message_waits_s},
                   {"queue_wait_s", r.queue_wait_s},
                   {"busy_pings", r.busy_pings},
                   {"link_Bps", r.link_Bps},
                   {"window_bytes", r.window_bytes}});
  return out;
}

/// The fills (concurrent flows run to fill links no single route shows) as JSON.
nlohmann::json fills_json(const NetworkCalibration& cal, const Spec& spec) {
  nlohmann::json fills = nlohmann::json::array();
  for (const FillMeasurement& f : cal.fills) {
    nlohmann::json flows = nlohmann::json::array();
    double total = 0;
    for (std::size_t i = 0; i < f.flows.size(); ++i) {
      flows.push_back({{"src", spec.hosts[static_cast<std::size_t>(f.flows[i].first)].name},
                       {"dst", spec.hosts[static_cast<std::size_t>(f.flows[i].second)].name},
                       {"rate_Bps", f.rates_Bps[i]}});
      total += f.rates_Bps[i];
    }
    fills.push_back(
        {{"link", spec.links[static_cast<std::size_t>(f.link)].name},
         {"testbed_bandwidth_Bps", spec.links[static_cast<std::size_t>(f.link)].bandwidth_Bps},
         {"fair_without_link_Bps", f.headroom_Bps},
         {"fills", f.fills},
         {"aggregate_Bps", total},
         {"seconds", f.seconds},
         {"runs", f.runs},
         {"flows", flows}});
  }
  return fills;
}

}  // namespace

nlohmann::json to_json(const NetworkCalibration& cal, const Spec& spec) {
  auto host = [&spec](int i) { return spec.hosts[static_cast<std::size_t>(i)].name; };
  auto routes_json = [&](const std::vector<RouteMeasurement>& measured) {
    nlohmann::json routes = nlohmann::json::array();
    for (const RouteMeasurement& m : measured) {
      nlohmann::json samples = nlohmann::json::array();
      for (const TransferSample& s : m.samples)
        samples.push_back({{"bytes", s.bytes}, {"seconds", s.seconds}});
      routes.push_back(
          {{"src", host(m.src)},
           {"dst", host(m.dst)},
           {"round_trip_s", m.round_trip_s},
           {"round_trips_s", m.round_trips_s},
           {"latency_s", m.round_trip_s / 2},
           {"testbed_round_trip_s", m.testbed_round_trip_s},
           {"latency_error", (m.round_trip_s - m.testbed_round_trip_s) / m.testbed_round_trip_s},
           {"bandwidth_Bps", m.bandwidth_Bps},
           {"testbed_bandwidth_Bps", m.testbed_bandwidth_Bps},
           {"bandwidth_error",
            (m.bandwidth_Bps - m.testbed_bandwidth_Bps) / m.testbed_bandwidth_Bps},
           {"alpha_s", m.fit.intercept},
           {"r2", m.fit.r2},
           {"max_relative_residual", m.fit.max_relative_residual},
           {"transfers", samples}});
    }
    return routes;
  };
  const nlohmann::json routes = routes_json(cal.routes);
  nlohmann::json shares = nlohmann::json::array();
  for (const ShareMeasurement& s : cal.shares) {
    nlohmann::json flows = nlohmann::json::array();
    double total = 0;
    double fair_total = 0;
    for (std::size_t f = 0; f < s.flows.size(); ++f) {
      flows.push_back({{"src", host(s.flows[f].first)},
                       {"dst", host(s.flows[f].second)},
                       {"rate_Bps", s.rates_Bps[f]},
                       {"fair_Bps", s.fair_Bps[f]},
                       {"ratio", s.rates_Bps[f] / s.fair_Bps[f]}});
      total += s.rates_Bps[f];
      fair_total += s.fair_Bps[f];
    }
    shares.push_back({{"flows", flows},
                      {"aggregate_Bps", total},
                      {"fair_aggregate_Bps", fair_total},
                      {"fabric_cpu_s", s.fabric_cpu_s},
                      {"seconds", s.seconds},
                      {"fabric_cpu_share", s.fabric_cpu_s / s.seconds}});
  }
  nlohmann::json duplex = nlohmann::json::array();
  for (const DuplexMeasurement& d : cal.duplex)
    duplex.push_back({{"a", host(d.a)},
                      {"b", host(d.b)},
                      {"alone_ab_Bps", d.alone_ab_Bps},
                      {"alone_ba_Bps", d.alone_ba_Bps},
                      {"both_ab_Bps", d.both_ab_Bps},
                      {"both_ba_Bps", d.both_ba_Bps},
                      {"ratio_ab", d.both_ab_Bps / d.alone_ab_Bps},
                      {"ratio_ba", d.both_ba_Bps / d.alone_ba_Bps},
                      {"common_links", d.shared_links}});
  nlohmann::json links = nlohmann::json::array();
  for (const LinkFit& fit : cal.links) {
    const SpecLink& link = spec.links[static_cast<std::size_t>(fit.link)];
    links.push_back({{"name", link.name},
                     {"sharing", sharing_name(link.sharing)},
                     {"latency_s", fit.latency_s},
                     {"testbed_latency_s", link.latency_s},
                     {"bandwidth_Bps", fit.bandwidth_Bps},
                     {"testbed_bandwidth_Bps", link.bandwidth_Bps},
                     {"bandwidth_lower_bound", fit.bandwidth_lower_bound},
                     {"bandwidth_filled", fit.bandwidth_filled},
                     {"bandwidth_from", fit.bandwidth_from}});
  }
  const NetworkCalibrationRequest& r = cal.request;
  return {
      {"date", cal.date},
      {"commit", cal.commit},
      {"platform_file", spec.platform_file},
      {"platform_hash", spec.platform_hash},
      {"scale", spec.scale},
      {"mtu", spec.mtu},
      {"seconds", cal.seconds},
      {"cpu_steal_fraction",
       cal.steal_fraction >= 0 ? nlohmann::json(cal.steal_fraction) : nlohmann::json(nullptr)},
      {"request",
       {{"all_pairs", r.all_pairs},
        {"pings", r.pings},
        {"ping_bytes", r.ping_bytes},
        {"sizes", r.sizes},
        {"repeats", r.repeats},
        {"transfer_s", r.transfer_s},
        {"flow_counts", r.flow_counts},
        {"window_s", r.window_s},
        {"duplex", r.duplex},
        {"warmup_s", r.warmup_s}}},
      {"timing", cal.message_method.empty()
                     ? "wall clock (CLOCK_MONOTONIC), TCP between threads in the namespaces"
                     : cal.message_method},
      {"routes", routes},
      {"tcp_routes", routes_json(cal.tcp_routes)},
      {"mpi_latency_factor", cal.mpi_latency_factor},
      {"message_protocol", cal.eager_limit_bytes >= 0 ? "rendezvous" : "plain"},
      {"eager_limit_bytes", cal.eager_limit_bytes >= 0 ? nlohmann::json(cal.eager_limit_bytes)
                                                       : nlohmann::json(nullptr)},
      {"queued_window_bytes", cal.queued_window_bytes >= 0 ? nlohmann::json(cal.queued_window_bytes)
                                                           : nlohmann::json(nullptr)},
      {"queued_window_readings", window_json(cal.window_readings)},
      {"shares", shares},
      {"duplex", duplex},
      {"fills", fills_json(cal, spec)},
      {"links", links},
      {"warnings", cal.warnings}};
}

}  // namespace tauplan::testbed
