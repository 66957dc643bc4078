// network_probe.cpp: `calibrate --network`; see network_probe.hpp.
#include "study/testbed/network_probe.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "exec/mpi_communicator.hpp"
#include "exec/mpi_probes.hpp"
#include "exec/testbed/probe.hpp"
#include "model/base/error.hpp"
#include "sim/platform_loader.hpp"
#include "study/testbed/testbed_control.hpp"

namespace tauplan::study {
namespace {

namespace tb = testbed;

void progress_line(const std::string& line) {
  std::cerr << "calibrate --network: " << line << "\n";
}

/// Who the hosts are for the written platform: role from --servers; node = the host itself (a
/// node is one machine, model/inputs/platform.hpp: hosts behind one switch are not one machine),
/// the switch it hangs off in the prop `switch`.
std::vector<tb::SpecHost> host_identities(const tb::ProbedTopology& t,
                                          const std::vector<std::string>& servers) {
  std::vector<tb::SpecHost> out;
  for (std::size_t h = 0; h < t.hosts.size(); ++h) {
    tb::SpecHost host;
    host.name = t.hosts[h];
    const int on_switch = t.switch_of(static_cast<int>(h));
    host.node = host.name;
    if (on_switch >= 0) host.properties["switch"] = "s" + std::to_string(on_switch);
    host.role = std::count(servers.begin(), servers.end(), host.name) > 0 ? "server" : "worker";
    host.speed_flops = 1e9;  // a placeholder: --network probes no compute
    out.push_back(host);
  }
  return out;
}

void check_names(const NetworkProbeRequest& a, const std::vector<std::string>& names) {
  if (names.size() < 2)
    throw InputError("command line", "--network", "at least 2 hosts", std::to_string(names.size()));
  for (const std::string& s : a.servers)
    if (std::find(names.begin(), names.end(), s) == names.end())
      throw InputError("command line", "--servers", "hosts among those probed", s);
  for (std::size_t i = 0; i < names.size(); ++i)
    if (std::count(names.begin(), names.end(), names[i]) > 1)
      throw InputError("command line", "--network", "distinct host names", names[i]);
}

void write_file(const std::string& path, const std::string& text, const std::string& key) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  if (!file) throw InputError(path, key, "a writable file path", "cannot write");
}

/// The testbed's hosts by the names asked for ("all": every one), in that order.
std::vector<int> testbed_hosts(const tb::State& state, const std::vector<std::string>& names) {
  std::vector<int> out;
  if (names.size() == 1 && names[0] == "all") {
    for (std::size_t i = 0; i < state.spec.hosts.size(); ++i)
      out.push_back(static_cast<int>(i));
    return out;
  }
  for (const std::string& name : names) {
    const int index = state.spec.find_host(name);
    if (index < 0)
      throw InputError("command line", "--network", "hosts of the testbed " + state.spec.prefix,
                       name);
    out.push_back(index);
  }
  return out;
}

tb::ProbedTopology probe_hosts(const tb::State& state, const std::vector<int>& indices,
                               const tb::TopologyProbeRequest& request) {
  std::vector<tb::Endpoint> endpoints;
  std::vector<std::string> names;
  for (int i : indices) {
    const tb::SpecHost& host = state.spec.hosts[static_cast<std::size_t>(i)];
    endpoints.push_back({host.netns, host.address});  // where the host is, nothing of the links
    names.push_back(host.name);
  }
  tb::NamespaceProbes network(std::move(endpoints));
  return tb::probe_topology(network, names, request, progress_line);
}

}  // namespace

tb::ProbedTopology probe_testbed(const tb::State& state, const tb::TopologyProbeRequest& request) {
  return probe_hosts(state, testbed_hosts(state, {"all"}), request);
}

void run_network_probe(const NetworkProbeRequest& a, std::ostream& out) {
  if (a.hosts.empty())
    throw InputError("command line", "--network", "host names (or all, on the testbed)", "none");
  tb::ProbedTopology t;
  bool writer = true;
  if (a.mpi) {
    check_names(a, a.hosts);
    exec::MpiSession session(nullptr, nullptr);
    std::unique_ptr<exec::ProbeNetwork> network = exec::make_mpi_probe_network();
    if (network->host_count() != static_cast<int>(a.hosts.size()))
      throw InputError("command line", "--network",
                       fmt::format("one host name per MPI rank ({})", network->host_count()),
                       std::to_string(a.hosts.size()) + " names");
    writer = exec::mpi_probe_rank() == 0;
    t = tb::probe_topology(
        *network, a.hosts, a.probe, writer ? progress_line : [](const std::string&) {});
  } else {
    require_testbed_rights();
    tb::check_prefix(a.prefix, "command line");
    const tb::State state = tb::require_up(a.prefix);
    const std::vector<int> indices = testbed_hosts(state, a.hosts);
    std::vector<std::string> names;
    for (int i : indices)
      names.push_back(state.spec.hosts[static_cast<std::size_t>(i)].name);
    check_names(a, names);
    {  // the file must be writable before minutes of probing, not after
      std::ofstream probe_file(a.out, std::ios::app);
      if (!probe_file) throw InputError(a.out, "--out", "a writable file path", "cannot write");
    }
    t = probe_hosts(state, indices, a.probe);
  }
  if (!writer) return;
  write_file(a.out,
             tb::probed_platform_xml(
                 t, host_identities(t, a.servers), tb::NetworkCalibration(),
                 "names as probed; role server for --servers, the rest workers; node = the host "
                 "itself, the switch it hangs off in its prop switch (s0, s1, ...); speed 1 "
                 "Gflop/s, a placeholder: compute is not probed"),
             "--out");
  if (!a.json_out.empty()) write_file(a.json_out, tb::to_json(t).dump(1) + "\n", "--json-out");
  const model::Platform loaded = sim::load_platform(a.out);
  if (loaded.hosts.size() != t.hosts.size())
    throw std::runtime_error("probed platform " + a.out + " does not load with its hosts");
  out << fmt::format(
      "probed {} hosts in {:.0f} s: a tree of {} switch(es), {} directed links ({} limited a "
      "probe), {} of {} checked pairs of routes share a bottleneck as the tree says; wrote {}{}\n",
      t.hosts.size(), t.seconds, t.nodes - static_cast<int>(t.hosts.size()), t.links.size(),
      t.bounded_links(), t.agreeing_checks(), t.checks.size(), a.out,
      a.json_out.empty() ? "" : " and " + a.json_out);
  for (const std::string& w : t.warnings)
    out << "warning: " << w << "\n";
}

}  // namespace tauplan::study
