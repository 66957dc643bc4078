// platform_loader.hpp: loads a SimGrid XML platform into model::Platform, once per process.
//
// SimGrid holds one Engine and one platform per process, and its network model must be chosen
// before the platform is loaded. The first call starts the Engine (SimGrid's own logs silenced),
// sets the network configuration, loads the XML and converts it: hosts (speed and the <prop>s
// gpu_model, gpu_memory_bytes, node, role), links (bandwidth, latency, sharing policy) and routes
// through a RouteOracle that asks SimGrid's routing. Later calls with the same file and options
// return the same platform, so `predict` and `simulate` can run in one process. What it leaves
// out: SimGrid's disks, energy properties, profiles (they stay in SimGrid and act during a
// simulation), and loading a second, different platform (an InputError).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/inputs/platform.hpp"

namespace tauplan::sim {

/// The network models the simulator takes, its default first: {"CM02", "LV08"}.
std::vector<std::string> network_model_choices();

/// How SimGrid models the network. Chosen once per process, before the platform is loaded.
struct NetworkOptions {
  /// SimGrid's network/model: "CM02" (pure alpha-beta: a lone flow takes latency + size /
  /// bandwidth) or "LV08" (SimGrid's default, TCP-calibrated latency and bandwidth factors).
  std::string model = "CM02";
  /// network/crosstraffic: "auto" (off for CM02, so that closed forms hold; on for LV08),
  /// "on" (each flow also loads the reverse path with 5% of its size) or "off".
  std::string crosstraffic = "auto";
  /// network/TCP-gamma in bytes: the TCP window that caps a flow at gamma / (2 latency).
  /// Large by default so that fast links (RDMA, NVLink) are not silently capped.
  double tcp_gamma_bytes = 1e12;
  /// Names the source of these options in errors (job file, "<command line>").
  std::string origin = "<job>";
};

/// SimGrid's own arguments, as a SimGrid program takes them: `--cfg=NAME:VALUE` and `--log=SPEC`
/// (SimGrid's documentation lists both; `--log=root.thres:info` shows SimGrid's logs, which
/// tauplan otherwise silences).
struct SimGridArguments {
  std::vector<std::string> cfg;  ///< "NAME:VALUE", as after --cfg=
  std::vector<std::string> log;  ///< as after --log=
};

/// Checks SimGrid's arguments and keeps them for the Engine this process starts. SimGrid aborts
/// the process on some bad items (an unknown network model, a malformed log setting), so they are
/// tried first in a child process. Items that job keys own (network/model, network/crosstraffic,
/// network/TCP-gamma) are refused: the job says them, and the results record them. Throws
/// InputError("command line", "--cfg=ITEM" or "--log=ITEM", ...) with SimGrid's reason; also
/// when the Engine has already started.
void set_simgrid_arguments(const SimGridArguments& arguments);

/// Loads `xml_path` (starting the process's SimGrid Engine with `network` if needed).
/// Throws InputError naming the file (and the host and prop, for a bad property) when the file
/// is missing or malformed, when a prop value is wrong, or when another platform or other
/// network options were already loaded in this process.
model::Platform load_platform(const std::string& xml_path, const NetworkOptions& network = {});
/// Same, naming only the network model.
model::Platform load_platform(const std::string& xml_path, const std::string& network_model);

/// True once a platform has been loaded in this process.
bool platform_loaded();
/// The effective SimGrid configuration (the --cfg items we set, read back from SimGrid), e.g.
/// {"network/model": "CM02", "network/crosstraffic": "0", "network/TCP-gamma": "1e+12"}, and
/// each --cfg item given (as given); empty before the Engine starts.
std::map<std::string, std::string> engine_config();
/// The network model in force ("" before the Engine starts).
std::string network_model();
/// SimGrid's version, "3.32.0".
std::string simgrid_version();

}  // namespace tauplan::sim
