// generated_platform_test.cpp: a cluster from model/inputs/cluster_generator.hpp, loaded by SimGrid
// (sim::load_platform): the exact routes inside a node, a leaf domain, a pod and across pods,
// derived here by hand, and every host's props. A hidden test ([.scale]) times the load of
// 16,384 GPUs.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>

#include "model/inputs/cluster_generator.hpp"
#include "sim/platform_loader.hpp"
#include "tests/sim/cluster_fixture.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;
namespace mc = tauplan::model::cluster;

namespace {

// dgx-h100's numbers (NVLink 450 GB/s and 1.4 us, NIC 50 GB/s and 2 us, switch hop 0.5 us) on
// 4 leaf domains of 2 nodes of 4 GPUs, 2 domains per pod (2 pods), 2:1 at the leaves.
mc::ClusterSpec small_spec(double oversubscription) {
  mc::ClusterSpec s = mc::preset("dgx-h100");
  s.nodes = 8;
  s.gpus_per_node = 4;
  s.leaf_down_ports = 2;
  s.domains_per_pod = 2;
  s.oversubscription = oversubscription;
  return s;
}

// {"links": [names], "latency": s, "bandwidth": B/s} for each pair, through SimGrid's routing.
nlohmann::json routes(const model::Platform& p,
                      const std::vector<std::pair<std::string, std::string>>& pairs) {
  nlohmann::json out;
  for (const auto& [from, to] : pairs) {
    const model::Route& r = p.route(p.find_host(from), p.find_host(to));
    nlohmann::json names = nlohmann::json::array();
    for (int l : r.links)
      names.push_back(p.links[static_cast<size_t>(l)].name);
    out[from + ">" + to] = {{"links", names}, {"latency", r.latency_s}, {"bw", r.bandwidth_Bps}};
  }
  return out;
}

void check_route(const nlohmann::json& r, const std::vector<std::string>& links, double latency,
                 double bandwidth) {
  CHECK(r["links"].get<std::vector<std::string>>() == links);
  CHECK(r["latency"].get<double>() == Approx(latency).epsilon(1e-12));
  CHECK(r["bw"].get<double>() == Approx(bandwidth).epsilon(1e-12));
}

}  // namespace

TEST_CASE("generated cluster: SimGrid routes inside a node, a domain, a pod and across pods",
          "[generated_platform]") {
  const std::string file = test::write_cluster_xml(small_spec(2), "small.xml");
  const auto result = test::in_child([&] {
    const model::Platform p = sim::load_platform(file);
    nlohmann::json out = routes(p, {{"n0-gpu1", "n0-gpu3"},
                                    {"n0-gpu2", "n1-gpu2"},
                                    {"n1-gpu0", "n2-gpu3"},
                                    {"n3-gpu1", "n6-gpu2"},
                                    {"n6-gpu2", "n3-gpu1"}});
    out["hosts"] = p.hosts.size();
    return out.dump();
  });
  REQUIRE(result.kind == "ok");
  const auto out = result.json();
  CHECK(out["hosts"] == 32);
  // Same node: the two NVLinks, 2 x 1.4 us, 450 GB/s.
  check_route(out["n0-gpu1>n0-gpu3"], {"n0-gpu1-nvlink_UP", "n0-gpu3-nvlink_DOWN"}, 2.8e-6, 450e9);
  // Same domain: NIC, one leaf hop, NIC: 2 + 0.5 + 2 us, 50 GB/s.
  check_route(out["n0-gpu2>n1-gpu2"], {"n0-gpu2-nic_UP", "d0-leaf", "n1-gpu2-nic_DOWN"}, 4.5e-6,
              50e9);
  // Other domain of the pod: leaf, spine, leaf (3 hops); domain uplink 2 nodes x 4 x 50 GB/s
  // / 2 = 200 GB/s, so the NIC stays the narrowest.
  check_route(out["n1-gpu0>n2-gpu3"],
              {"n1-gpu0-nic_UP", "d0-leaf", "d0-uplink_UP", "p0-spine", "d1-uplink_DOWN", "d1-leaf",
               "n2-gpu3-nic_DOWN"},
              5.5e-6, 50e9);
  // Other pod: leaf, spine, core, spine, leaf (5 hops).
  check_route(out["n3-gpu1>n6-gpu2"],
              {"n3-gpu1-nic_UP", "d1-leaf", "d1-uplink_UP", "p0-spine", "p0-uplink_UP", "core",
               "p1-uplink_DOWN", "p1-spine", "d3-uplink_DOWN", "d3-leaf", "n6-gpu2-nic_DOWN"},
              6.5e-6, 50e9);
  check_route(out["n6-gpu2>n3-gpu1"],
              {"n6-gpu2-nic_UP", "d3-leaf", "d3-uplink_UP", "p1-spine", "p1-uplink_UP", "core",
               "p0-uplink_DOWN", "p0-spine", "d1-uplink_DOWN", "d1-leaf", "n3-gpu1-nic_DOWN"},
              6.5e-6, 50e9);
}

TEST_CASE("generated cluster: an oversubscribed uplink is the narrowest link across domains",
          "[generated_platform]") {
  // 16:1: the domain uplink is 2 x 4 x 50 GB/s / 16 = 25 GB/s; the pod uplink 800 GB/s (1:1).
  const std::string file = test::write_cluster_xml(small_spec(16), "oversubscribed.xml");
  const auto result = test::in_child([&] {
    const model::Platform p = sim::load_platform(file);
    return routes(p, {{"n0-gpu0", "n1-gpu0"}, {"n0-gpu0", "n3-gpu0"}, {"n0-gpu0", "n7-gpu0"}})
        .dump();
  });
  REQUIRE(result.kind == "ok");
  const auto out = result.json();
  CHECK(out["n0-gpu0>n1-gpu0"]["bw"].get<double>() == Approx(50e9));
  CHECK(out["n0-gpu0>n3-gpu0"]["bw"].get<double>() == Approx(25e9));
  CHECK(out["n0-gpu0>n7-gpu0"]["bw"].get<double>() == Approx(25e9));
}

TEST_CASE("generated cluster: every host has its props through the loader",
          "[generated_platform]") {
  const std::string file = test::write_cluster_xml(small_spec(2), "props.xml");
  const auto result = test::in_child([&] {
    const model::Platform p = sim::load_platform(file);
    nlohmann::json out = nlohmann::json::array();
    for (const model::Host& h : p.hosts)
      out.push_back({{"name", h.name},
                     {"speed", h.speed_flops},
                     {"gpu", h.gpu_model},
                     {"memory", h.gpu_memory_bytes},
                     {"node", h.node},
                     {"worker", h.role == model::HostRole::Worker},
                     {"props", h.properties}});
    return out.dump();
  });
  REQUIRE(result.kind == "ok");
  const auto hosts = result.json();
  REQUIRE(hosts.size() == 32);
  for (const auto& h : hosts) {
    INFO(h.dump());
    const std::string name = h["name"];
    CHECK(h["speed"].get<double>() == 989.5e12 * 0.777);
    CHECK(h["gpu"] == "H100-SXM5-80GB");
    CHECK(h["memory"].get<double>() == 85899345920.0);
    CHECK(h["node"] == name.substr(0, name.find("-gpu")));
    CHECK(h["worker"] == true);
    CHECK(h["props"]["precision"] == "bf16");
    CHECK(h["props"]["efficiency"] == "0.777");
    CHECK(h["props"]["compute_source"].get<std::string>().find(
              "measured peak-GEMM fraction, an upper bound for a layer") != std::string::npos);
  }
  CHECK(hosts[4]["name"] == "n1-gpu0");  // natural order
}

// Load time and peak memory of the loading process (SimGrid's parse and seal, tauplan's checker
// and conversion), and two routes, at 16,384 and 24,576 GPUs.
static nlohmann::json time_load(const std::string& file) {
  const auto t0 = std::chrono::steady_clock::now();
  const model::Platform p = sim::load_platform(file);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto r = routes(p, {{"n0-gpu0", "n2047-gpu7"}, {"n5-gpu3", "n6-gpu3"}});
  std::ifstream status("/proc/self/status");
  std::string line;
  std::string peak;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) peak = line.substr(6);
  return {{"load_s", load_s},
          {"peak_rss", peak},
          {"hosts", p.hosts.size()},
          {"links", p.links.size()},
          {"routes", r}};
}

TEST_CASE("generated cluster: 16,384 and 24,576 GPUs load in seconds", "[.scale]") {
  for (int nodes : {2048, 3072}) {
    mc::ClusterSpec s = mc::preset("dgx-h100");
    s.nodes = nodes;
    s.oversubscription = 2;
    s.domains_per_pod = nodes == 3072 ? 32 : 0;
    const std::string file = "/tmp/tauplan-generated-" + std::to_string(::getpid()) + "-" +
                             std::to_string(nodes) + "-nodes.xml";
    // Generated in a child too, so that the loading child starts from a small parent.
    const auto generated = test::in_child([&] {
      const auto start = std::chrono::steady_clock::now();
      std::ofstream(file) << model::simgrid_xml::to_xml(mc::make_cluster_platform(s));
      return std::to_string(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    });
    REQUIRE(generated.kind == "ok");
    const auto result = test::in_child([&] { return time_load(file).dump(); });
    REQUIRE(result.kind == "ok");
    const auto out = result.json();
    WARN(nodes * 8 << " GPUs: generate and write " << generated.text << " s; " << out.dump());
    CHECK(out["hosts"] == nodes * 8);
    CHECK(out["load_s"].get<double>() < 60);
  }
}
