// shipped_platforms_test.cpp: every platforms/*.xml loads, routes every pair, and its GPU
// speeds are what its header says: catalog peak at the stated precision x the stated efficiency.
// Every platforms/clusters/*.yaml (cluster specs) has a valid shape, and the small one, generated,
// keeps the same conventions.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "model/inputs/cluster_spec_file.hpp"
#include "model/inputs/simgrid_xml.hpp"
#include "model/inputs/workload.hpp"
#include "sim/platform_loader.hpp"
#include "tests/sim/sim_test_support.hpp"

#ifndef TAUPLAN_PLATFORM_DIR
#define TAUPLAN_PLATFORM_DIR "platforms"
#endif

using namespace tauplan;

namespace {

// Returns "" when the platform keeps its conventions, else the first broken one.
std::string check_platform(const std::string& path) {
  const model::Platform platform = sim::load_platform(path);
  if (platform.worker_hosts().empty()) return "no worker host";
  for (const auto& host : platform.hosts) {
    if (host.role == model::HostRole::Server || host.gpu_model.empty()) continue;
    const auto& gpu = model::gpu_spec(host.gpu_model, path, "gpu_model");
    const auto precision = host.properties.find("precision");
    const auto efficiency = host.properties.find("efficiency");
    const bool profiled = host.properties.count("compute_profile") > 0;
    if (precision == host.properties.end() || (efficiency == host.properties.end() && !profiled))
      return host.name + ": missing precision, or efficiency and compute_profile props";
    // A host timed by a compute profile runs at its GPU's dense peak (the profile times its
    // transformer layers); any other at peak x efficiency.
    const double expected =
        gpu.peak_flops(precision->second) *
        (efficiency == host.properties.end() ? 1.0 : std::stod(efficiency->second));
    if (std::abs(host.speed_flops - expected) > 1e-9 * expected)
      return host.name + ": speed " + std::to_string(host.speed_flops) + " != peak x efficiency " +
             std::to_string(expected);
    if (host.gpu_memory_bytes <= 0 || host.gpu_memory_bytes > gpu.memory_bytes * 1.0001)
      return host.name + ": gpu_memory_bytes outside (0, catalog memory]";
    if (host.node.empty()) return host.name + ": no node";
  }
  // every pair of hosts has a route with a positive bandwidth
  for (size_t a = 0; a < platform.hosts.size(); ++a)
    for (size_t b = 0; b < platform.hosts.size(); ++b) {
      if (a == b) continue;
      const auto& route = platform.route(static_cast<int>(a), static_cast<int>(b));
      if (route.links.empty() || !(route.bandwidth_Bps > 0))
        return "no route " + platform.hosts[a].name + " -> " + platform.hosts[b].name;
    }
  return "";
}

}  // namespace

TEST_CASE("shipped platforms keep their documented conventions") {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TAUPLAN_PLATFORM_DIR)) {
    if (entry.path().extension() != ".xml") continue;
    const std::string path = entry.path().string();
    const auto result = test::in_child([&] { return check_platform(path); });
    INFO(path << ": " << result.kind << " " << result.text);
    CHECK(result.kind == "ok");
    CHECK(result.text.empty());
    ++checked;
  }
  CHECK(checked >= 8);
}

TEST_CASE("shipped cluster specs generate, the small one keeps the conventions") {
  namespace fs = std::filesystem;
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TAUPLAN_PLATFORM_DIR) / "clusters")) {
    const std::string path = entry.path().string();
    INFO(path);
    CHECK(model::cluster::cluster_shape(model::cluster::read_cluster_spec(path), path).gpus > 0);
    ++checked;
  }
  CHECK(checked >= 4);
  const std::string spec = std::string(TAUPLAN_PLATFORM_DIR) + "/clusters/dgx-h100-16n-1to1.yaml";
  const fs::path xml = fs::temp_directory_path() / "tauplan-shipped-dgx-h100-16n.xml";
  std::ofstream(xml) << model::simgrid_xml::to_xml(
      model::cluster::make_cluster_platform(model::cluster::read_cluster_spec(spec), spec));
  const auto result = test::in_child([&] { return check_platform(xml.string()); });
  INFO(result.kind << " " << result.text);
  CHECK(result.kind == "ok");
  CHECK(result.text.empty());
  fs::remove(xml);
}
