// platform.cpp: host lookup, natural ordering, memoised routes and the crossbar builder.
#include "model/inputs/platform.hpp"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace tauplan::model {

CrossbarRoutes::CrossbarRoutes(std::vector<Link> links, std::vector<int> up_links,
                               std::vector<int> down_links)
    : links_(std::move(links)), up_links_(std::move(up_links)), down_links_(std::move(down_links)) {
  assert(up_links_.size() == down_links_.size());
}

Route CrossbarRoutes::route(int src_host, int dst_host) const {
  Route route;
  if (src_host == dst_host) {
    route.bandwidth_Bps = std::numeric_limits<double>::infinity();
    return route;
  }
  route.links = {up_links_.at(static_cast<size_t>(src_host)),
                 down_links_.at(static_cast<size_t>(dst_host))};
  total_route(route, links_);
  return route;
}

int Platform::find_host(const std::string& name) const {
  for (size_t i = 0; i < hosts.size(); ++i)
    if (hosts[i].name == name) return static_cast<int>(i);
  return -1;
}

namespace {
std::vector<int> hosts_with_role(const Platform& platform, HostRole role) {
  std::vector<int> out;
  for (size_t i = 0; i < platform.hosts.size(); ++i)
    if (platform.hosts[i].role == role) out.push_back(static_cast<int>(i));
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    return natural_less(platform.hosts[static_cast<size_t>(a)].name,
                        platform.hosts[static_cast<size_t>(b)].name);
  });
  return out;
}
}  // namespace

std::vector<int> Platform::worker_hosts() const {
  return hosts_with_role(*this, HostRole::Worker);
}
std::vector<int> Platform::server_hosts() const {
  return hosts_with_role(*this, HostRole::Server);
}

const Route& Platform::route(int src_host, int dst_host) const {
  assert(routes && "platform has no route oracle");
  const long long key = static_cast<long long>(src_host) * (1LL << 32) + dst_host;
  auto it = route_cache_.find(key);
  if (it != route_cache_.end()) return it->second;
  return route_cache_.emplace(key, routes->route(src_host, dst_host)).first->second;
}

Platform make_crossbar_platform(const std::vector<double>& speeds_flops, double link_bandwidth_Bps,
                                double link_latency_s, double gpu_memory_bytes,
                                const std::vector<HostRole>& roles) {
  Platform platform;
  platform.source_file = "<built-in crossbar>";
  std::vector<int> up, down;
  for (size_t i = 0; i < speeds_flops.size(); ++i) {
    Host host;
    host.name = "h" + std::to_string(i);
    host.speed_flops = speeds_flops[i];
    host.gpu_memory_bytes = gpu_memory_bytes;
    host.node = "n" + std::to_string(i);
    if (i < roles.size()) host.role = roles[i];
    platform.hosts.push_back(host);
    for (const char* direction : {"_UP", "_DOWN"}) {
      Link link;
      link.name = host.name + "_link" + direction;
      link.bandwidth_Bps = link_bandwidth_Bps;
      link.latency_s = link_latency_s;
      link.sharing = LinkSharing::SplitDuplex;
      (direction[1] == 'U' ? up : down).push_back(static_cast<int>(platform.links.size()));
      platform.links.push_back(link);
    }
  }
  platform.routes = std::make_shared<CrossbarRoutes>(platform.links, up, down);
  platform.source_hash = fnv1a_hex(platform.source_file);
  return platform;
}

bool parse_prop_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  const double parsed = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(parsed)) return false;
  value = parsed;
  return true;
}

void total_route(Route& route, const std::vector<Link>& links) {
  route.latency_s = 0;
  route.bandwidth_Bps = std::numeric_limits<double>::infinity();
  ForwardingPerByte forwarding;
  for (int link : route.links) {
    const Link& l = links.at(static_cast<size_t>(link));
    route.latency_s += l.latency_s;
    route.bandwidth_Bps = std::min(route.bandwidth_Bps, l.bandwidth_Bps);
    forwarding.add_link(l.bandwidth_Bps);
  }
  route.forwarding_s_per_byte = forwarding.s_per_byte();
}

const std::vector<PlatformProperty>& platform_properties() {
  static const std::vector<PlatformProperty> properties = {
      {"workers", "gpu_model", "a model of model/catalog/gpus.yaml"},
      {"workers", "gpu_memory_bytes", "GPU memory in bytes (default: the catalog's)"},
      {"workers", "precision",
       "fp32, fp16, bf16 or fp64: which catalog peak the speed is based on"},
      {"workers", "efficiency", "the fraction, so that speed == peak[precision] x efficiency"},
      {"all hosts", "node", "the machine the host is in; hosts of one node share its NIC"},
      {"all hosts", "role", "worker, or server (a parameter server or SparkNet driver)"},
      {"workers", "step_overhead_s", "fixed seconds of every step on this host (over the job's)"},
      {"workers", "pass_overhead_s",
       "seconds of every micro-batch's forward and backward beyond its flop (whole model; a rank "
       "pays its share of the parameters)"},
      {"workers", "compute_profile", "a compute profile (catalog name or JSON file) timing layers"},
      {"workers", "compute_source", "where the host's speed comes from (printed with results)"},
      {"workers", "elementwise_passes",
       "memory-bound element-wise traffic per stored activation byte (layout step time)"},
      {"servers", "server_flop_per_message",
       "work (flop at the host's speed) a parameter server spends per message it handles"},
      {"servers", "server_flop_per_byte",
       "work (flop at the host's speed) a parameter server spends per byte it combines or applies"},
      {"the root zone", "message_protocol", "plain (default) or rendezvous (OpenMPI ob1 over TCP)"},
      {"the root zone", "eager_limit_bytes", "with rendezvous: the largest message sent eagerly"},
      {"the root zone", "queued_window_bytes",
       "with rendezvous: bytes of a message queued at its first link that a control message "
       "sent meanwhile waits behind (0, default: none; the simulator only)"},
      {"the root zone", "packet_bytes",
       "payload bytes of the packets the links forward store-and-forward (0, default: pipes)"},
  };
  return properties;
}

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie])))
        ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je])))
        ++je;
      // Compare digit runs as numbers: strip leading zeros, then by length, then lexically.
      size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0')
        ++is;
      while (js + 1 < je && b[js] == '0')
        ++js;
      if (ie - is != je - js) return ie - is < je - js;
      const int c = a.compare(is, ie - is, b, js, je - js);
      if (c != 0) return c < 0;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::string fnv1a_hex(const std::string& bytes) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  static const char* digits = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<size_t>(i)] = digits[hash & 0xF];
    hash >>= 4;
  }
  return out;
}

}  // namespace tauplan::model
