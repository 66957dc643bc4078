// platform_loader.cpp: starts the process's SimGrid Engine, loads an XML platform once, and
// converts it into model::Platform with a RouteOracle over SimGrid's routing.
//
// Host order is natural name order (gpu-2 before gpu-10), not SimGrid's lexicographic order,
// so that host indices read the way people count. Link order is natural order of link names.
// What it leaves out: SimGrid objects that are not hosts or links (routers, disks, zones'
// properties), and re-loading: one platform per process.
#include "sim/platform_loader.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>
// version.h and log.h need the declarations above.
#include <simgrid/version.h>
#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "model/error.hpp"
#include "model/workload.hpp"
#include "model/job.hpp"
#include "sim/sg_engine.hpp"

namespace sg4 = simgrid::s4u;

namespace tauplan::sim {
namespace {

struct LoaderState {
  sg4::Engine* engine = nullptr;
  std::vector<std::string> config_items;  // as set, "name:value"
  NetworkOptions network;
  std::string canonical_path;  // of the loaded platform
  std::string failed_load;     // what went wrong with an earlier load, if anything
  std::optional<model::Platform> platform;
  std::vector<sg4::Host*> hosts;  // by model::Platform host index
  bool link_profiles = false;
};

LoaderState& state() {
  static LoaderState s;
  return s;
}

std::string format_number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.15g", value);
  return buffer;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::path(path), ec);
  return ec ? path : p.string();
}

model::LinkSharing to_model_sharing(const sg4::Link& link) {
  switch (link.get_sharing_policy()) {
    case sg4::Link::SharingPolicy::FATPIPE:
      return model::LinkSharing::FatPipe;
    case sg4::Link::SharingPolicy::SPLITDUPLEX:
      return model::LinkSharing::SplitDuplex;
    default:
      break;
  }
  // SimGrid hands out the two directions of a split-duplex link as "<name>_UP" and
  // "<name>_DOWN", each a shared link of its own: report them as split-duplex.
  const std::string& name = link.get_name();
  auto ends_with = [&name](const std::string& suffix) {
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("_UP") || ends_with("_DOWN")) return model::LinkSharing::SplitDuplex;
  return model::LinkSharing::Shared;
}

/// RouteOracle over SimGrid's routing of the loaded platform (memoised per host pair).
class SimGridRoutes final : public model::RouteOracle {
 public:
  SimGridRoutes(std::vector<sg4::Host*> hosts, std::unordered_map<const sg4::Link*, int> link_index,
                std::vector<double> link_bandwidth)
      : hosts_(std::move(hosts)),
        link_index_(std::move(link_index)),
        link_bandwidth_(std::move(link_bandwidth)) {}

  model::Route route(int src_host, int dst_host) const override {
    const auto n = static_cast<long long>(hosts_.size());
    if (src_host < 0 || dst_host < 0 || src_host >= n || dst_host >= n)
      throw std::out_of_range("route between unknown host indices " + std::to_string(src_host) +
                              " and " + std::to_string(dst_host));
    const long long key = static_cast<long long>(src_host) * n + dst_host;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    std::vector<sg4::Link*> path;
    double latency = 0;
    hosts_[static_cast<size_t>(src_host)]->route_to(hosts_[static_cast<size_t>(dst_host)], path,
                                                    &latency);
    model::Route route;
    route.latency_s = latency;
    route.bandwidth_Bps = std::numeric_limits<double>::infinity();
    for (const sg4::Link* link : path) {
      auto it = link_index_.find(link);
      if (it == link_index_.end()) continue;  // not a link of the platform list (cannot happen)
      route.links.push_back(it->second);
      route.bandwidth_Bps =
          std::min(route.bandwidth_Bps, link_bandwidth_[static_cast<size_t>(it->second)]);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    cache_.emplace(key, route);
    return route;
  }

 private:
  std::vector<sg4::Host*> hosts_;
  std::unordered_map<const sg4::Link*, int> link_index_;
  std::vector<double> link_bandwidth_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<long long, model::Route> cache_;
};

std::string host_prop_key(const sg4::Host& host, const std::string& prop) {
  return "host " + host.get_name() + " prop " + prop;
}

model::Host convert_host(const sg4::Host& sg_host, const std::string& file) {
  model::Host host;
  host.name = sg_host.get_name();
  host.speed_flops = sg_host.get_speed();
  host.node = host.name;  // a host is its own node unless the platform says otherwise
  if (const auto* props = sg_host.get_properties())
    for (const auto& [name, value] : *props) host.properties[name] = value;
  if (const char* value = sg_host.get_property("gpu_model")) {
    host.gpu_model = value;
    if (host.gpu_model.empty())
      throw InputError(file, host_prop_key(sg_host, "gpu_model"), "a GPU model name", "\"\"");
    // The catalog must know the GPU; its memory is the default when the platform omits it.
    host.gpu_memory_bytes =
        model::gpu_spec(host.gpu_model, file, host_prop_key(sg_host, "gpu_model")).memory_bytes;
  }
  if (const char* value = sg_host.get_property("gpu_memory_bytes")) {
    const std::string key = host_prop_key(sg_host, "gpu_memory_bytes");
    host.gpu_memory_bytes = model::parse_bytes(value, file, key);
    if (!(host.gpu_memory_bytes >= 0) || !std::isfinite(host.gpu_memory_bytes))
      throw InputError(file, key, "a non-negative size in bytes (e.g. 80GB)", value);
  }
  if (const char* value = sg_host.get_property("node")) {
    host.node = value;
    if (host.node.empty())
      throw InputError(file, host_prop_key(sg_host, "node"), "the name of the machine", "\"\"");
  }
  if (const char* value = sg_host.get_property("role")) {
    const std::string role = value;
    if (role == "worker")
      host.role = model::HostRole::Worker;
    else if (role == "server")
      host.role = model::HostRole::Server;
    else
      throw InputError(file, host_prop_key(sg_host, "role"), "worker or server",
                       "\"" + role + "\"");
  }
  if (!(host.speed_flops > 0))
    throw InputError(file, "host " + host.name + " speed", "a positive speed (e.g. 100Tf)",
                     format_number(host.speed_flops));
  return host;
}

model::Platform convert_platform(sg4::Engine& engine, const std::string& file,
                                 std::vector<sg4::Host*>& hosts_out) {
  model::Platform platform;
  platform.source_file = file;

  std::vector<sg4::Host*> hosts = engine.get_all_hosts();
  std::sort(hosts.begin(), hosts.end(), [](const sg4::Host* a, const sg4::Host* b) {
    return model::natural_less(a->get_name(), b->get_name());
  });
  platform.hosts.reserve(hosts.size());
  for (const sg4::Host* host : hosts)
    platform.hosts.push_back(convert_host(*host, file));

  std::vector<sg4::Link*> links = engine.get_all_links();
  std::sort(links.begin(), links.end(), [](const sg4::Link* a, const sg4::Link* b) {
    return model::natural_less(a->get_name(), b->get_name());
  });
  std::unordered_map<const sg4::Link*, int> link_index;
  std::vector<double> link_bandwidth;
  for (const sg4::Link* link : links) {
    model::Link converted;
    converted.name = link->get_name();
    converted.bandwidth_Bps = link->get_bandwidth();
    converted.latency_s = link->get_latency();
    converted.sharing = to_model_sharing(*link);
    link_index.emplace(link, static_cast<int>(platform.links.size()));
    link_bandwidth.push_back(converted.bandwidth_Bps);
    platform.links.push_back(std::move(converted));
  }
  platform.routes =
      std::make_shared<SimGridRoutes>(hosts, std::move(link_index), std::move(link_bandwidth));
  hosts_out = std::move(hosts);
  return platform;
}

std::vector<std::string> network_config_items(const NetworkOptions& network) {
  if (network.model != "CM02" && network.model != "LV08")
    throw InputError(network.origin, "network_model", "CM02 or LV08", network.model);
  bool crosstraffic = false;
  if (network.crosstraffic == "auto")
    crosstraffic = network.model != "CM02";
  else if (network.crosstraffic == "on")
    crosstraffic = true;
  else if (network.crosstraffic == "off")
    crosstraffic = false;
  else
    throw InputError(network.origin, "crosstraffic", "auto, on or off", network.crosstraffic);
  if (!(network.tcp_gamma_bytes > 0) || !std::isfinite(network.tcp_gamma_bytes))
    throw InputError(network.origin, "tcp_gamma", "a positive size in bytes",
                     format_number(network.tcp_gamma_bytes));
  return {"network/model:" + network.model,
          std::string("network/crosstraffic:") + (crosstraffic ? "1" : "0"),
          "network/TCP-gamma:" + format_number(network.tcp_gamma_bytes)};
}

}  // namespace

namespace detail {

sg4::Engine* engine() {
  return state().engine;
}
const std::vector<sg4::Host*>& loaded_hosts() {
  return state().hosts;
}
const std::string& loaded_source_file() {
  static const std::string none;
  return state().platform ? state().platform->source_file : none;
}
bool loaded_platform_has_link_profiles() {
  return state().link_profiles;
}

const std::string& loaded_source_hash() {
  static const std::string none;
  return state().platform ? state().platform->source_hash : none;
}

sg4::Engine& start_engine(const std::vector<std::string>& config_items) {
  LoaderState& s = state();
  if (s.engine != nullptr) return *s.engine;
  // Silence SimGrid before it says anything; TAUPLAN_SIMGRID_LOG re-enables categories
  // for debugging (e.g. "ker_engine.thres:info").
  xbt_log_control_set("root.thres:critical");
  if (const char* extra = std::getenv("TAUPLAN_SIMGRID_LOG")) xbt_log_control_set(extra);
  static int argc = 1;
  static char program[] = "tauplan";
  static char* argv[] = {program, nullptr};
  // Never destroyed: the Engine lives as long as the process (SimGrid allows one).
  s.engine = new sg4::Engine(&argc, argv);
  for (const std::string& item : config_items)
    sg4::Engine::set_config(item);
  s.config_items = config_items;
  return *s.engine;
}

}  // namespace detail

model::Platform load_platform(const std::string& xml_path, const NetworkOptions& network) {
  LoaderState& s = state();
  const std::vector<std::string> items = network_config_items(network);

  if (s.engine != nullptr && items != s.config_items) {
    std::string had;
    for (const auto& item : s.config_items)
      had += (had.empty() ? "" : " ") + item;
    throw InputError(network.origin, "network_model",
                     "the network options this process started SimGrid with (" + had +
                         "); SimGrid fixes them once per process",
                     network.model + " crosstraffic " + network.crosstraffic);
  }
  const std::string path = canonical(xml_path);
  if (s.platform) {
    if (path == s.canonical_path) return *s.platform;
    throw InputError(xml_path, "platform",
                     "the platform already loaded in this process (" + s.platform->source_file +
                         "); SimGrid holds one platform per process");
  }
  if (!s.failed_load.empty())
    throw InputError(xml_path, "platform", "a process where no platform load failed",
                     "an earlier failure: " + s.failed_load);
  {
    std::ifstream probe(xml_path, std::ios::binary);
    if (xml_path.empty() || !probe || std::filesystem::is_directory(xml_path))
      throw InputError(xml_path, "platform", "a readable SimGrid XML platform file",
                       "no such file");
  }
  const std::string bytes = read_file_bytes(xml_path);

  sg4::Engine& engine = detail::start_engine(items);
  try {
    engine.load_platform(xml_path);
    // Floyd and Dijkstra zones compute their routes when sealed; route_to() needs them.
    engine.seal_platform();
  } catch (const simgrid::ParseError& e) {
    s.failed_load = e.what();
    throw InputError(xml_path, "platform", "a valid SimGrid XML platform", e.what());
  } catch (const std::exception& e) {
    s.failed_load = e.what();
    throw InputError(xml_path, "platform", "a valid SimGrid XML platform", e.what());
  }

  std::vector<sg4::Host*> hosts;
  model::Platform platform;
  try {
    platform = convert_platform(engine, xml_path, hosts);
  } catch (const InputError& e) {
    s.failed_load = e.what();
    throw;
  }
  if (platform.hosts.empty()) {
    s.failed_load = "no hosts";
    throw InputError(xml_path, "platform", "at least one <host> or <cluster>", "no hosts");
  }
  platform.source_hash = model::fnv1a_hex(bytes);
  // Conservative: any profile attribute in the file (hosts' state profiles too) counts.
  s.link_profiles = bytes.find("bandwidth_file") != std::string::npos ||
                    bytes.find("latency_file") != std::string::npos ||
                    bytes.find("state_file") != std::string::npos;
  s.network = network;
  s.canonical_path = path;
  s.hosts = std::move(hosts);
  s.platform = std::move(platform);
  return *s.platform;
}

model::Platform load_platform(const std::string& xml_path, const std::string& network_model) {
  NetworkOptions network;
  network.model = network_model;
  return load_platform(xml_path, network);
}

bool platform_loaded() {
  return state().platform.has_value();
}

std::map<std::string, std::string> engine_config() {
  std::map<std::string, std::string> config;
  if (state().engine == nullptr) return config;
  // Read back from SimGrid rather than echo what we asked for.
  config["network/model"] = simgrid::config::get_value<std::string>("network/model");
  config["network/crosstraffic"] =
      simgrid::config::get_value<bool>("network/crosstraffic") ? "1" : "0";
  config["network/TCP-gamma"] =
      format_number(simgrid::config::get_value<double>("network/TCP-gamma"));
  config["surf/precision"] = format_number(simgrid::config::get_value<double>("surf/precision"));
  config["network/maxmin-selective-update"] =
      simgrid::config::get_value<bool>("network/maxmin-selective-update") ? "1" : "0";
  return config;
}

std::string network_model() {
  if (state().engine == nullptr) return "";
  return simgrid::config::get_value<std::string>("network/model");
}

std::string simgrid_version() {
  int major = 0;
  int minor = 0;
  int patch = 0;
  sg_version_get(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace tauplan::sim
