// sg_engine.hpp: sim/'s private view of the process's SimGrid Engine (not for cli/ or model/).
//
// One Engine per process: platform_loader.cpp creates it and keeps the loaded platform with
// the SimGrid host behind every model::Platform host index. The simulator reads them here.
// What it leaves out: everything public; only sim/*.cpp and sim tests include this header.
#pragma once

#include <simgrid/s4u.hpp>

#include <string>
#include <vector>

#include "model/inputs/platform.hpp"

namespace tauplan::sim::detail {

/// The Engine, or nullptr before the first load_platform.
simgrid::s4u::Engine* engine();
/// The SimGrid host of each model::Platform host index of the loaded platform.
const std::vector<simgrid::s4u::Host*>& loaded_hosts();
/// Source file (as given) of the loaded platform, "" when none.
const std::string& loaded_source_file();
/// True when a link of the loaded platform has a bandwidth, latency or state profile (its
/// capacity changes over time), judged from the XML text.
bool loaded_platform_has_link_profiles();
/// True when a link of the loaded platform has a latency profile (latency_file).
bool loaded_platform_has_latency_profiles();
/// Hash of the loaded platform (model::fnv1a_hex of its bytes), "" when none.
const std::string& loaded_source_hash();

/// Silences SimGrid's logs (root.thres:critical) and starts the Engine when not started yet,
/// with the given --cfg items (each "name:value"), set before any platform is loaded.
simgrid::s4u::Engine& start_engine(const std::vector<std::string>& config_items);

/// Runs the Engine until no actor is left; throws SimulationError (naming `what`) when SimGrid
/// reports a deadlock or actors are left behind (SimGrid itself returns normally and exits 0).
void run_engine_checked(const std::string& what);

}  // namespace tauplan::sim::detail
