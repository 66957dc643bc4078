// spec.cpp: a platform's testbed description, its checks, max-min fair shares and its JSON.
//
// What it leaves out: the system (namespaces, the fabric); see spec.hpp.
#include "exec/testbed/spec.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "model/base/error.hpp"

namespace tauplan::testbed {

namespace {

std::string num(double v) {
  return fmt::format("{:.6g}", v);
}

std::string role_name(model::HostRole role) {
  return role == model::HostRole::Server ? "server" : "worker";
}

Sharing to_sharing(model::LinkSharing sharing) {
  switch (sharing) {
    case model::LinkSharing::SplitDuplex:
      return Sharing::SplitDuplex;
    case model::LinkSharing::FatPipe:
      return Sharing::FatPipe;
    case model::LinkSharing::Shared:
      break;
  }
  return Sharing::Shared;
}

Sharing sharing_from_name(const std::string& name) {
  if (name == "splitduplex") return Sharing::SplitDuplex;
  if (name == "fatpipe") return Sharing::FatPipe;
  if (name == "shared") return Sharing::Shared;
  throw std::invalid_argument("unknown link sharing " + name);
}

}  // namespace

std::string sharing_name(Sharing sharing) {
  switch (sharing) {
    case Sharing::SplitDuplex:
      return "splitduplex";
    case Sharing::FatPipe:
      return "fatpipe";
    case Sharing::Shared:
      break;
  }
  return "shared";
}

const SpecRoute& Spec::route(int src, int dst) const {
  const int n = static_cast<int>(hosts.size());
  // Routes are src-major over distinct pairs: src * (n - 1) + (dst < src ? dst : dst - 1).
  const int index = src * (n - 1) + (dst < src ? dst : dst - 1);
  return routes.at(static_cast<std::size_t>(index));
}

int Spec::find_host(const std::string& name) const {
  for (std::size_t i = 0; i < hosts.size(); ++i)
    if (hosts[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string Spec::control_mgmt_address() const {
  return "10.211.1.254";
}

void check_prefix(const std::string& prefix, const std::string& origin) {
  bool ok = prefix.size() >= 3 && prefix.size() <= 6 && prefix.compare(0, 2, "tp") == 0 &&
            prefix.back() == '-';
  for (std::size_t i = 2; ok && i + 1 < prefix.size(); ++i) {
    const char c = prefix[i];
    ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  }
  if (!ok)
    throw InputError(origin, "--prefix",
                     "\"tp\", up to 3 lower-case letters or digits, then '-' (e.g. tp-)",
                     "\"" + prefix + "\"");
}

std::vector<int> select_hosts(const model::Platform& platform,
                              const std::vector<std::string>& requested) {
  std::vector<int> selected;
  if (requested.empty()) {
    selected = platform.worker_hosts();
    for (int s : platform.server_hosts())
      selected.push_back(s);
    return selected;
  }
  std::set<std::string> seen;
  for (const std::string& name : requested) {
    const int index = platform.find_host(name);
    if (index < 0) {
      std::string known;
      for (std::size_t i = 0; i < platform.hosts.size() && i < 6; ++i)
        known += (i ? ", " : "") + platform.hosts[i].name;
      if (platform.hosts.size() > 6) known += ", ...";
      throw InputError(platform.source_file, "--hosts",
                       "host names of the platform (" + known + ")", name);
    }
    if (!seen.insert(name).second)
      throw InputError(platform.source_file, "--hosts", "each host once", name + " twice");
    selected.push_back(index);
  }
  return selected;
}

int choose_mtu(double slowest_rate_Bps) {
  for (int mtu : {9000, 4500, 3000})
    if (mtu <= slowest_rate_Bps * kMaxSerialisation_s) return mtu;
  return 1500;
}

namespace {

/// The routes between the selected hosts and the platform links they cross.
struct SelectedRoutes {
  std::map<int, int> link_index;  // platform link -> spec link
  std::vector<model::Link> used;  // in first-use order
  std::vector<std::pair<int, int>> pairs;
  std::vector<const model::Route*> platform_routes;
};

/// Checks the options that need no platform: prefix, queue and MTU.
void check_options(const Options& options, const std::string& file) {
  check_prefix(options.prefix, file);
  if (!(options.queue_s >= 0) || !std::isfinite(options.queue_s))
    throw InputError(file, "--queue", "seconds >= 0", num(options.queue_s));
  if (options.mtu != 0 && !(options.mtu >= 576 && options.mtu <= 9000))
    throw InputError(file, "--mtu", "an MTU from 576 to 9000 bytes (or 0: chosen by route)",
                     std::to_string(options.mtu));
}

/// The selected hosts, at least 2 and at most the limit.
std::vector<int> checked_hosts(const model::Platform& platform, const Options& options) {
  const std::string& file = platform.source_file;
  const std::vector<int> selected = select_hosts(platform, options.hosts);
  const int n = static_cast<int>(selected.size());
  if (n < 2)
    throw InputError(file, options.hosts.empty() ? "hosts" : "--hosts",
                     "at least 2 hosts for a testbed", std::to_string(n));
  if (n > options.limits.max_hosts)
    throw InputError(file, "--hosts",
                     "at most " + std::to_string(options.limits.max_hosts) +
                         " hosts (the fabric forwards for all of them on one core)",
                     std::to_string(n));
  return selected;
}

/// Every ordered pair's platform route, each checked against the route-length limit.
SelectedRoutes select_routes(const model::Platform& platform, const std::vector<int>& selected,
                             const Limits& limits) {
  const std::string& file = platform.source_file;
  const int n = static_cast<int>(selected.size());
  SelectedRoutes s;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const model::Route& route = platform.route(selected[a], selected[b]);
      const std::string route_key =
          "route " + platform.hosts[selected[a]].name + " -> " + platform.hosts[selected[b]].name;
      if (route.links.empty())
        throw InputError(file, route_key, "a route of at least one link", "no link");
      if (static_cast<int>(route.links.size()) > limits.max_route_links)
        throw InputError(file, route_key,
                         "a route of at most " + std::to_string(limits.max_route_links) + " links",
                         std::to_string(route.links.size()) + " links");
      for (int l : route.links)
        if (s.link_index.emplace(l, static_cast<int>(s.used.size())).second)
          s.used.push_back(platform.links.at(static_cast<std::size_t>(l)));
      s.pairs.emplace_back(a, b);
      s.platform_routes.push_back(&route);
    }
  return s;
}

/// Sets the spec's scale and MTU, and the reasons for each.
void choose_scale_and_mtu(const std::vector<model::Link>& used, const Options& options,
                          const std::string& file, Spec& spec) {
  const Limits& limits = options.limits;
  // Scale and MTU: the MTU depends on the slowest link at the scale, the fastest rate the
  // fabric shapes on the MTU (a packet rate), and the default scale on that rate; the MTU only
  // shrinks as the scale grows, so a few rounds settle both.
  double fastest = 0;
  double slowest = std::numeric_limits<double>::infinity();
  for (const model::Link& link : used) {
    if (!(link.bandwidth_Bps > 0) || !std::isfinite(link.bandwidth_Bps))
      throw InputError(file, "link " + link.name, "a positive, finite bandwidth",
                       num(link.bandwidth_Bps));
    fastest = std::max(fastest, link.bandwidth_Bps);
    slowest = std::min(slowest, link.bandwidth_Bps);
  }
  if (options.scale != 0 && (!(options.scale > 0) || !std::isfinite(options.scale)))
    throw InputError(file, "--scale", "a positive number", num(options.scale));
  spec.scale = options.scale != 0 ? options.scale : 1.0;
  for (int round = 0; round < 8; ++round) {
    spec.mtu = options.mtu != 0 ? options.mtu : choose_mtu(slowest / spec.scale);
    if (options.scale != 0) break;
    const double needed = std::max(1.0, fastest / limits.max_rate_Bps(spec.mtu));
    if (needed <= spec.scale * (1 + 1e-12)) break;
    spec.scale = needed;
  }
  spec.mtu_reason = options.mtu != 0
                        ? "--mtu " + std::to_string(options.mtu)
                        : "default: the largest of 9000, 4500, 3000, 1500 bytes that the slowest "
                          "link (" +
                              num(slowest / spec.scale) + " B/s) serialises in 1 ms";
  spec.scale_reason = options.scale != 0 ? "--scale " + num(options.scale)
                      : spec.scale == 1.0
                          ? "default: every link within the " + num(limits.max_rate_Bps(spec.mtu)) +
                                " B/s this host shapes at MTU " + std::to_string(spec.mtu)
                          : "default: the fastest link over the " +
                                num(limits.max_rate_Bps(spec.mtu)) +
                                " B/s this host shapes at MTU " + std::to_string(spec.mtu);
}

/// The testbed hosts: names, roles, namespaces and addresses in rank order.
void add_hosts(const model::Platform& platform, const std::vector<int>& selected,
               const Options& options, Spec& spec) {
  const int n = static_cast<int>(selected.size());
  for (int i = 0; i < n; ++i) {
    const model::Host& host = platform.hosts[static_cast<std::size_t>(selected[i])];
    SpecHost h;
    h.name = host.name;
    h.node = host.node;
    h.role = role_name(host.role);
    h.netns = options.prefix + "r" + std::to_string(i);
    h.address = "10.211.0." + std::to_string(i + 1);
    h.mgmt_address = "10.211.1." + std::to_string(i + 1);
    h.speed_flops = host.speed_flops;
    h.properties = host.properties;
    spec.hosts.push_back(h);
  }
}

/// The testbed links at the scale, each checked against the rates this host shapes.
void add_links(const std::vector<model::Link>& used, const Limits& limits, const std::string& file,
               Spec& spec) {
  for (const model::Link& link : used) {
    SpecLink l;
    l.name = link.name;
    l.platform_bandwidth_Bps = link.bandwidth_Bps;
    l.platform_latency_s = link.latency_s;
    l.sharing = to_sharing(link.sharing);
    const std::string key = "link " + link.name;
    if (!(link.latency_s >= 0) || !std::isfinite(link.latency_s))
      throw InputError(file, key, "a latency >= 0", num(link.latency_s));
    l.bandwidth_Bps = link.bandwidth_Bps / spec.scale;
    l.latency_s = link.latency_s * spec.scale;
    const double max_rate = limits.max_rate_Bps(spec.mtu);
    if (l.bandwidth_Bps > max_rate * (1 + 1e-12))
      throw InputError(file, key,
                       "a bandwidth this host shapes accurately: at most " + num(max_rate) +
                           " B/s at MTU " + std::to_string(spec.mtu) +
                           " after scaling (use --scale " + num(link.bandwidth_Bps / max_rate) +
                           " or more)",
                       num(link.bandwidth_Bps) + " B/s / scale " + num(spec.scale) + " = " +
                           num(l.bandwidth_Bps) + " B/s");
    if (l.bandwidth_Bps < limits.min_rate_Bps * (1 - 1e-12))
      throw InputError(file, key,
                       "a bandwidth of at least " + num(limits.min_rate_Bps) +
                           " B/s after scaling (use a smaller --scale)",
                       num(link.bandwidth_Bps) + " B/s / scale " + num(spec.scale) + " = " +
                           num(l.bandwidth_Bps) + " B/s");
    spec.links.push_back(l);
  }
  // Each link's wire rate: payload rate x mtu / (mtu - headers).
  const double payload_share =
      static_cast<double>(spec.mtu - kTcpIpHeaderBytes) / static_cast<double>(spec.mtu);
  for (SpecLink& l : spec.links)
    l.wire_rate_Bps = l.bandwidth_Bps / payload_share;
}

/// The testbed routes over the spec's links, each checked against the latency limit.
void add_routes(const SelectedRoutes& selected, const Limits& limits, const std::string& file,
                Spec& spec) {
  for (std::size_t r = 0; r < selected.pairs.size(); ++r) {
    const model::Route& platform_route = *selected.platform_routes[r];
    SpecRoute route;
    route.src = selected.pairs[r].first;
    route.dst = selected.pairs[r].second;
    route.platform_latency_s = platform_route.latency_s;
    route.platform_bandwidth_Bps = platform_route.bandwidth_Bps;
    route.bandwidth_Bps = std::numeric_limits<double>::infinity();
    for (int l : platform_route.links) {
      const int s = selected.link_index.at(l);
      route.links.push_back(s);
      route.latency_s += spec.links[static_cast<std::size_t>(s)].latency_s;
      route.bandwidth_Bps =
          std::min(route.bandwidth_Bps, spec.links[static_cast<std::size_t>(s)].bandwidth_Bps);
    }
    if (route.latency_s > limits.max_route_latency_s)
      throw InputError(
          file,
          "route " + spec.hosts[static_cast<std::size_t>(route.src)].name + " -> " +
              spec.hosts[static_cast<std::size_t>(route.dst)].name,
          "a latency of at most " + num(limits.max_route_latency_s) + " s after scaling",
          num(route.platform_latency_s) + " s x scale " + num(spec.scale) + " = " +
              num(route.latency_s) + " s");
    spec.routes.push_back(route);
  }
}

/// Sizes each link's queue: a bandwidth-delay product of its longest round trip, 16 packets
/// and queue_s of its rate, whichever is largest.
void size_queues(double queue_s, Spec& spec) {
  std::vector<double> longest_round_trip(spec.links.size(), 0.0);
  for (const SpecRoute& route : spec.routes) {
    const double round_trip = route.latency_s + spec.route(route.dst, route.src).latency_s;
    for (int l : route.links)
      longest_round_trip[static_cast<std::size_t>(l)] =
          std::max(longest_round_trip[static_cast<std::size_t>(l)], round_trip);
  }
  for (std::size_t l = 0; l < spec.links.size(); ++l) {
    SpecLink& link = spec.links[l];
    link.queue_bytes = std::max({16.0 * spec.mtu, link.wire_rate_Bps * longest_round_trip[l],
                                 link.wire_rate_Bps * queue_s});
  }
}

}  // namespace

Spec make_spec(const model::Platform& platform, const Options& options) {
  const std::string& file = platform.source_file;
  check_options(options, file);
  const std::vector<int> selected = checked_hosts(platform, options);
  const SelectedRoutes routes = select_routes(platform, selected, options.limits);

  Spec spec;
  spec.prefix = options.prefix;
  spec.platform_file = file;
  spec.platform_hash = platform.source_hash;
  spec.limits = options.limits;
  choose_scale_and_mtu(routes.used, options, file, spec);
  add_hosts(platform, selected, options, spec);
  add_links(routes.used, options.limits, file, spec);
  add_routes(routes, options.limits, file, spec);
  size_queues(options.queue_s, spec);
  return spec;
}

std::vector<double> max_min_rates(const Spec& spec, const std::vector<std::pair<int, int>>& flows) {
  const std::size_t nflows = flows.size();
  std::vector<double> rate(nflows, 0.0);
  std::vector<bool> frozen(nflows, false);
  // Resources: a non-fat link is one resource; a fat pipe is one resource per flow.
  std::vector<std::vector<int>> uses(nflows);  // resource ids per flow
  std::vector<double> capacity;
  std::map<int, int> link_resource;
  for (std::size_t f = 0; f < nflows; ++f) {
    const SpecRoute& route = spec.route(flows[f].first, flows[f].second);
    for (int l : route.links) {
      const SpecLink& link = spec.links[static_cast<std::size_t>(l)];
      if (link.sharing == Sharing::FatPipe) {
        uses[f].push_back(static_cast<int>(capacity.size()));
        capacity.push_back(link.bandwidth_Bps);
        continue;
      }
      auto it = link_resource.find(l);
      if (it == link_resource.end()) {
        it = link_resource.emplace(l, static_cast<int>(capacity.size())).first;
        capacity.push_back(link.bandwidth_Bps);
      }
      uses[f].push_back(it->second);
    }
  }
  return max_min_fair(uses, capacity);
}

std::vector<double> max_min_fair(const std::vector<std::vector<int>>& flow_links,
                                 const std::vector<double>& capacities) {
  const std::size_t flows = flow_links.size();
  std::vector<double> rate(flows, 0.0);
  std::vector<bool> frozen(flows, false);
  for (double c : capacities)
    if (std::isnan(c) || c < 0)
      throw std::invalid_argument("max_min_fair: a capacity is negative or NaN");
  std::vector<double> left = capacities;
  for (std::size_t f = 0; f < flows; ++f)
    if (flow_links[f].empty()) {
      rate[f] = std::numeric_limits<double>::infinity();
      frozen[f] = true;
    }
  for (;;) {
    // The link that fills first as every unfrozen flow grows by the same amount.
    double step = std::numeric_limits<double>::infinity();
    int tightest = -1;
    for (std::size_t l = 0; l < capacities.size(); ++l) {
      int crossing = 0;
      for (std::size_t f = 0; f < flows; ++f)
        if (!frozen[f] && std::find(flow_links[f].begin(), flow_links[f].end(),
                                    static_cast<int>(l)) != flow_links[f].end())
          ++crossing;
      if (crossing > 0 && left[l] / crossing < step) {
        step = std::max(0.0, left[l] / crossing);  // rounding may leave a filled link at -1e-16
        tightest = static_cast<int>(l);
      }
    }
    if (tightest < 0 || !std::isfinite(step)) {
      for (std::size_t f = 0; f < flows; ++f)
        if (!frozen[f]) rate[f] = std::numeric_limits<double>::infinity();
      return rate;
    }
    for (std::size_t f = 0; f < flows; ++f) {
      if (frozen[f]) continue;
      rate[f] += step;
      for (int l : flow_links[f])
        left[static_cast<std::size_t>(l)] -= step;
    }
    for (std::size_t f = 0; f < flows; ++f)
      if (!frozen[f] &&
          std::find(flow_links[f].begin(), flow_links[f].end(), tightest) != flow_links[f].end())
        frozen[f] = true;
    left[static_cast<std::size_t>(tightest)] = 0;
    if (std::all_of(frozen.begin(), frozen.end(), [](bool b) { return b; })) return rate;
  }
}

nlohmann::json to_json(const Spec& spec) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const SpecHost& h : spec.hosts)
    hosts.push_back({{"name", h.name},
                     {"node", h.node},
                     {"role", h.role},
                     {"netns", h.netns},
                     {"address", h.address},
                     {"mgmt_address", h.mgmt_address},
                     {"speed_flops", h.speed_flops},
                     {"properties", h.properties}});
  nlohmann::json links = nlohmann::json::array();
  for (const SpecLink& l : spec.links)
    links.push_back({{"name", l.name},
                     {"platform_bandwidth_Bps", l.platform_bandwidth_Bps},
                     {"platform_latency_s", l.platform_latency_s},
                     {"sharing", sharing_name(l.sharing)},
                     {"bandwidth_Bps", l.bandwidth_Bps},
                     {"latency_s", l.latency_s},
                     {"wire_rate_Bps", l.wire_rate_Bps},
                     {"queue_bytes", l.queue_bytes}});
  nlohmann::json routes = nlohmann::json::array();
  for (const SpecRoute& r : spec.routes)
    routes.push_back({{"src", spec.hosts[static_cast<std::size_t>(r.src)].name},
                      {"dst", spec.hosts[static_cast<std::size_t>(r.dst)].name},
                      {"links", r.links},
                      {"latency_s", r.latency_s},
                      {"bandwidth_Bps", r.bandwidth_Bps},
                      {"platform_latency_s", r.platform_latency_s},
                      {"platform_bandwidth_Bps", r.platform_bandwidth_Bps}});
  return {{"prefix", spec.prefix},
          {"platform_file", spec.platform_file},
          {"platform_hash", spec.platform_hash},
          {"scale", spec.scale},
          {"scale_reason", spec.scale_reason},
          {"mtu", spec.mtu},
          {"mtu_reason", spec.mtu_reason},
          {"limits",
           {{"max_packet_rate", spec.limits.max_packet_rate},
            {"min_rate_Bps", spec.limits.min_rate_Bps},
            {"max_route_links", spec.limits.max_route_links},
            {"max_hosts", spec.limits.max_hosts},
            {"max_route_latency_s", spec.limits.max_route_latency_s}}},
          {"emulated_subnet", kEmulatedSubnet},
          {"mgmt_subnet", kMgmtSubnet},
          {"control_netns", spec.control_netns()},
          {"hosts", hosts},
          {"links", links},
          {"routes", routes}};
}

Spec spec_from_json(const nlohmann::json& j) {
  Spec spec;
  spec.prefix = j.at("prefix").get<std::string>();
  spec.platform_file = j.at("platform_file").get<std::string>();
  spec.platform_hash = j.at("platform_hash").get<std::string>();
  spec.scale = j.at("scale").get<double>();
  spec.scale_reason = j.at("scale_reason").get<std::string>();
  spec.mtu = j.at("mtu").get<int>();
  spec.mtu_reason = j.at("mtu_reason").get<std::string>();
  const nlohmann::json& limits = j.at("limits");
  spec.limits.max_packet_rate = limits.at("max_packet_rate").get<double>();
  spec.limits.min_rate_Bps = limits.at("min_rate_Bps").get<double>();
  spec.limits.max_route_links = limits.at("max_route_links").get<int>();
  spec.limits.max_hosts = limits.at("max_hosts").get<int>();
  spec.limits.max_route_latency_s = limits.at("max_route_latency_s").get<double>();
  for (const nlohmann::json& h : j.at("hosts")) {
    SpecHost host;
    host.name = h.at("name").get<std::string>();
    host.node = h.at("node").get<std::string>();
    host.role = h.at("role").get<std::string>();
    host.netns = h.at("netns").get<std::string>();
    host.address = h.at("address").get<std::string>();
    host.mgmt_address = h.at("mgmt_address").get<std::string>();
    host.speed_flops = h.at("speed_flops").get<double>();
    host.properties = h.at("properties").get<std::map<std::string, std::string>>();
    spec.hosts.push_back(host);
  }
  for (const nlohmann::json& l : j.at("links")) {
    SpecLink link;
    link.name = l.at("name").get<std::string>();
    link.platform_bandwidth_Bps = l.at("platform_bandwidth_Bps").get<double>();
    link.platform_latency_s = l.at("platform_latency_s").get<double>();
    link.sharing = sharing_from_name(l.at("sharing").get<std::string>());
    link.bandwidth_Bps = l.at("bandwidth_Bps").get<double>();
    link.latency_s = l.at("latency_s").get<double>();
    link.wire_rate_Bps = l.at("wire_rate_Bps").get<double>();
    link.queue_bytes = l.at("queue_bytes").get<double>();
    spec.links.push_back(link);
  }
  for (const nlohmann::json& r : j.at("routes")) {
    SpecRoute route;
    route.src = spec.find_host(r.at("src").get<std::string>());
    route.dst = spec.find_host(r.at("dst").get<std::string>());
    route.links = r.at("links").get<std::vector<int>>();
    route.latency_s = r.at("latency_s").get<double>();
    route.bandwidth_Bps = r.at("bandwidth_Bps").get<double>();
    route.platform_latency_s = r.at("platform_latency_s").get<double>();
    route.platform_bandwidth_Bps = r.at("platform_bandwidth_Bps").get<double>();
    for (int l : route.links)
      if (l < 0 || l >= static_cast<int>(spec.links.size()))
        throw std::invalid_argument("route link index out of range");
    if (route.src < 0 || route.dst < 0) throw std::invalid_argument("route host unknown");
    spec.routes.push_back(route);
  }
  const std::size_t n = spec.hosts.size();
  if (n < 2 || spec.routes.size() != n * (n - 1))
    throw std::invalid_argument("routes are not every ordered pair");
  return spec;
}

}  // namespace tauplan::testbed
