// cluster_generator_test.cpp: presets, shapes, bad specs and the XML of generated GPU clusters
// (model/inputs/cluster_generator.hpp). Routes through SimGrid:
// tests/sim/generated_platform_test.cpp.
#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <string>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/inputs/cluster_generator.hpp"
#include "model/inputs/simgrid_xml_check.hpp"
#include "model/inputs/workload.hpp"

using namespace tauplan;
namespace mc = tauplan::model::cluster;
namespace sx = tauplan::model::simgrid_xml;

namespace {

// 4 domains of 2 nodes of 4 GPUs, 2 pods, 2:1 at the leaves (the sim test's cluster too).
mc::ClusterSpec small_spec() {
  mc::ClusterSpec s = mc::preset("dgx-h100");
  s.nodes = 8;
  s.gpus_per_node = 4;
  s.leaf_down_ports = 2;
  s.domains_per_pod = 2;
  s.oversubscription = 2;
  return s;
}

void visit(const sx::Zone& zone, const std::function<void(const sx::Zone&, int)>& f, int depth) {
  f(zone, depth);
  for (const sx::Zone& child : zone.zones)
    visit(child, f, depth + 1);
}

}  // namespace

TEST_CASE("cluster presets carry every number with its source", "[cluster_generator]") {
  CHECK(mc::preset_names() ==
        std::vector<std::string>{"dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200"});
  for (const std::string& name : mc::preset_names()) {
    INFO(name);
    const mc::ClusterSpec s = mc::preset(name);
    CHECK(s.preset == name);
    CHECK(model::gpu_spec(s.gpu_model).peak_bf16_flops > 0);
    CHECK(s.gpus_per_node == 8);
    for (const std::string* source :
         {&s.gpu_source, &s.efficiency_source, &s.nvlink_source, &s.nvlink_latency_source,
          &s.nic_source, &s.nic_latency_source, &s.switch_latency_source, &s.leaf_source})
      CHECK(source->size() > 20);
  }
  const mc::ClusterSpec a100 = mc::preset("dgx-a100");
  CHECK(a100.gpu_model == "A100-SXM4-80GB");
  CHECK(a100.efficiency == 0.633);  // platforms/selene-a100.xml's fit
  CHECK(a100.nvlink_bandwidth_Bps == 300e9);
  CHECK(a100.nic_bandwidth_Bps == 25e9);
  const mc::ClusterSpec h100 = mc::preset("dgx-h100");
  CHECK(h100.efficiency == 0.777);  // 769 / 989.5, measured bf16 GEMM
  CHECK(h100.nvlink_bandwidth_Bps == 450e9);
  CHECK(h100.nic_bandwidth_Bps == 50e9);
  CHECK(mc::preset("hgx-h200").gpu_model == "H200-SXM-141GB");
  CHECK(mc::preset("dgx-b200").nvlink_bandwidth_Bps == 900e9);
  CHECK_THROWS_WITH(mc::preset("dgx-z9", "command line", "--preset"),
                    Catch::Contains("command line: --preset: expected one of dgx-a100, dgx-h100"));
}

TEST_CASE("cluster shape: domains, pods, uplinks and bisection", "[cluster_generator]") {
  mc::ClusterSpec s = mc::preset("dgx-h100");
  s.nodes = 2048;
  s.oversubscription = 2;
  mc::ClusterShape shape = mc::cluster_shape(s);
  CHECK(shape.gpus == 16384);
  CHECK(shape.nodes_per_domain == 32);  // rail: one node per leaf down port
  CHECK(shape.domains == 64);
  CHECK(shape.pods == 1);
  CHECK(shape.domain_uplink_Bps == Approx(32 * 8 * 50e9 / 2));
  CHECK(shape.pod_uplink_Bps == 0);
  CHECK(shape.bisection_Bps == Approx(32 * 6.4e12));
  CHECK(shape.full_bisection_Bps == Approx(8192 * 50e9));
  CHECK(shape.host_speed_flops == 989.5e12 * 0.777);

  s.domains_per_pod = 16;
  s.core_oversubscription = 4;
  shape = mc::cluster_shape(s);
  CHECK(shape.pods == 4);
  CHECK(shape.pod_uplink_Bps == Approx(16 * 256 * 50e9 / 4));
  CHECK(shape.bisection_Bps == Approx(2 * 16 * 256 * 50e9 / 4));  // 2 pods' uplinks

  s.wiring = mc::Wiring::Plain;  // 32 ports / 8 NICs: 4 nodes per leaf
  s.domains_per_pod = 0;
  shape = mc::cluster_shape(s);
  CHECK(shape.nodes_per_domain == 4);
  CHECK(shape.domains == 512);

  s.nodes = 3;  // fewer than a leaf: one partial domain, non-blocking
  shape = mc::cluster_shape(s);
  CHECK(shape.domains == 1);
  CHECK(shape.nodes_per_domain == 3);
  CHECK(shape.bisection_Bps == shape.full_bisection_Bps);
}

TEST_CASE("bad cluster specs name the field and what was expected", "[cluster_generator]") {
  const auto fails = [](const std::function<void(mc::ClusterSpec&)>& change,
                        const std::string& fragment) {
    mc::ClusterSpec s = mc::preset("dgx-h100");
    s.nodes = 64;
    change(s);
    INFO(fragment);
    CHECK_THROWS_WITH(mc::cluster_shape(s, "command line", "--"), Catch::Contains(fragment));
  };
  fails([](auto& s) { s.nodes = 0; }, "command line: --nodes: expected a whole number in [1,");
  fails([](auto& s) { s.nodes = 33; }, "--nodes: expected at most 32 or a multiple of 32");
  fails([](auto& s) { s.oversubscription = 0.5; }, "--oversubscription: expected a ratio");
  fails([](auto& s) { s.core_oversubscription = 0; }, "--core-oversubscription: expected");
  fails([](auto& s) { s.gpu_model = "V100-SXM2-16GB"; }, "--gpu: expected a GPU of model/");
  fails([](auto& s) { s.gpu_model = "H900"; }, "got 'H900'");
  fails([](auto& s) { s.efficiency = 1.5; }, "--efficiency: expected a fraction");
  fails([](auto& s) { s.gpus_per_node = 0; }, "--gpus-per-node: expected a whole number");
  fails([](auto& s) { s.nic_bandwidth_Bps = 0; }, "--nic-bandwidth: expected B/s");
  fails([](auto& s) { s.switch_latency_s = -1; }, "--switch-latency: expected seconds");
  fails(
      [](auto& s) {
        s.wiring = mc::Wiring::Plain;
        s.leaf_down_ports = 20;
      },
      "--leaf-down-ports: expected a multiple of gpus_per_node (8)");
  fails(
      [](auto& s) {
        s.nodes = 2048;
        s.domains_per_pod = 3;
      },
      "--domains-per-pod: expected a divisor of the 64 leaf domains");
  CHECK_THROWS_WITH(mc::parse_wiring("star", "command line", "--wiring"),
                    Catch::Contains("--wiring: expected rail"));
}

TEST_CASE("a generated cluster: zones, hosts, props and the checker", "[cluster_generator]") {
  const mc::ClusterSpec spec = small_spec();
  const sx::Platform p = mc::make_cluster_platform(spec);
  std::vector<std::string> zones;
  int hosts = 0;
  visit(
      p.root,
      [&](const sx::Zone& z, int depth) {
        CHECK(z.routing == (z.id == "links" ? "None" : "Full"));
        zones.push_back(std::to_string(depth) + ":" + z.id);
        for (const sx::Host& h : z.hosts) {
          ++hosts;
          CHECK(h.speed_flops == 989.5e12 * 0.777);
          std::set<std::string> ids;
          for (const sx::Prop& prop : h.props)
            ids.insert(prop.id);
          CHECK(ids == std::set<std::string>{"gpu_model", "gpu_memory_bytes", "precision",
                                             "efficiency", "compute_source", "node", "role"});
          CHECK(h.props[5].value + "-gpu" == h.id.substr(0, h.id.find("-gpu") + 4));
        }
      },
      0);
  CHECK(hosts == 32);
  // Pods, domains, nodes, and the gateway zones (a leaf's, a spine's); every link in `links`.
  CHECK(zones == std::vector<std::string>{"0:world",   "1:links",    "1:p0", "2:d0", "3:n0",
                                          "3:n1",      "3:d0-leaf",  "2:d1", "3:n2", "3:n3",
                                          "3:d1-leaf", "2:p0-spine", "1:p1", "2:d2", "3:n4",
                                          "3:n5",      "3:d2-leaf",  "2:d3", "3:n6", "3:n7",
                                          "3:d3-leaf", "2:p1-spine"});
  CHECK(p.root.zones[0].links.size() == 32 * 2 + 4 * 2 + 2 * 2 + 1);  // all links, nowhere else
  const sx::Zone& n0 = p.root.zones[1].zones[0].zones[0];
  CHECK(n0.routes.size() == 6 + 4);  // every GPU pair, every GPU to the gateway
  CHECK(n0.hosts[0].props[0].value == "H100-SXM5-80GB");
  CHECK(n0.hosts[0].props[1].value == "85899345920");
  CHECK(n0.hosts[0].props[3].value == "0.777");
  const std::string xml = sx::to_xml(p);
  CHECK(model::check_simgrid_platform_xml(xml, "small.xml").hosts == 32);
  CHECK(xml.find("measured peak-GEMM fraction, an upper bound for a layer") != std::string::npos);
}

TEST_CASE("16,384 and 24,576 GPUs pass the checker within the loader's file limit",
          "[cluster_generator]") {
  for (int nodes : {2048, 3072}) {
    mc::ClusterSpec s = mc::preset("dgx-h100");
    s.nodes = nodes;
    s.oversubscription = 2;
    s.domains_per_pod = nodes == 3072 ? 32 : 0;
    const std::string xml = sx::to_xml(mc::make_cluster_platform(s));
    INFO(nodes << " nodes: " << xml.size() << " bytes");
    CHECK(xml.size() < model::kMaxInputFileBytes);
    CHECK(model::check_simgrid_platform_xml(xml, "big.xml").hosts ==
          static_cast<std::size_t>(nodes * 8));
  }
}
