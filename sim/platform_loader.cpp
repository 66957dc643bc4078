// platform_loader.cpp: starts the process's SimGrid Engine, loads an XML platform once, and
// converts it into model::Platform with a RouteOracle over SimGrid's routing.
//
// Host order is natural name order (gpu-2 before gpu-10), not SimGrid's lexicographic order,
// so that host indices read the way people count. Link order is natural order of link names.
// The root zone's props `message_protocol` and `eager_limit_bytes` give the platform's message
// protocol, and `packet_bytes` the packets its links forward store-and-forward: the simulator
// then charges every transfer its last packet's serialisation on each link of its route but the
// narrowest (model::Route::forwarding_s_per_byte), through SimGrid's latency factor by size and
// route. What it leaves out: SimGrid objects that are not hosts or links (routers, disks),
// other zones' properties, and re-loading: one platform per process.
#include "sim/platform_loader.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/Exception.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
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
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/units.hpp"
#include "model/base/yaml_util.hpp"
#include "model/inputs/simgrid_xml_check.hpp"
#include "model/inputs/workload.hpp"
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
  bool latency_profiles = false;  // a latency_file: the latency changes over time
  SimGridArguments arguments;     // the user's --cfg and --log, checked
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
  SimGridRoutes(std::string file, std::vector<sg4::Host*> hosts,
                std::unordered_map<const sg4::Link*, int> link_index,
                std::vector<double> link_bandwidth)
      : file_(std::move(file)),
        hosts_(std::move(hosts)),
        link_index_(std::move(link_index)),
        link_bandwidth_(std::move(link_bandwidth)) {}

  /// Throws InputError naming the file and the host pair when SimGrid has no route for it.
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
    const sg4::Host* src = hosts_[static_cast<size_t>(src_host)];
    const sg4::Host* dst = hosts_[static_cast<size_t>(dst_host)];
    const std::string pair = "route " + src->get_name() + " -> " + dst->get_name();
    const char* expected =
        "a route between these hosts (a <route>, or a <zoneRoute> between their zones)";
    try {
      src->route_to(dst, path, &latency);
    } catch (const std::exception& e) {
      throw InputError(file_, pair, expected, e.what());
    }
    // SimGrid's network model refuses (aborts) a transfer over an empty path between two hosts.
    if (path.empty() && src != dst) throw InputError(file_, pair, expected, "none");
    model::Route route;
    route.latency_s = latency;
    route.bandwidth_Bps = std::numeric_limits<double>::infinity();
    model::ForwardingPerByte forwarding;
    for (const sg4::Link* link : path) {
      auto it = link_index_.find(link);
      if (it == link_index_.end()) continue;  // not a link of the platform list (cannot happen)
      route.links.push_back(it->second);
      const double bandwidth = link_bandwidth_[static_cast<size_t>(it->second)];
      route.bandwidth_Bps = std::min(route.bandwidth_Bps, bandwidth);
      forwarding.add_link(bandwidth);
    }
    route.forwarding_s_per_byte = forwarding.s_per_byte();
    std::lock_guard<std::mutex> lock(mutex_);
    cache_.emplace(key, route);
    return route;
  }

 private:
  std::string file_;
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
    for (const auto& [name, value] : *props)
      host.properties[name] = value;
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
    if (!(host.gpu_memory_bytes >= 0 && host.gpu_memory_bytes <= model::kMaxMemoryBytes))
      throw InputError(
          file, key,
          fmt::format("a size in bytes in [0, {:g}] (e.g. 80GB)", model::kMaxMemoryBytes), value);
  }
  // Descriptive props, printed with results (model/ir/compute_source.cpp): checked all the same,
  // so that a result never echoes a fraction of nan or a precision the catalog has no peak for.
  if (const char* value = sg_host.get_property("efficiency")) {
    double fraction = 0;
    if (!model::parse_prop_number(value, fraction) || !(fraction > 0 && fraction <= 1))
      throw InputError(file, host_prop_key(sg_host, "efficiency"),
                       "a fraction of the catalog peak in (0, 1]", value);
  }
  if (const char* value = sg_host.get_property("precision")) {
    const std::vector<std::string>& known = model::precision_names();
    if (std::find(known.begin(), known.end(), value) == known.end())
      throw InputError(
          file, host_prop_key(sg_host, "precision"),
          fmt::format("{} or {}", fmt::join(known.begin(), known.end() - 1, ", "), known.back()),
          "\"" + std::string(value) + "\"");
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
  if (!(host.speed_flops >= model::kMinSpeedFlops && host.speed_flops <= model::kMaxSpeedFlops))
    throw InputError(file, "host " + host.name + " speed",
                     fmt::format("a speed in [{:g}, {:g}] flop/s (e.g. 100Tf)",
                                 model::kMinSpeedFlops, model::kMaxSpeedFlops),
                     format_number(host.speed_flops));
  return host;
}

// A root-zone prop holding a number of bytes in [0, kMaxMemoryBytes]; `zero_means`, when not
// empty, is said in the error after the range.
double root_bytes_prop(const sg4::NetZone& root, const std::string& file, const std::string& name,
                       const char* value, const std::string& zero_means) {
  double bytes = 0;
  if (!model::parse_prop_number(value, bytes) || !(bytes >= 0 && bytes <= model::kMaxMemoryBytes))
    throw InputError(file, "zone " + root.get_name() + " prop " + name,
                     fmt::format("a number of bytes in [0, {:g}]", model::kMaxMemoryBytes) +
                         (zero_means.empty() ? "" : " (0: " + zero_means + ")"),
                     value);
  return bytes;
}

// The root zone's props `message_protocol`, `eager_limit_bytes` and `queued_window_bytes`
// (model/inputs/platform.hpp).
model::MessageProtocol message_protocol(const sg4::NetZone& root, const std::string& file) {
  model::MessageProtocol protocol;
  const char* name = root.get_property("message_protocol");
  const char* limit = root.get_property("eager_limit_bytes");
  const char* window = root.get_property("queued_window_bytes");
  const std::string key = "zone " + root.get_name() + " prop ";
  if (name == nullptr || std::string(name) == "plain") {
    if (limit != nullptr)
      throw InputError(file, key + "eager_limit_bytes",
                       "no eager limit unless message_protocol is rendezvous", limit);
    if (window != nullptr)
      throw InputError(file, key + "queued_window_bytes",
                       "no queued window unless message_protocol is rendezvous", window);
    return protocol;
  }
  if (std::string(name) != "rendezvous")
    throw InputError(file, key + "message_protocol", "plain or rendezvous", name);
  if (limit == nullptr)
    throw InputError(file, key + "eager_limit_bytes",
                     "the largest message sent without a rendezvous, in bytes (with "
                     "message_protocol rendezvous)",
                     "nothing");
  protocol.rendezvous = true;
  protocol.eager_limit_bytes = root_bytes_prop(root, file, "eager_limit_bytes", limit, "");
  if (window != nullptr)
    protocol.queued_window_bytes =
        root_bytes_prop(root, file, "queued_window_bytes", window, "none");
  return protocol;
}

// The root zone's prop `packet_bytes` (model::Platform::packet_bytes): absent, 0.
double packet_bytes(const sg4::NetZone& root, const std::string& file) {
  const char* value = root.get_property("packet_bytes");
  return value == nullptr ? 0
                          : root_bytes_prop(root, file, "packet_bytes", value, "links are pipes");
}

// Store-and-forward links (packet_bytes > 0): every transfer's latency factor grows by its last
// packet's serialisation on each link of its route but the narrowest, over the route's latency
// (SimGrid multiplies a transfer's route latency by the factor). A route of no latency cannot
// carry it as a factor and keeps the configured one.
void charge_forwarding(sg4::Engine& engine, double packet) {
  const double base = simgrid::config::get_value<double>("network/latency-factor");
  engine.get_netzone_root()->get_network_model()->set_lat_factor_cb(
      [base, packet](double size, const sg4::Host*, const sg4::Host*,
                     const std::vector<sg4::Link*>& links,
                     const std::unordered_set<sg4::NetZone*>&) {
        double latency = 0;
        model::ForwardingPerByte per_byte;
        for (const sg4::Link* link : links) {
          latency += link->get_latency();
          per_byte.add_link(link->get_bandwidth());
        }
        const double forwarding = std::min(size, packet) * per_byte.s_per_byte();
        return latency > 0 ? base + forwarding / latency : base;
      });
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
    // Checked in the XML already (model/inputs/simgrid_xml_check.hpp); checked again as SimGrid
    // read them, since a bandwidth of 0 aborts a simulation and a negative latency is accepted.
    if (!(converted.bandwidth_Bps >= model::kMinBandwidthBps &&
          converted.bandwidth_Bps <= model::kMaxBandwidthBps))
      throw InputError(file, "link " + converted.name + " bandwidth",
                       fmt::format("a bandwidth in [{:g}, {:g}] B/s", model::kMinBandwidthBps,
                                   model::kMaxBandwidthBps),
                       format_number(converted.bandwidth_Bps));
    if (!(converted.latency_s >= 0 && converted.latency_s <= model::kMaxLatencySeconds))
      throw InputError(file, "link " + converted.name + " latency",
                       fmt::format("a latency in [0, {:g}] s", model::kMaxLatencySeconds),
                       format_number(converted.latency_s));
    link_index.emplace(link, static_cast<int>(platform.links.size()));
    link_bandwidth.push_back(converted.bandwidth_Bps);
    platform.links.push_back(std::move(converted));
  }
  platform.routes = std::make_shared<SimGridRoutes>(file, hosts, std::move(link_index),
                                                    std::move(link_bandwidth));
  platform.protocol = message_protocol(*engine.get_netzone_root(), file);
  platform.packet_bytes = packet_bytes(*engine.get_netzone_root(), file);
  if (platform.packet_bytes > 0) charge_forwarding(engine, platform.packet_bytes);
  hosts_out = std::move(hosts);
  return platform;
}

std::vector<std::string> network_config_items(const NetworkOptions& network) {
  const std::vector<std::string> models = network_model_choices();
  if (std::find(models.begin(), models.end(), network.model) == models.end())
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

std::vector<std::string> network_model_choices() {
  return {"CM02", "LV08"};
}

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
bool loaded_platform_has_latency_profiles() {
  return state().latency_profiles;
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
  for (const std::string& item : s.arguments.log)
    xbt_log_control_set(item.c_str());
  static char program[] = "tauplan";
#if TAUPLAN_SANITIZED
  // AddressSanitizer cannot follow SimGrid's stack switches between actors (it warns on stderr
  // and may report false positives); system threads as contexts give the same simulation. The
  // factory is chosen while the Engine is built, so it goes on the command line SimGrid reads.
  static char thread_contexts[] = "--cfg=contexts/factory:thread";
  static int argc = 2;
  static char* argv[] = {program, thread_contexts, nullptr};
#else
  static int argc = 1;
  static char* argv[] = {program, nullptr};
#endif
  // Never destroyed: the Engine lives as long as the process (SimGrid allows one).
  s.engine = new sg4::Engine(&argc, argv);
  for (const std::string& item : config_items)
    sg4::Engine::set_config(item);
  for (const std::string& item : s.arguments.cfg)
    sg4::Engine::set_config(item);
  s.config_items = config_items;
  return *s.engine;
}

}  // namespace detail

namespace {

// SimGrid's message without its "[0.000000] ./src/file.cpp:12: [root/CRITICAL] " prefix.
std::string simgrid_reason(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  const auto critical = line.find("/CRITICAL] ");
  if (critical != std::string::npos) line = line.substr(critical + 11);
  return line.empty() ? "SimGrid stopped" : line;
}

// Applies the arguments in a child process, as start_engine would; returns "" when SimGrid took
// them all, else "ITEM\tREASON" for the first one it refused (or aborted on).
std::string try_arguments_in_child(const SimGridArguments& arguments) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(pipe_fds[0]);
    dup2(pipe_fds[1], STDERR_FILENO);
    dup2(pipe_fds[1], STDOUT_FILENO);
    auto say = [&](const std::string& text) {
      const std::string line = text + "\n";
      if (write(pipe_fds[1], line.data(), line.size()) < 0) _exit(4);
    };
    try {
      xbt_log_control_set("root.thres:critical");
      for (const std::string& item : arguments.log) {
        say("ITEM\t--log=" + item);
        xbt_log_control_set(item.c_str());
      }
      static int argc = 1;
      static char program[] = "tauplan";
      static char* argv[] = {program, nullptr};
      sg4::Engine engine(&argc, argv);
      for (const std::string& item : arguments.cfg) {
        say("ITEM\t--cfg=" + item);
        sg4::Engine::set_config(item);
      }
    } catch (const std::exception& e) {
      say(std::string("REFUSED\t") + e.what());
      _exit(3);
    }
    say("DONE");
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && text.find("DONE\n") != std::string::npos)
    return "";
  // The last item tried is the one SimGrid refused; what follows it is SimGrid's reason.
  const auto item_at = text.rfind("ITEM\t");
  if (item_at == std::string::npos) return "SimGrid\t" + simgrid_reason(text);
  const auto item_end = text.find('\n', item_at);
  const std::string item = text.substr(item_at + 5, item_end - item_at - 5);
  std::string rest = item_end == std::string::npos ? "" : text.substr(item_end + 1);
  if (rest.rfind("REFUSED\t", 0) == 0) rest = rest.substr(8);
  return item + "\t" + simgrid_reason(rest);
}

}  // namespace

void set_simgrid_arguments(const SimGridArguments& arguments) {
  LoaderState& s = state();
  const std::string origin = "command line";
  if (s.engine != nullptr)
    throw InputError(origin, "--cfg", "SimGrid arguments before SimGrid starts",
                     "a process whose Engine already started");
  static const char* owned[][2] = {{"network/model", "network_model"},
                                   {"network/crosstraffic", "crosstraffic"},
                                   {"network/TCP-gamma", "tcp_gamma"}};
  for (const std::string& item : arguments.cfg) {
    const auto colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      throw InputError(origin, "--cfg=" + item, "NAME:VALUE (e.g. --cfg=maxmin/precision:1e-6)",
                       "'" + item + "'");
    for (const auto& [name, key] : owned)
      if (item.compare(0, colon, name) == 0)
        throw InputError(origin, "--cfg=" + item,
                         std::string("the job key ") + key + " for " + name + " (--" + key + ")",
                         "--cfg");
  }
  for (const std::string& item : arguments.log)
    if (item.empty())
      throw InputError(origin, "--log", "a SimGrid log setting (e.g. root.thres:info)", "''");
  if (arguments.cfg.empty() && arguments.log.empty()) return;
  const std::string refused = try_arguments_in_child(arguments);
  if (!refused.empty()) {
    const auto tab = refused.find('\t');
    throw InputError(origin, refused.substr(0, tab), "an item SimGrid accepts",
                     refused.substr(tab + 1));
  }
  s.arguments = arguments;
}

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
  // Read and checked here, before SimGrid sees it: SimGrid aborts the process on many bad
  // platforms (model/inputs/simgrid_xml_check.hpp lists what is checked).
  const std::string bytes = model::yaml_util::read_file(xml_path, "platform");
  const model::PlatformXmlSummary summary = model::check_simgrid_platform_xml(bytes, xml_path);

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
  s.link_profiles = summary.link_profiles;
  s.latency_profiles = summary.latency_profiles;
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
  for (const std::string& item : state().arguments.cfg) {
    const auto colon = item.find(':');
    config[item.substr(0, colon)] = item.substr(colon + 1);  // as given with --cfg
  }
  if (!state().arguments.log.empty()) {
    std::string logs;
    for (const std::string& item : state().arguments.log)
      logs += (logs.empty() ? "" : " ") + item;
    config["--log"] = logs;
  }
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
