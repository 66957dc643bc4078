// fuzz_inventory_yaml.cpp: libFuzzer target for planning inventories
// (study/plan/inventory.hpp). An inventory that loads is also built into its largest selection,
// both as a model::Platform and as SimGrid XML, and that XML must pass the platform checker
// (model/inputs/simgrid_xml_check.hpp): what tauplan writes, tauplan must read back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/base/error.hpp"
#include "model/inputs/simgrid_xml_check.hpp"
#include "study/plan/inventory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tauplan::study::Inventory inventory;
  try {
    inventory = tauplan::study::parse_inventory_yaml(text, "fuzz.yaml", "");
    const auto convergence = tauplan::study::target_convergence(inventory);
    (void)convergence->serial_steps(64);
  } catch (const tauplan::InputError&) {
    return 0;
  }
  // The largest selection, kept small enough to build quickly.
  tauplan::study::Selection selection;
  int gpus = 0;
  for (const auto& type : inventory.node_types) {
    const int nodes = std::min(type.nodes, std::max(0, 64 - gpus) / type.gpus_per_node);
    selection.nodes.push_back(nodes);
    gpus += nodes * type.gpus_per_node;
  }
  selection.servers = std::min(inventory.servers.max, 4);
  const tauplan::model::Platform platform =
      tauplan::study::make_selection_platform(inventory, selection);
  if (platform.hosts.size() >= 2) (void)platform.route(0, 1);
  const std::string xml = tauplan::study::selection_platform_xml(inventory, selection);
  try {
    tauplan::model::check_simgrid_platform_xml(xml, "selection.xml");
  } catch (const tauplan::InputError& e) {
    // An empty selection writes a platform without hosts, which the checker may refuse as such;
    // anything else the writer wrote is a finding.
    if (gpus > 0 || selection.servers > 0) std::abort();
  }
  return 0;
}
