// sim_test_support.hpp: running SimGrid in a child process, fixtures, and small plans.
//
// SimGrid allows one Engine (and one platform) per process. ctest runs each TEST_CASE in its own
// process (catch_discover_tests), and every simulation here also runs in a forked child, so the
// test binary passes when run directly too. The child returns text through a pipe; assertions
// stay in the parent, where Catch2 sees them.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"
#include "model/convergence/convergence.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/strategy.hpp"
#include "sim/platform_loader.hpp"
#include "sim/simulator.hpp"
#include "tests/model/round_support.hpp"

#ifndef TAUPLAN_SIM_FIXTURES
#define TAUPLAN_SIM_FIXTURES "tests/sim/fixtures"
#endif

namespace tauplan::test {

/// What a child returned: how it ended ("ok", "InputError", "SimulationError", "error") and
/// its text (the result, or the exception's message).
struct ChildResult {
  std::string kind;
  std::string text;
  nlohmann::json json() const { return nlohmann::json::parse(text); }
};

/// Runs `body` in a forked child. Throws std::runtime_error if the child dies (a crash or an
/// abort inside SimGrid), so that a test fails instead of the whole binary.
inline ChildResult in_child(const std::function<std::string()>& body) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int fd[2];
  if (pipe(fd) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fd[0]);
    std::string message;
    try {
      message = "ok\n" + body();
    } catch (const InputError& e) {
      message = std::string("InputError\n") + e.what();
    } catch (const sim::SimulationError& e) {
      message = std::string("SimulationError\n") + e.what();
    } catch (const std::exception& e) {
      message = std::string("error\n") + e.what();
    }
    size_t written = 0;
    while (written < message.size()) {
      const ssize_t n = write(fd[1], message.data() + written, message.size() - written);
      if (n <= 0) _exit(3);
      written += static_cast<size_t>(n);
    }
    close(fd[1]);
    _exit(0);
  }
  close(fd[1]);
  std::string output;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd[0], buffer, sizeof buffer);
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("simulation child died (status " + std::to_string(status) + ")");
  const auto newline = output.find('\n');
  if (newline == std::string::npos) throw std::runtime_error("simulation child sent nothing");
  return ChildResult{output.substr(0, newline), output.substr(newline + 1)};
}

/// To run in a child (in_child): loads `platform_file`, plans `strategy` with `iterations`
/// serial steps, and returns the analytic row and the SimGrid row as a JSON array of two.
inline std::string analyze_and_simulate(const std::string& platform_file,
                                        const std::string& strategy,
                                        const model::StrategyOptions& o, const model::Workload& w,
                                        double iterations, const sim::SimOptions& sim_options) {
  const auto platform = sim::load_platform(platform_file);
  const model::FixedCounts convergence(iterations);
  const auto plan = model::make_plan(strategy, o, w, platform, convergence);
  const nlohmann::json out = {model::to_json(model::analyze(plan, platform)),
                              model::to_json(sim::simulate(plan, platform, sim_options))};
  return out.dump();
}

inline std::string fixture(const std::string& name) {
  return std::string(TAUPLAN_SIM_FIXTURES) + "/" + name;
}

/// The whole text of a file (a platform to copy with props added); empty if it cannot be read.
inline std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// `xml` (a shipped platform's text) with `props` (prop elements) first in its root Floyd zone,
/// such as a rendezvous protocol's; throws std::runtime_error if it has no such zone.
inline std::string with_root_zone_props(std::string xml, const std::string& props) {
  const std::string zone = "<zone id=\"world\" routing=\"Floyd\">";
  const size_t at = xml.find(zone);
  if (at == std::string::npos) throw std::runtime_error("no root Floyd zone in the platform");
  return xml.insert(at + zone.size(), props);
}

/// Round numbers so that times can be computed by hand: 1e6 parameters of 4 bytes
/// (N = 4e6 B), 1e10 flop per sample, three layers for gradient buckets.
inline model::Workload round_workload() {
  model::Workload w = round_numbers_workload(1e10);
  w.layers = {{"l0", 5e5, 5e9}, {"l1", 3e5, 3e9}, {"l2", 2e5, 2e9}};
  return w;
}

inline model::StrategyOptions options(int workers, double batch, int tau = 1,
                                      const std::string& collective = "ring") {
  model::StrategyOptions o = test_options(workers, batch, tau, collective);
  o.check_memory = false;
  o.bucket_bytes = 1.5e6;
  return o;
}

/// A plan of `strategy` with `iterations` serial steps (local-sgd: iterations / tau rounds).
inline model::Plan make_test_plan(const std::string& strategy, const model::StrategyOptions& o,
                                  const model::Platform& platform, double iterations) {
  const model::FixedCounts convergence(iterations);
  return model::make_plan(strategy, o, round_workload(), platform, convergence);
}

/// A plan that is only collectives: each entry is (algorithm, group of worker indices), all
/// independent of one another, over `worker_hosts` (platform host indices); one round.
inline model::Plan collectives_only_plan(
    const std::vector<int>& worker_hosts, const std::vector<int>& server_hosts, double bytes,
    const std::vector<std::pair<std::string, std::vector<int>>>& collectives) {
  model::Plan plan;
  plan.strategy = "collectives";
  plan.workers = static_cast<int>(worker_hosts.size());
  plan.worker_hosts = worker_hosts;
  plan.server_hosts = server_hosts;
  plan.rounds = 1;
  for (const auto& [algorithm, group] : collectives) {
    model::Op op;
    op.kind = model::OpKind::Collective;
    op.label = algorithm + " all-reduce";
    op.algorithm = algorithm;
    op.bytes = bytes;
    op.group = group;
    plan.add(op);
  }
  plan.collective = collectives.empty() ? "" : collectives.front().first;
  return plan;
}

/// The start of a test platform: the XML header, the root zone (Full routing) holding
/// `zone_props`, and hosts h0..h{k-1} at 1 Gf, the last a parameter server with `server`.
inline std::string platform_head(size_t k, const std::string& zone_props, bool server) {
  std::string xml =
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n  <zone id=\"world\" routing=\"Full\">\n" +
      zone_props;
  for (size_t i = 0; i < k; ++i)
    xml += "    <host id=\"h" + std::to_string(i) + "\" speed=\"1Gf\">" +
           (server && i + 1 == k ? "<prop id=\"role\" value=\"server\"/>" : "") + "</host>\n";
  return xml;
}

/// A crossbar of hosts h0..h{K-1} (platform_head's): host i's NIC nic-i is split duplex, of
/// bandwidths_Bps[i] and latencies_s[i]; the route from h_i to h_j is nic-i up then nic-j down,
/// so every message a host sends leaves over its one link. Written to /tmp under `tag` and the
/// process id; returns the path.
inline std::string crossbar_platform(const std::vector<double>& bandwidths_Bps,
                                     const std::vector<double>& latencies_s,
                                     const std::string& zone_props, bool server,
                                     const std::string& tag) {
  const size_t k = bandwidths_Bps.size();
  std::string xml = platform_head(k, zone_props, server);
  for (size_t i = 0; i < k; ++i)
    xml += fmt::format(
        "    <link id=\"nic-{}\" bandwidth=\"{:.17g}Bps\" latency=\"{:.17g}s\" "
        "sharing_policy=\"SPLITDUPLEX\"/>\n",
        i, bandwidths_Bps[i], latencies_s.at(i));
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j)
      if (i != j)
        xml += fmt::format(
            "    <route src=\"h{0}\" dst=\"h{1}\" symmetrical=\"NO\"><link_ctn id=\"nic-{0}\" "
            "direction=\"UP\"/><link_ctn id=\"nic-{1}\" direction=\"DOWN\"/></route>\n",
            i, j);
  xml += "  </zone>\n</platform>\n";
  const std::string path = fmt::format("/tmp/tauplan-{}-test-{}.xml", tag, getpid());
  std::ofstream(path) << xml;
  return path;
}

/// To run in a child (in_child): the simulated and analytic time of one collective over every
/// host of the platform at `path` (ps: the last host serves), and the platform's protocol and
/// packet size, as JSON (sim, analytic, rendezvous, eager, packet_bytes).
inline nlohmann::json one_collective(const std::string& path, const std::string& algorithm,
                                     double bytes, sim::Granularity granularity) {
  const model::Platform platform = sim::load_platform(path);
  const int k = static_cast<int>(platform.hosts.size());
  std::vector<int> workers, servers, group;
  for (int h = 0; h < k; ++h) {
    if (algorithm == "ps" && h + 1 == k) {
      servers.push_back(h);
      continue;
    }
    group.push_back(static_cast<int>(workers.size()));
    workers.push_back(h);
  }
  const model::Plan plan = collectives_only_plan(workers, servers, bytes, {{algorithm, group}});
  sim::SimOptions options;
  options.granularity = granularity;
  const model::ResultRow row = sim::simulate(plan, platform, options);
  model::CollectiveCall call;
  call.hosts = workers;
  call.servers = servers;
  call.bytes = bytes;
  return nlohmann::json{{"sim", row.round_s},
                        {"analytic", model::collective_algorithm(algorithm).time_s(call, platform)},
                        {"rendezvous", platform.protocol.rendezvous},
                        {"eager", platform.protocol.eager_limit_bytes},
                        {"packet_bytes", platform.packet_bytes}};
}

}  // namespace tauplan::test
