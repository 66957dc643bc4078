// topology_probe.cpp: probing a tree network from its hosts; see topology_probe.hpp.
#include "exec/testbed/topology_probe.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "exec/testbed/probe.hpp"
#include "model/base/limits.hpp"
#include "model/inputs/platform.hpp"
#include "model/inputs/simgrid_xml.hpp"
#include "model/ir/result.hpp"

namespace tauplan::testbed {

namespace xml = model::simgrid_xml;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// A route "shares" with another when running beside it costs it more than this of its rate.
constexpr double kSharedDrop = 0.15;
/// An unbounded link is written at this many times the largest total a probe put through it: far
/// from binding in any load like the probes', yet a finite rate SimGrid accepts.
constexpr double kUnboundedFactor = 10;
/// Each sweep can only move a link between two states (its probe's total, or unbounded); on a
/// tree the fit settles in 2-3 sweeps (the tests' and the testbeds'); more means the probes
/// contradict each other.
constexpr int kMaxFitSweeps = 10;
/// A refitted tree that misses some pair's measured latency by more than this is suspect.
constexpr double kTreeLatencyMiss = 0.1;
/// Route pairs drawn to find the check's two classes; a tree with few shared links may have
/// few pairs that share, so the draw gives up after this many.
constexpr int kCheckDraws = 4000;

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  const double weight = position - static_cast<double>(below);
  return values[below] * (1 - weight) + values[above] * weight;
}

std::size_t at(int index) {
  return static_cast<std::size_t>(index);
}

/// The tree's adjacency: for every node, (neighbour, edge index) in edge order.
std::vector<std::vector<std::pair<int, int>>> adjacency(const std::vector<ProbedEdge>& edges,
                                                        int nodes) {
  std::vector<std::vector<std::pair<int, int>>> adjacent(at(nodes));
  for (std::size_t e = 0; e < edges.size(); ++e) {
    adjacent[at(edges[e].a)].push_back({edges[e].b, static_cast<int>(e)});
    adjacent[at(edges[e].b)].push_back({edges[e].a, static_cast<int>(e)});
  }
  return adjacent;
}

/// The directed links from `src` to `dst` along the tree (2e: a -> b, 2e + 1: b -> a).
std::vector<int> tree_path(const std::vector<std::vector<std::pair<int, int>>>& adjacent,
                           const std::vector<ProbedEdge>& edges, int src, int dst) {
  std::vector<int> via_edge(adjacent.size(), -1);
  std::vector<int> previous(adjacent.size(), -1);
  std::vector<int> frontier = {src};
  previous[at(src)] = src;
  while (!frontier.empty() && previous[at(dst)] < 0) {
    std::vector<int> next;
    for (int node : frontier)
      for (const auto& [neighbour, edge] : adjacent[at(node)])
        if (previous[at(neighbour)] < 0) {
          previous[at(neighbour)] = node;
          via_edge[at(neighbour)] = edge;
          next.push_back(neighbour);
        }
    frontier = std::move(next);
  }
  std::vector<int> links;
  for (int node = dst; node != src; node = previous[at(node)]) {
    const int edge = via_edge[at(node)];
    links.push_back(edges[at(edge)].b == node ? 2 * edge : 2 * edge + 1);
  }
  std::reverse(links.begin(), links.end());
  return links;
}

/// Hosts reachable from `node` without going back to `parent`, interleaved over the branches
/// at every switch (the first host of each branch, then the second ...).
std::vector<int> spread_hosts(const std::vector<std::vector<std::pair<int, int>>>& adjacent,
                              int hosts, int node, int parent) {
  if (node < hosts) return {node};
  std::vector<std::vector<int>> branches;
  for (const auto& [neighbour, edge] : adjacent[at(node)])
    if (neighbour != parent) branches.push_back(spread_hosts(adjacent, hosts, neighbour, node));
  std::vector<int> out;
  for (std::size_t i = 0;; ++i) {
    bool any = false;
    for (const std::vector<int>& branch : branches)
      if (i < branch.size()) {
        out.push_back(branch[i]);
        any = true;
      }
    if (!any) return out;
  }
}

/// Least squares with non-negative unknowns, by clamping: solve, fix the most negative unknown at
/// 0, solve the rest again, until none is negative (an approximation of true NNLS, which could
/// free a clamped unknown again; on a tree metric with noise the clamped edges are the ones
/// neighbour joining made of noise).
Eigen::VectorXd non_negative_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  const Eigen::Index n = a.cols();
  std::vector<bool> free(static_cast<std::size_t>(n), true);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  for (Eigen::Index round = 0; round <= n; ++round) {
    std::vector<Eigen::Index> columns;
    for (Eigen::Index j = 0; j < n; ++j)
      if (free[static_cast<std::size_t>(j)]) columns.push_back(j);
    if (columns.empty()) return x;
    Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(columns.size()));
    for (std::size_t c = 0; c < columns.size(); ++c)
      sub.col(static_cast<Eigen::Index>(c)) = a.col(columns[c]);
    const Eigen::VectorXd solved = sub.colPivHouseholderQr().solve(b);
    x.setZero();
    Eigen::Index most_negative = -1;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const double value = solved(static_cast<Eigen::Index>(c));
      x(columns[c]) = value;
      if (value < 0 && (most_negative < 0 || value < x(most_negative))) most_negative = columns[c];
    }
    if (most_negative < 0) return x;
    free[static_cast<std::size_t>(most_negative)] = false;
  }
  return x.cwiseMax(0.0);
}

/// Step 1: the pairs' one-way latencies and the noise of their round trips.
void measure_latencies(exec::ProbeNetwork& network, const TopologyProbeRequest& request,
                       ProbedTopology& t, const std::function<void(const std::string&)>& progress) {
  const int n = static_cast<int>(t.hosts.size());
  t.one_way_s.assign(at(n), std::vector<double>(at(n), 0.0));
  std::vector<double> spreads;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const std::vector<double> trips = network.round_trips(a, b, request.pings);
      const double rtt = quantile(trips, 0.0);  // the fastest: noise on this machine only adds
      if (!(std::isfinite(rtt) && rtt > 0))
        throw std::runtime_error(fmt::format("topology probe: no round trip between {} and {}",
                                             t.hosts[at(a)], t.hosts[at(b)]));
      t.one_way_s[at(a)][at(b)] = t.one_way_s[at(b)][at(a)] = rtt / 2;
      spreads.push_back((quantile(trips, 0.75) - quantile(trips, 0.25)) / 2);
    }
  t.latency_noise_s = quantile(spreads, 0.9);
  progress(fmt::format(
      "round trips: {} pairs x {} echoes; one-way latencies {:.4g} .. {:.4g} ms, "
      "noise (90th percentile of half the interquartile range) {:.3g} ms",
      spreads.size(), request.pings,
      1e3 *
          [&] {
            double m = kInfinity;
            for (int a = 0; a < n; ++a)
              for (int b = a + 1; b < n; ++b)
                m = std::min(m, t.one_way_s[at(a)][at(b)]);
            return m;
          }(),
      1e3 *
          [&] {
            double m = 0;
            for (const auto& row : t.one_way_s)
              for (double v : row)
                m = std::max(m, v);
            return m;
          }(),
      1e3 * t.latency_noise_s));
}

/// Step 1, continued: the tree, its short internal edges merged, its latencies refitted.
void build_tree(const TopologyProbeRequest& request, ProbedTopology& t,
                const std::function<void(const std::string&)>& progress) {
  const int n = static_cast<int>(t.hosts.size());
  t.contraction_s =
      std::max(request.min_contraction_s, request.contraction_noise * t.latency_noise_s);
  t.edges = contract_short_edges(neighbor_joining(t.one_way_s), n, t.contraction_s);
  t.nodes = n;
  for (const ProbedEdge& e : t.edges)
    t.nodes = std::max({t.nodes, e.a + 1, e.b + 1});
  const auto adjacent = adjacency(t.edges, t.nodes);
  // Refit every edge's latency over every pair's path.
  const Eigen::Index pairs = n * (n - 1) / 2;
  Eigen::MatrixXd on_path = Eigen::MatrixXd::Zero(pairs, static_cast<Eigen::Index>(t.edges.size()));
  Eigen::VectorXd measured(pairs);
  Eigen::Index row = 0;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b, ++row) {
      for (int link : tree_path(adjacent, t.edges, a, b))
        on_path(row, link / 2) = 1;
      measured(row) = t.one_way_s[at(a)][at(b)];
    }
  const Eigen::VectorXd latency = non_negative_least_squares(on_path, measured);
  double worst = 0;
  const Eigen::VectorXd fitted = on_path * latency;
  for (Eigen::Index r = 0; r < pairs; ++r)
    worst = std::max(worst, std::abs(fitted(r) - measured(r)) / measured(r));
  for (std::size_t e = 0; e < t.edges.size(); ++e)
    t.edges[e].latency_s = latency(static_cast<Eigen::Index>(e));
  progress(
      fmt::format("tree: {} switches, {} edges (internal edges under {:.3g} ms merged); "
                  "refitted latencies reproduce every pair within {:.2g}%",
                  t.nodes - n, t.edges.size(), 1e3 * t.contraction_s, 100 * worst));
  if (worst > kTreeLatencyMiss)
    t.warnings.push_back(fmt::format(
        "the tree's latencies miss a pair's measured latency by {:.3g}%: the network may not be "
        "a tree, or its latencies are within the noise",
        100 * worst));
}

std::string node_name(const ProbedTopology& t, int node) {
  const int hosts = static_cast<int>(t.hosts.size());
  return node < hosts ? t.hosts[at(node)] : "s" + std::to_string(node - hosts);
}

/// The directed links, their names and routes, and each link's capacity probe (flows only).
void lay_out_links(const TopologyProbeRequest& request, ProbedTopology& t) {
  const int n = static_cast<int>(t.hosts.size());
  const auto adjacent = adjacency(t.edges, t.nodes);
  t.links.clear();
  for (std::size_t e = 0; e < t.edges.size(); ++e)
    for (int direction = 0; direction < 2; ++direction) {
      ProbedLink link;
      link.edge = static_cast<int>(e);
      link.from = direction == 0 ? t.edges[e].a : t.edges[e].b;
      link.to = direction == 0 ? t.edges[e].b : t.edges[e].a;
      link.latency_s = t.edges[e].latency_s;
      const bool from_host = link.from < n;
      const bool to_host = link.to < n;
      if (from_host && !to_host)
        link.name = t.hosts[at(link.from)] + "-nic-up";
      else if (to_host && !from_host)
        link.name = t.hosts[at(link.to)] + "-nic-down";
      else
        link.name = node_name(t, link.from) + "-to-" + node_name(t, link.to);
      const std::vector<int> sources = spread_hosts(adjacent, n, link.from, link.to);
      const std::vector<int> sinks = spread_hosts(adjacent, n, link.to, link.from);
      const std::size_t flows = std::min(static_cast<std::size_t>(std::max(1, request.max_flows)),
                                         std::max(sources.size(), sinks.size()));
      for (std::size_t f = 0; f < flows; ++f)
        link.probe_flows.push_back({sources[f % sources.size()], sinks[f % sinks.size()]});
      t.links.push_back(link);
    }
  t.routes.assign(at(n), std::vector<std::vector<int>>(at(n)));
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) t.routes[at(a)][at(b)] = tree_path(adjacent, t.edges, a, b);
}

std::vector<std::vector<int>> flow_links(const ProbedTopology& t,
                                         const std::vector<std::pair<int, int>>& flows) {
  std::vector<std::vector<int>> out;
  for (const auto& [src, dst] : flows)
    out.push_back(t.routes[at(src)][at(dst)]);
  return out;
}

double total(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0);
}

/// Step 2's fit: sweeps the links (hosts' first, then by their probe's flows) until no capacity
/// changes; sets each link's bandwidth, bounded flag and predicted_free_Bps.
void fit_capacities(const TopologyProbeRequest& request, ProbedTopology& t,
                    const std::function<void(const std::string&)>& progress) {
  const int n = static_cast<int>(t.hosts.size());
  std::vector<int> order(t.links.size());
  std::iota(order.begin(), order.end(), 0);
  auto rank = [&](int l) {
    const ProbedLink& link = t.links[at(l)];
    const bool host_link = link.from < n || link.to < n;
    return std::make_pair(host_link ? 0 : 1, link.probe_flows.size());
  };
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return rank(x) < rank(y); });
  std::vector<double> capacity(t.links.size(), kInfinity);
  bool settled = false;
  for (t.fit_sweeps = 1; t.fit_sweeps <= kMaxFitSweeps && !settled; ++t.fit_sweeps) {
    settled = true;
    for (int l : order) {
      ProbedLink& link = t.links[at(l)];
      const double before = capacity[at(l)];
      capacity[at(l)] = kInfinity;
      link.predicted_free_Bps = total(max_min_fair(flow_links(t, link.probe_flows), capacity));
      const bool binds =
          link.probed_total_Bps < (1 - request.binding_tolerance) * link.predicted_free_Bps;
      capacity[at(l)] = binds ? link.probed_total_Bps : kInfinity;
      if (capacity[at(l)] != before) settled = false;
    }
  }
  --t.fit_sweeps;
  if (!settled)
    t.warnings.push_back(
        fmt::format("the capacity fit did not settle in {} sweeps: the probes contradict a tree",
                    kMaxFitSweeps));
  // Unbounded links: kUnboundedFactor x the largest total any probe put through them.
  std::vector<double> heaviest(t.links.size(), 0.0);
  for (const ProbedLink& probe : t.links)
    for (int l = 0; l < static_cast<int>(t.links.size()); ++l) {
      double through = 0;
      for (std::size_t f = 0; f < probe.probe_flows.size(); ++f) {
        const std::vector<int>& route =
            t.routes[at(probe.probe_flows[f].first)][at(probe.probe_flows[f].second)];
        if (std::find(route.begin(), route.end(), l) != route.end())
          through += probe.probe_rates_Bps[f];
      }
      heaviest[at(l)] = std::max(heaviest[at(l)], through);
    }
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    t.links[l].bounded = std::isfinite(capacity[l]);
    t.links[l].bandwidth_Bps = t.links[l].bounded ? capacity[l] : kUnboundedFactor * heaviest[l];
  }
  progress(
      fmt::format("capacities: {} of {} directed links limited a probe, settled after {} "
                  "sweep(s)",
                  t.bounded_links(), t.links.size(), t.fit_sweeps));
}

/// Step 2: runs every link's probe, then fits.
void measure_capacities(exec::ProbeNetwork& network, const TopologyProbeRequest& request,
                        ProbedTopology& t,
                        const std::function<void(const std::string&)>& progress) {
  for (ProbedLink& link : t.links) {
    link.probe_rates_Bps =
        network.concurrent_rates(link.probe_flows, request.flow_duration_s, request.flow_warmup_s);
    link.probed_total_Bps = total(link.probe_rates_Bps);
    // Every host of an MPI run sees the same totals, so every one stops here alike.
    if (!(std::isfinite(link.probed_total_Bps) && link.probed_total_Bps >= model::kMinBandwidthBps))
      throw std::runtime_error(fmt::format(
          "topology probe: the {} flow(s) across {} delivered nothing measurable in their "
          "window ({} B/s); lengthen the flows (--flow-seconds)",
          link.probe_flows.size(), link.name, link.probed_total_Bps));
    progress(fmt::format("link {}: {} flows at once, {:.4g} MB/s in all", link.name,
                         link.probe_flows.size(), link.probed_total_Bps / 1e6));
  }
  fit_capacities(request, t, progress);
}

/// A deterministic stream of route pairs to choose the check's from (a 64-bit linear congruential
/// generator, Knuth's MMIX constants; the seed is arbitrary and fixed, so that every MPI rank and
/// every rerun draws the same pairs).
class PairDraw {
 public:
  explicit PairDraw(int hosts) : hosts_(hosts) {}
  std::pair<int, int> route() {
    const int src = next() % hosts_;
    int dst = next() % (hosts_ - 1);
    if (dst >= src) ++dst;
    return {src, dst};
  }

 private:
  int next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state_ >> 33) % 0x7fffffffULL);
  }
  int hosts_;
  unsigned long long state_ = 27;
};

bool drops(double alone, double together) {
  return together < (1 - kSharedDrop) * alone;
}

/// Step 3: pairs of routes, half predicted to share a bottleneck, run alone and at once.
void check_pairs(exec::ProbeNetwork& network, const TopologyProbeRequest& request,
                 ProbedTopology& t, const std::function<void(const std::string&)>& progress) {
  const int n = static_cast<int>(t.hosts.size());
  if (n < 3 || request.check_pairs <= 0) return;
  const auto predicted_shared_wanted = static_cast<std::size_t>((request.check_pairs + 1) / 2);
  const auto predicted_apart_wanted = static_cast<std::size_t>(request.check_pairs / 2);
  std::vector<PairCheck> shared;
  std::vector<PairCheck> apart;
  std::set<std::pair<std::pair<int, int>, std::pair<int, int>>> seen;
  PairDraw draw(n);
  for (int attempt = 0; attempt < kCheckDraws; ++attempt) {
    if (shared.size() >= predicted_shared_wanted && apart.size() >= predicted_apart_wanted) break;
    PairCheck c;
    c.first = draw.route();
    c.second = draw.route();
    if (c.first == c.second ||
        !seen.insert({std::min(c.first, c.second), std::max(c.first, c.second)}).second)
      continue;
    const std::vector<double> alone_first = t.predict_rates({c.first});
    const std::vector<double> alone_second = t.predict_rates({c.second});
    const std::vector<double> together = t.predict_rates({c.first, c.second});
    c.predicted_first_together_Bps = together[0];
    c.predicted_second_together_Bps = together[1];
    c.predicted_shared = drops(alone_first[0], together[0]) || drops(alone_second[0], together[1]);
    std::vector<PairCheck>& bucket = c.predicted_shared ? shared : apart;
    if (bucket.size() < (c.predicted_shared ? predicted_shared_wanted : predicted_apart_wanted))
      bucket.push_back(c);
  }
  std::map<std::pair<int, int>, double> alone;
  auto alone_rate = [&](std::pair<int, int> flow) {
    auto found = alone.find(flow);
    if (found == alone.end())
      found = alone
                  .emplace(flow, network.concurrent_rates({flow}, request.flow_duration_s,
                                                          request.flow_warmup_s)[0])
                  .first;
    return found->second;
  };
  for (std::vector<PairCheck>* bucket : {&shared, &apart})
    for (PairCheck& c : *bucket) {
      c.first_alone_Bps = alone_rate(c.first);
      c.second_alone_Bps = alone_rate(c.second);
      const std::vector<double> together = network.concurrent_rates(
          {c.first, c.second}, request.flow_duration_s, request.flow_warmup_s);
      c.first_together_Bps = together[0];
      c.second_together_Bps = together[1];
      c.measured_shared = drops(c.first_alone_Bps, c.first_together_Bps) ||
                          drops(c.second_alone_Bps, c.second_together_Bps);
      t.checks.push_back(c);
    }
  progress(
      fmt::format("check: {} of {} pairs of routes share a bottleneck or not as the tree "
                  "says ({} predicted to share)",
                  t.agreeing_checks(), t.checks.size(), shared.size()));
  const int agree = t.agreeing_checks();
  if (agree < static_cast<int>(t.checks.size()))
    t.warnings.push_back(
        fmt::format("{} of {} checked pairs of routes disagree with the tree "
                    "about sharing a bottleneck",
                    static_cast<int>(t.checks.size()) - agree, t.checks.size()));
}

}  // namespace

std::vector<ProbedEdge> neighbor_joining(const std::vector<std::vector<double>>& distance) {
  const int n = static_cast<int>(distance.size());
  if (n < 2) throw std::invalid_argument("neighbor_joining: fewer than 2 leaves");
  for (int i = 0; i < n; ++i) {
    if (distance[at(i)].size() != at(n))
      throw std::invalid_argument("neighbor_joining: the distance matrix is not square");
    for (int j = 0; j < n; ++j) {
      const double d = distance[at(i)][at(j)];
      // Symmetric up to rounding (the caller writes both halves from one number).
      if (!std::isfinite(d) ||
          std::abs(d - distance[at(j)][at(i)]) > 1e-12 * std::max(1.0, std::abs(d)))
        throw std::invalid_argument("neighbor_joining: distances must be finite and symmetric");
    }
  }
  const int capacity = 2 * n;
  std::vector<std::vector<double>> d(at(capacity), std::vector<double>(at(capacity), 0.0));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      d[at(i)][at(j)] = distance[at(i)][at(j)];
  std::vector<int> active(at(n));
  std::iota(active.begin(), active.end(), 0);
  int next = n;
  std::vector<ProbedEdge> edges;
  while (active.size() > 2) {
    const double m = static_cast<double>(active.size());
    std::map<int, double> row_sum;
    for (int i : active)
      for (int k : active)
        row_sum[i] += d[at(i)][at(k)];
    int best_i = -1;
    int best_j = -1;
    double best = kInfinity;
    for (std::size_t x = 0; x < active.size(); ++x)
      for (std::size_t y = x + 1; y < active.size(); ++y) {
        const int i = active[x];
        const int j = active[y];
        const double q = (m - 2) * d[at(i)][at(j)] - row_sum[i] - row_sum[j];
        if (q < best) {
          best = q;
          best_i = i;
          best_j = j;
        }
      }
    const int u = next++;
    const double to_i =
        d[at(best_i)][at(best_j)] / 2 + (row_sum[best_i] - row_sum[best_j]) / (2 * (m - 2));
    edges.push_back({best_i, u, to_i});
    edges.push_back({best_j, u, d[at(best_i)][at(best_j)] - to_i});
    for (int k : active)
      if (k != best_i && k != best_j)
        d[at(u)][at(k)] = d[at(k)][at(u)] =
            (d[at(best_i)][at(k)] + d[at(best_j)][at(k)] - d[at(best_i)][at(best_j)]) / 2;
    active.erase(std::remove_if(active.begin(), active.end(),
                                [&](int k) { return k == best_i || k == best_j; }),
                 active.end());
    active.push_back(u);
  }
  edges.push_back({active[0], active[1], d[at(active[0])][at(active[1])]});
  return edges;
}

std::vector<ProbedEdge> contract_short_edges(const std::vector<ProbedEdge>& edges, int hosts,
                                             double threshold_s) {
  int nodes = hosts;
  for (const ProbedEdge& e : edges)
    nodes = std::max({nodes, e.a + 1, e.b + 1});
  std::vector<int> parent(at(nodes));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&parent](int x) {
    while (parent[at(x)] != x)
      x = parent[at(x)] = parent[at(parent[at(x)])];
    return x;
  };
  auto internal_short = [&](const ProbedEdge& e) {
    return e.a >= hosts && e.b >= hosts && !(e.latency_s >= threshold_s);
  };
  for (const ProbedEdge& e : edges)
    if (internal_short(e)) parent[at(find(e.a))] = find(e.b);
  std::map<int, int> renumbered;
  auto label = [&](int node) {
    if (node < hosts) return node;
    const int root = find(node);
    const auto found = renumbered.find(root);
    if (found != renumbered.end()) return found->second;
    const int id = hosts + static_cast<int>(renumbered.size());
    renumbered.emplace(root, id);
    return id;
  };
  std::vector<ProbedEdge> out;
  for (const ProbedEdge& e : edges)
    if (!internal_short(e)) out.push_back({label(e.a), label(e.b), std::max(0.0, e.latency_s)});
  return out;
}

int ProbedTopology::switch_of(int host) const {
  for (const ProbedEdge& e : edges) {
    const int other = e.a == host ? e.b : e.b == host ? e.a : -1;
    if (other >= 0)
      return other >= static_cast<int>(hosts.size()) ? other - static_cast<int>(hosts.size()) : -1;
  }
  return -1;
}

int ProbedTopology::bounded_links() const {
  return static_cast<int>(
      std::count_if(links.begin(), links.end(), [](const ProbedLink& l) { return l.bounded; }));
}

int ProbedTopology::agreeing_checks() const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), [](const PairCheck& c) {
    return c.predicted_shared == c.measured_shared;
  }));
}

double ProbedTopology::route_latency_s(int src, int dst) const {
  double sum = 0;
  for (int l : routes[at(src)][at(dst)])
    sum += links[at(l)].latency_s;
  return sum;
}

std::vector<double> ProbedTopology::predict_rates(
    const std::vector<std::pair<int, int>>& flows) const {
  std::vector<double> capacity;
  for (const ProbedLink& link : links)
    capacity.push_back(link.bandwidth_Bps);
  return max_min_fair(flow_links(*this, flows), capacity);
}

ProbedTopology probe_topology(exec::ProbeNetwork& network, const std::vector<std::string>& hosts,
                              const TopologyProbeRequest& request,
                              const std::function<void(const std::string&)>& progress) {
  if (hosts.size() < 2) throw std::invalid_argument("probe_topology: at least 2 hosts are needed");
  if (static_cast<int>(hosts.size()) != network.host_count())
    throw std::invalid_argument("probe_topology: the names do not match the network's hosts");
  const double started = now_s();
  ProbedTopology t;
  t.hosts = hosts;
  t.request = request;
  t.method = network.method();
  t.date = model::utc_now_iso8601();
  t.commit = model::tauplan_git_commit();
  measure_latencies(network, request, t, progress);
  build_tree(request, t, progress);
  lay_out_links(request, t);
  measure_capacities(network, request, t, progress);
  check_pairs(network, request, t, progress);
  t.seconds = now_s() - started;
  return t;
}

nlohmann::json to_json(const ProbedTopology& t) {
  nlohmann::json links = nlohmann::json::array();
  for (const ProbedLink& link : t.links) {
    nlohmann::json flows = nlohmann::json::array();
    for (std::size_t f = 0; f < link.probe_flows.size(); ++f)
      flows.push_back(
          {{"src", t.hosts[at(link.probe_flows[f].first)]},
           {"dst", t.hosts[at(link.probe_flows[f].second)]},
           {"rate_Bps", f < link.probe_rates_Bps.size() ? link.probe_rates_Bps[f] : 0.0}});
    links.push_back({{"name", link.name},
                     {"from", node_name(t, link.from)},
                     {"to", node_name(t, link.to)},
                     {"latency_s", link.latency_s},
                     {"bandwidth_Bps", link.bandwidth_Bps},
                     {"bounded", link.bounded},
                     {"probed_total_Bps", link.probed_total_Bps},
                     {"predicted_without_it_Bps", link.predicted_free_Bps},
                     {"probe", flows}});
  }
  nlohmann::json checks = nlohmann::json::array();
  for (const PairCheck& c : t.checks)
    checks.push_back(
        {{"first", t.hosts[at(c.first.first)] + " -> " + t.hosts[at(c.first.second)]},
         {"second", t.hosts[at(c.second.first)] + " -> " + t.hosts[at(c.second.second)]},
         {"first_alone_Bps", c.first_alone_Bps},
         {"second_alone_Bps", c.second_alone_Bps},
         {"first_together_Bps", c.first_together_Bps},
         {"second_together_Bps", c.second_together_Bps},
         {"predicted_first_together_Bps", c.predicted_first_together_Bps},
         {"predicted_second_together_Bps", c.predicted_second_together_Bps},
         {"predicted_shared", c.predicted_shared},
         {"measured_shared", c.measured_shared}});
  nlohmann::json one_way = nlohmann::json::array();
  for (const auto& row : t.one_way_s)
    one_way.push_back(row);
  const TopologyProbeRequest& r = t.request;
  return {{"hosts", t.hosts},
          {"switches", t.nodes - static_cast<int>(t.hosts.size())},
          {"date", t.date},
          {"commit", t.commit},
          {"method", t.method},
          {"seconds", t.seconds},
          {"request",
           {{"pings", r.pings},
            {"flow_duration_s", r.flow_duration_s},
            {"flow_warmup_s", r.flow_warmup_s},
            {"max_flows", r.max_flows},
            {"binding_tolerance", r.binding_tolerance},
            {"contraction_noise", r.contraction_noise},
            {"min_contraction_s", r.min_contraction_s},
            {"check_pairs", r.check_pairs}}},
          {"one_way_latency_s", one_way},
          {"latency_noise_s", t.latency_noise_s},
          {"contraction_s", t.contraction_s},
          {"fit_sweeps", t.fit_sweeps},
          {"links", links},
          {"checks", checks},
          {"warnings", t.warnings}};
}

namespace {

std::string number(double value) {
  return fmt::format("{:.9g}", value);
}

std::string prop(const std::string& indent, const std::string& id, const std::string& value) {
  return indent + "<prop id=\"" + xml::escape(id) + "\" value=\"" + xml::escape(value) + "\"/>\n";
}

}  // namespace

std::string probed_platform_xml(const ProbedTopology& t, const std::vector<SpecHost>& hosts,
                                const NetworkCalibration& messages, const std::string& hosts_from) {
  const double factor = messages.mpi_latency_factor > 0 ? messages.mpi_latency_factor : 1.0;
  const int bounded = t.bounded_links();
  std::string out =
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
      "\"https://simgrid.org/simgrid.dtd\">\n<!--\n";
  out += comment_safe(fmt::format(
      " Probed by `tauplan calibrate --network` on {} (tauplan commit {}), in {:.0f} s: no "
      "platform "
      "file was read.\n Probes: {}.\n The network as a tree of {} switch(es) found from the "
      "round trips of every pair (neighbour joining, internal edges under {:.3g} ms merged); each "
      "direction of each edge a link, its capacity from concurrent flows that all cross it ({} of "
      "{} limited a probe; the others are written at {:g}x the largest total a probe put through "
      "them, never binding). Check: {} pair(s) of routes run alone and at once.\n",
      t.date, t.commit, t.seconds, t.method, t.nodes - static_cast<int>(t.hosts.size()),
      1e3 * t.contraction_s, bounded, t.links.size(), kUnboundedFactor, t.checks.size()));
  if (messages.mpi_latency_factor > 0)
    out += comment_safe(fmt::format(" Latencies are the probed ones x {:.6g}: {}.\n", factor,
                                    messages.message_method));
  out += comment_safe(" Hosts (names, roles, nodes, speeds, props): " + hosts_from + ".\n");
  if (!messages.compute.empty())
    out += comment_safe(" Compute: " + messages.compute_method + ".\n");
  out += "-->\n<platform version=\"4.1\">\n  <zone id=\"world\" routing=\"Full\">\n";
  const std::string zone = "    ";
  out += prop(zone, "calibrated_by", "tauplan calibrate --network");
  out += prop(zone, "date", t.date);
  out += prop(zone, "commit", t.commit);
  out += prop(zone, "method", t.method);
  out += prop(zone, "probe_seconds", number(t.seconds));
  if (messages.mpi_latency_factor > 0) out += prop(zone, "mpi_latency_factor", number(factor));
  if (messages.eager_limit_bytes >= 0) {
    out += prop(zone, "message_protocol", "rendezvous");
    out += prop(zone, "eager_limit_bytes", number(messages.eager_limit_bytes));
  }
  if (messages.packet_bytes > 0) out += prop(zone, "packet_bytes", number(messages.packet_bytes));
  for (const std::string& name : t.hosts) {
    const auto host = std::find_if(hosts.begin(), hosts.end(),
                                   [&name](const SpecHost& h) { return h.name == name; });
    if (host == hosts.end())
      throw std::invalid_argument("probed_platform_xml: no description of host " + name);
    const auto measured = messages.compute.find(name);
    const bool has_compute = measured != messages.compute.end();
    out += "    <host id=\"" + xml::escape(name) + "\" speed=\"" +
           number(has_compute ? measured->second.speed_flops : host->speed_flops) + "f\">\n";
    std::map<std::string, std::string> props = host->properties;
    if (has_compute)
      for (const auto& [id, value] : measured->second.props)
        props[id] = value;
    props["node"] = host->node;
    props["role"] = host->role;
    for (const auto& [id, value] : props)
      out += prop("      ", id, value);
    out += "    </host>\n";
  }
  for (const ProbedLink& link : t.links) {
    if (!(link.bandwidth_Bps >= model::kMinBandwidthBps &&
          link.bandwidth_Bps <= model::kMaxBandwidthBps))
      throw std::invalid_argument(
          fmt::format("probed_platform_xml: link {} at {} B/s", link.name, link.bandwidth_Bps));
    out += "    <link id=\"" + xml::escape(link.name) + "\" bandwidth=\"" +
           number(link.bandwidth_Bps) + "Bps\" latency=\"" + number(factor * link.latency_s) +
           "s\" sharing_policy=\"SHARED\">\n";
    out += prop("      ", "probed_latency_s", number(link.latency_s));
    out += prop("      ", "probed_total_Bps", number(link.probed_total_Bps));
    out += prop("      ", "bandwidth_from",
                link.bounded ? "limited its probe: the total of its flows"
                             : fmt::format("lower bound: never limited a probe (written at "
                                           "{:g}x the largest total through it)",
                                           kUnboundedFactor));
    out += "    </link>\n";
  }
  for (std::size_t a = 0; a < t.hosts.size(); ++a)
    for (std::size_t b = 0; b < t.hosts.size(); ++b) {
      if (a == b) continue;
      out += "    <route src=\"" + xml::escape(t.hosts[a]) + "\" dst=\"" + xml::escape(t.hosts[b]) +
             "\" symmetrical=\"NO\">";
      for (int l : t.routes[a][b])
        out += "<link_ctn id=\"" + xml::escape(t.links[at(l)].name) + "\"/>";
      out += "</route>\n";
    }
  out += "  </zone>\n</platform>\n";
  return out;
}

}  // namespace tauplan::testbed
