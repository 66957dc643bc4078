// testbed_control.cpp: the study behind `tauplan testbed` (see testbed_control.hpp).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/testbed/launcher.hpp"
#include "exec/testbed/lifecycle.hpp"
#include "exec/testbed/netcal.hpp"
#include "exec/testbed/system.hpp"
#include "model/error.hpp"
#include "model/result.hpp"
#include "sim/platform_loader.hpp"
#include "study/testbed_control.hpp"

namespace tauplan::study {

void require_testbed_rights() {
  std::string why;
  if (!tb::can_manage_namespaces(why))
    throw InputError("testbed", "privileges",
                     "the rights to create network namespaces (root: CAP_NET_ADMIN and "
                     "CAP_SYS_ADMIN)",
                     why);
}

namespace {

std::string mbps(double bytes_per_s) {
  return fmt::format("{:.4g} MB/s", bytes_per_s / 1e6);
}

std::string ms(double seconds) {
  return fmt::format("{:.4g} ms", seconds * 1e3);
}

void print_state(const tb::State& state, std::ostream& out) {
  const tb::Spec& spec = state.spec;
  out << fmt::format("testbed {} of {}: {} hosts, scale {:.6g} ({}), mtu {} ({}), TCP {}\n",
                     spec.prefix, spec.platform_file, spec.hosts.size(), spec.scale,
                     spec.scale_reason, spec.mtu, spec.mtu_reason, state.tcp_congestion_control);
  out << fmt::format("{:<5} {:<16} {:<7} {:<10} {:<12} {}\n", "rank", "host", "role", "namespace",
                     "address", "node");
  for (std::size_t i = 0; i < spec.hosts.size(); ++i) {
    const tb::SpecHost& h = spec.hosts[i];
    out << fmt::format("{:<5} {:<16} {:<7} {:<10} {:<12} {}\n", i, h.name, h.role, h.netns,
                       h.address, h.node);
  }
  out << fmt::format("{:<22} {:<12} {:>14} {:>12} {:>14} {:>12} {:>10}\n", "link", "sharing",
                     "platform B/s", "platform s", "testbed B/s", "testbed s", "queue B");
  for (const tb::SpecLink& l : spec.links)
    out << fmt::format("{:<22} {:<12} {:>14.6g} {:>12.6g} {:>14.6g} {:>12.6g} {:>10.0f}\n", l.name,
                       tb::sharing_name(l.sharing), l.platform_bandwidth_Bps, l.platform_latency_s,
                       l.bandwidth_Bps, l.latency_s, l.queue_bytes);
  double min_lat = 1e300, max_lat = 0, min_bw = 1e300, max_bw = 0;
  for (const tb::SpecRoute& r : spec.routes) {
    min_lat = std::min(min_lat, r.latency_s);
    max_lat = std::max(max_lat, r.latency_s);
    min_bw = std::min(min_bw, r.bandwidth_Bps);
    max_bw = std::max(max_bw, r.bandwidth_Bps);
  }
  out << fmt::format("routes: {} ordered pairs, latency {} to {}, bandwidth {} to {}\n",
                     spec.routes.size(), ms(min_lat), ms(max_lat), mbps(min_bw), mbps(max_bw));
  out << fmt::format("fabric pid {}, time to live {:.0f} s, state {}\n", state.fabric_pid,
                     state.ttl_s, tb::state_path(spec.prefix));
}

}  // namespace

void testbed_up(const TestbedUpRequest& a, std::ostream& out) {
  require_testbed_rights();
  tb::check_prefix(a.prefix, "<command line>");
  const model::Platform platform = sim::load_platform(a.platform);
  tb::Options options;
  options.hosts = a.hosts;
  options.scale = a.scale;
  options.prefix = a.prefix;
  options.mtu = a.mtu;
  options.queue_s = a.queue_s;
  if (!(a.max_packet_rate > 0))
    throw InputError("<command line>", "--max-packet-rate", "a positive number of packets/s",
                     fmt::format("{}", a.max_packet_rate));
  options.limits.max_packet_rate = a.max_packet_rate;
  const tb::Spec spec = tb::make_spec(platform, options);
  if (!(a.ttl_s > 0))
    throw InputError("<command line>", "--ttl", "a positive number of seconds",
                     fmt::format("{}", a.ttl_s));
  tb::UpOptions up;
  up.fabric.ttl_s = a.ttl_s;
  up.fabric.realtime_priority = a.realtime_priority;
  up.fabric.early_s = a.early_s;
  up.tcp_congestion_control = a.congestion_control;
  up.executable = tb::self_executable();
  tb::State state;
  try {
    state = tb::bring_up(spec, up);
  } catch (const tb::Interrupted& e) {
    std::fprintf(stderr, "tauplan: testbed up %s; removed what it had made\n", e.what());
    std::fflush(stderr);
    _exit(128 + e.signal);
  }
  if (a.json)
    out << tb::to_json(state).dump(2) << "\n";
  else
    print_state(state, out);
}

void testbed_down(const std::string& prefix, bool json, std::ostream& out) {
  require_testbed_rights();
  tb::check_prefix(prefix, "<command line>");
  tb::PrefixLock lock(prefix);
  const tb::Leftovers found = tb::find_leftovers(prefix);
  if (found.empty()) tb::remove_prefix_files(prefix);  // the lock just taken, an old log
  if (found.empty())
    throw InputError(tb::state_path(prefix), "testbed", "a testbed to take down",
                     "none with prefix " + prefix + " (no state file, namespace or fabric)");
  tb::remove_testbed(prefix);
  const tb::Leftovers left = tb::find_leftovers(prefix);
  if (!left.empty()) throw std::runtime_error("testbed down: could not remove " + left.describe());
  tb::remove_prefix_files(prefix);
  if (json)
    out << nlohmann::json{{"prefix", prefix}, {"removed", found.describe()}}.dump() << "\n";
  else
    out << "testbed " << prefix << " down: removed " << found.describe() << "\n";
}

void testbed_status(const std::string& prefix, bool json, std::ostream& out) {
  require_testbed_rights();
  tb::check_prefix(prefix, "<command line>");
  const tb::Status status = tb::testbed_status(prefix);
  if (json) {
    nlohmann::json j = {{"prefix", prefix},
                        {"health", status.health},
                        {"problem", status.problem},
                        {"leftovers", status.leftovers.describe()},
                        {"fabric_cpu_s", status.fabric_cpu_s},
                        {"fabric", status.fabric_stats}};
    if (status.state) j["state"] = tb::to_json(*status.state);
    out << j.dump(2) << "\n";
    return;
  }
  out << "testbed " << prefix << ": " << status.health;
  if (!status.problem.empty()) out << " (" << status.problem << ")";
  out << "\n";
  if (status.state && status.health == "up") {
    print_state(*status.state, out);
    const nlohmann::json& f = status.fabric_stats;
    if (f.is_object()) {
      out << fmt::format(
          "fabric: {:.1f} s CPU, {} packets in, {} delivered, {} dropped at full queues, {} not "
          "for a testbed host\n",
          status.fabric_cpu_s, f.value("received", 0), f.value("delivered", 0),
          f.value("dropped_queue", 0), f.value("dropped_foreign", 0));
      if (f.contains("delivery_lateness")) {
        out << "deliveries by lateness:";
        for (const auto& bin : f.at("delivery_lateness"))
          out << " " << bin.at(0).get<std::string>() << " " << bin.at(1).get<long long>();
        out << "\n";
      }
    }
  } else if (status.health == "down") {
    out << "nothing with prefix " << prefix << " exists\n";
  }
}

void testbed_calibrate(const TestbedCalibrateRequest& a, std::ostream& out) {
  require_testbed_rights();
  tb::check_prefix(a.prefix, "<command line>");
  const tb::State state = tb::require_up(a.prefix);
  {
    std::ofstream probe(a.out, std::ios::app);
    if (!probe) throw InputError(a.out, "--out", "a writable file path", "cannot write");
  }
  const tb::NetworkCalibration cal = tb::calibrate_network(
      state, a.request,
      [](const std::string& line) { std::cerr << "testbed calibrate: " << line << "\n"; });
  const std::string xml = tb::calibrated_platform_xml(state.spec, cal);
  {
    std::ofstream file(a.out, std::ios::trunc);
    file << xml;
    if (!file) throw InputError(a.out, "--out", "a writable file path", "cannot write");
  }
  // The file must load as a platform with the testbed's hosts and routes.
  const model::Platform loaded = sim::load_platform(a.out);
  if (loaded.hosts.size() != state.spec.hosts.size())
    throw std::runtime_error("calibrated platform " + a.out + " has " +
                             std::to_string(loaded.hosts.size()) + " hosts, not " +
                             std::to_string(state.spec.hosts.size()));
  for (const tb::SpecRoute& r : state.spec.routes) {
    const int src = loaded.find_host(state.spec.hosts[static_cast<std::size_t>(r.src)].name);
    const int dst = loaded.find_host(state.spec.hosts[static_cast<std::size_t>(r.dst)].name);
    if (src < 0 || dst < 0 || loaded.route(src, dst).links.size() != r.links.size())
      throw std::runtime_error("calibrated platform " + a.out + " lost the route " +
                               state.spec.hosts[static_cast<std::size_t>(r.src)].name + " -> " +
                               state.spec.hosts[static_cast<std::size_t>(r.dst)].name);
  }
  if (a.json) {
    nlohmann::json j = tb::to_json(cal, state.spec);
    j["out"] = a.out;
    j["context"] = {{"version", model::tauplan_version()},
                    {"commit", model::tauplan_git_commit()},
                    {"testbed_created", state.created},
                    {"tcp_congestion_control", state.tcp_congestion_control},
                    {"fabric_pid", state.fabric_pid}};
    out << j.dump(2) << "\n";
    return;
  }
  const tb::Spec& spec = state.spec;
  out << fmt::format("calibrated {} (scale {:.6g}) in {:.1f} s -> {}\n", spec.platform_file,
                     spec.scale, cal.seconds, a.out);
  out << fmt::format("{:<28} {:>11} {:>11} {:>8} {:>12} {:>12} {:>8} {:>8}\n", "route", "rtt ms",
                     "testbed", "err", "MB/s", "testbed", "err", "R^2");
  for (const tb::RouteMeasurement& m : cal.routes)
    out << fmt::format(
        "{:<28} {:>11.4g} {:>11.4g} {:>7.2f}% {:>12.4g} {:>12.4g} {:>7.2f}% {:>8.5f}\n",
        spec.hosts[static_cast<std::size_t>(m.src)].name + " -> " +
            spec.hosts[static_cast<std::size_t>(m.dst)].name,
        m.round_trip_s * 1e3, m.testbed_round_trip_s * 1e3,
        100 * (m.round_trip_s / m.testbed_round_trip_s - 1), m.bandwidth_Bps / 1e6,
        m.testbed_bandwidth_Bps / 1e6, 100 * (m.bandwidth_Bps / m.testbed_bandwidth_Bps - 1),
        m.fit.r2);
  for (const tb::ShareMeasurement& s : cal.shares) {
    std::string line = fmt::format("{} flow(s) into {}:", s.flows.size(),
                                   spec.hosts[static_cast<std::size_t>(s.flows[0].second)].name);
    double total = 0;
    for (std::size_t f = 0; f < s.flows.size(); ++f) {
      line += fmt::format(" {:.4g}/{:.4g}", s.rates_Bps[f] / 1e6, s.fair_Bps[f] / 1e6);
      total += s.rates_Bps[f];
    }
    out << line
        << fmt::format(" MB/s measured/fair, aggregate {:.4g} MB/s, fabric {:.0f}% of a core\n",
                       total / 1e6, 100 * s.fabric_cpu_s / s.seconds);
  }
  for (const tb::DuplexMeasurement& d : cal.duplex)
    out << fmt::format("both directions {} <-> {}: {:.3f} and {:.3f} of alone\n",
                       spec.hosts[static_cast<std::size_t>(d.a)].name,
                       spec.hosts[static_cast<std::size_t>(d.b)].name,
                       d.both_ab_Bps / d.alone_ab_Bps, d.both_ba_Bps / d.alone_ba_Bps);
  for (const std::string& w : cal.warnings)
    std::cerr << "tauplan: testbed calibrate: warning: " << w << "\n";
}

}  // namespace tauplan::study
