// cluster_spec_file_test.cpp: cluster specs in YAML (model/inputs/cluster_spec_file.hpp): a preset
// with overrides and their sources, every shipped platforms/clusters/*.yaml, and each bad input as
// one InputError naming the file and the key. Loading a generated spec through SimGrid:
// tests/sim/cluster_spec_platform_test.cpp; through a job: tests/cli/platform_cli_test.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "model/base/error.hpp"
#include "model/inputs/cluster_spec_file.hpp"

#ifndef TAUPLAN_SOURCE_DIR
#define TAUPLAN_SOURCE_DIR "."
#endif

using namespace tauplan;
namespace mc = tauplan::model::cluster;

namespace {

constexpr const char* kFile = "spec.yaml";

// The InputError's one line, or "" when `text` parses.
std::string error_of(const std::string& text) {
  try {
    mc::parse_cluster_spec(text, kFile);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cluster spec: a preset, nodes and overrides with their sources", "[cluster_spec]") {
  const mc::ClusterSpec s = mc::parse_cluster_spec(
      "# a comment\npreset: dgx-a100\nnodes: 8\nwiring: plain\ngpus_per_node: 4\n"
      "gpu: H200-SXM-141GB\nefficiency: 0.5\nnvlink_bandwidth: 100GBps\nnic_bandwidth: 400Gbps\n"
      "nvlink_latency: 1us\nnic_latency: 3us\nswitch_latency: 250ns\nleaf_down_ports: 8\n"
      "oversubscription: 2\ndomains_per_pod: 2\ncore_oversubscription: 4\n",
      kFile);
  CHECK(s.preset == "dgx-a100");
  CHECK(s.nodes == 8);
  CHECK(s.wiring == mc::Wiring::Plain);
  CHECK(s.gpus_per_node == 4);
  CHECK(s.gpu_model == "H200-SXM-141GB");
  CHECK(s.efficiency == 0.5);
  CHECK(s.nvlink_bandwidth_Bps == Approx(100e9));
  CHECK(s.nic_bandwidth_Bps == Approx(50e9));
  CHECK(s.nvlink_latency_s == Approx(1e-6));
  CHECK(s.nic_latency_s == Approx(3e-6));
  CHECK(s.switch_latency_s == Approx(0.25e-6));
  CHECK(s.leaf_down_ports == 8);
  CHECK(s.oversubscription == 2);
  CHECK(s.domains_per_pod == 2);
  CHECK(s.core_oversubscription == 4);
  for (const std::string* source :
       {&s.gpu_source, &s.efficiency_source, &s.nvlink_source, &s.nvlink_latency_source,
        &s.nic_source, &s.nic_latency_source, &s.switch_latency_source, &s.leaf_source})
    CHECK(*source == "given in spec.yaml");
  CHECK(mc::override_keys().size() == 13);

  // Keys left out keep the preset's numbers and sources.
  const mc::ClusterSpec plain = mc::parse_cluster_spec("preset: dgx-h100\nnodes: 64\n", kFile);
  const mc::ClusterSpec h100 = mc::preset("dgx-h100");
  CHECK(plain.nic_bandwidth_Bps == h100.nic_bandwidth_Bps);
  CHECK(plain.nic_source == h100.nic_source);
  CHECK(plain.oversubscription == 1);
  CHECK(mc::cluster_shape(plain).gpus == 512);
}

TEST_CASE("cluster spec: read from a file, .yaml and .yml are specs", "[cluster_spec]") {
  const auto path = std::filesystem::temp_directory_path() / "tauplan-cluster-spec-test.yaml";
  std::ofstream(path) << "preset: hgx-h200\nnodes: 4\nnic_latency: 1us\n";
  const mc::ClusterSpec s = mc::read_cluster_spec(path.string());
  CHECK(s.gpu_model == "H200-SXM-141GB");
  CHECK(s.nic_latency_source == "given in " + path.string());
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(mc::read_cluster_spec(path.string()),
                    Catch::StartsWith(path.string() + ": platform: expected a readable file"));
  CHECK(mc::is_cluster_spec_path("a/b.yaml"));
  CHECK(mc::is_cluster_spec_path("b.yml"));
  CHECK_FALSE(mc::is_cluster_spec_path("b.xml"));
  CHECK_FALSE(mc::is_cluster_spec_path("yaml"));
  CHECK_FALSE(mc::is_cluster_spec_path(".yaml"));
}

TEST_CASE("cluster spec: the shipped platforms/clusters/*.yaml have their GPUs", "[cluster_spec]") {
  const std::map<std::string, int> gpus = {{"dgx-a100-384n-2to1.yaml", 3072},
                                           {"dgx-h100-2048n-2to1.yaml", 16384},
                                           {"dgx-h100-128n-1to1.yaml", 1024},
                                           {"dgx-h100-16n-1to1.yaml", 128}};
  int checked = 0;
  const auto folder = std::filesystem::path(TAUPLAN_SOURCE_DIR) / "platforms" / "clusters";
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string path = entry.path().string();
    INFO(path);
    REQUIRE(mc::is_cluster_spec_path(path));
    const mc::ClusterSpec spec = mc::read_cluster_spec(path);
    const mc::ClusterShape shape = mc::cluster_shape(spec, path);
    const auto expected = gpus.find(entry.path().filename().string());
    if (expected != gpus.end()) CHECK(shape.gpus == expected->second);
    ++checked;
  }
  CHECK(checked >= 4);
  const mc::ClusterShape a100 =
      mc::cluster_shape(mc::read_cluster_spec((folder / "dgx-a100-384n-2to1.yaml").string()));
  CHECK(a100.domains == 12);
  CHECK(a100.bisection_Bps == Approx(0.5 * a100.full_bisection_Bps));
}

TEST_CASE("cluster spec: each bad input is one InputError naming the file and the key",
          "[cluster_spec]") {
  const std::string ok = "preset: dgx-h100\nnodes: 64\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {ok + "nodez: 4\n",
       "spec.yaml: nodez: expected one of the known keys (preset, nodes, wiring"},
      {"nodes: 4\n", "spec.yaml: preset: expected a value"},
      {"preset: dgx-h100\n", "spec.yaml: nodes: expected a value"},
      {"preset: dgx-z9\nnodes: 4\n", "spec.yaml: preset: expected one of dgx-a100, dgx-h100"},
      {"preset: [dgx-h100]\nnodes: 4\n", "spec.yaml: preset: expected a single value, got a list"},
      {"preset: dgx-h100\nnodes: many\n", "spec.yaml: nodes: expected a whole number, got 'many'"},
      {"preset: dgx-h100\nnodes: 4.5\n", "spec.yaml: nodes: expected a whole number, got '4.5'"},
      {"preset: dgx-h100\nnodes:\n", "spec.yaml: nodes: expected a single value, got nothing"},
      {"preset: dgx-h100\nnodes: 40\n",
       "spec.yaml: nodes: expected at most 32 or a multiple of 32"},
      {"preset: dgx-h100\nnodes: 0\n", "spec.yaml: nodes: expected a whole number in [1, "},
      {ok + "nic_bandwidth: 400\n",
       "spec.yaml: nic_bandwidth: expected a bandwidth with its unit (400Gbps, 450GBps), got "
       "'400' (no unit)"},
      {ok + "switch_latency: 0.5\n",
       "spec.yaml: switch_latency: expected a time with its unit (1.4us, 500ns), got '0.5' (no "
       "unit)"},
      {ok + "nvlink_bandwidth: 1.4us\n", "spec.yaml: nvlink_bandwidth: expected"},
      {ok + "nic_latency: -1us\n", "spec.yaml: nic_latency: expected a latency >= 0"},
      {ok + "efficiency: high\n", "spec.yaml: efficiency: expected a number, got 'high'"},
      {ok + "efficiency: 1.5\n", "spec.yaml: efficiency: expected a fraction"},
      {ok + "oversubscription: {a: 1}\n",
       "spec.yaml: oversubscription: expected a single value, got a map"},
      {ok + "oversubscription: 0.5\n", "spec.yaml: oversubscription: expected a ratio"},
      {ok + "wiring: star\n", "spec.yaml: wiring: expected rail"},
      {ok + "gpu: H900\n", "spec.yaml: gpu: expected a GPU of model/catalog/gpus.yaml"},
      {ok + "leaf_down_ports: 7.5\n", "spec.yaml: leaf_down_ports: expected a whole number"},
      {"preset: dgx-h100\nnodes: 128\ndomains_per_pod: 3\n",
       "spec.yaml: domains_per_pod: expected a divisor"},
      {ok + "nodes: 8\n", "spec.yaml: nodes: expected a key given once"},
      {"- preset\n", "spec.yaml: (document): expected a map of cluster keys"},
      {"preset: [\n", "spec.yaml: line"},
  };
  for (const auto& [text, expected] : cases) {
    INFO(text);
    const std::string error = error_of(text);
    CHECK_THAT(error, Catch::StartsWith(expected));
    CHECK(error.find('\n') == std::string::npos);
  }
}
