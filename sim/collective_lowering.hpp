// collective_lowering.hpp: collective algorithms as stages of point-to-point flows.
//
// The simulator turns every Collective op into a FlowProgram: stages of flows that start
// together; a stage ends when its last flow has arrived (a step barrier, as the alpha-beta
// formulas of model/ir/collective_*.cpp assume), and it may repeat (the 2(K-1) steps of a ring).
// Each algorithm is one file (lower_ring.cpp, ...) and one line in collective_lowering.cpp's
// registry, under the name model/ir/collective.hpp registers. Coarse granularity merges the
// repeats of a stage into one flow per (source, destination) carrying all their bytes, plus the
// latencies the merged steps would have paid; it agrees with step granularity when nothing else
// shares the links. A stage may end with work on hosts (a server's processing:
// model/ir/server_work.hpp). On a platform with a rendezvous protocol the simulator runs the stages
// host by host instead, with the protocol's messages (rendezvous.hpp). What it leaves out: the
// reduction arithmetic and chunk pipelining inside a step. This header does not include SimGrid.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/analytic/bottleneck_baseline.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/collective.hpp"

namespace tauplan::sim {

/// One transfer between two platform hosts (the bottleneck baseline's flow, model/'s).
using Flow = model::TrafficFlow;

/// Work a host does on what a stage delivered (a parameter server combining the pushes), in flop
/// at that host's speed.
struct HostWork {
  int host = -1;
  double flop = 0;
};

/// Flows that start together. The stage ends when all of them have arrived, then waits
/// `extra_latency_s` (latencies of merged steps, coarse mode only), and runs `repeat` times;
/// after its last repeat the hosts of `work_after` execute their work, all at once, each on its
/// host (sharing its cores with anything else running there), before the next stage starts.
struct FlowStage {
  std::string phase;  ///< "reduce-scatter", "push", "reduce level 2" ...
  std::vector<Flow> flows;
  long long repeat = 1;
  double extra_latency_s = 0;
  std::vector<HostWork> work_after;
};

enum class Granularity { Step, Coarse };

struct FlowProgram {
  /// Host of the actor that drives the collective: the parameter server or Spark driver for
  /// server algorithms, the group's first worker otherwise.
  int coordinator_host = -1;
  std::vector<FlowStage> stages;
  /// Flows the program starts in total (stages x repeats).
  long long flow_count() const;
};

class CollectiveLowering {
 public:
  virtual ~CollectiveLowering() = default;
  /// The model/ir/collective.hpp algorithm name it lowers.
  virtual const char* name() const = 0;
  /// Step-granularity stages of one call (coarsening is applied by lower_collective).
  virtual FlowProgram lower(const model::CollectiveCall& call,
                            const model::Platform& platform) const = 0;
};

/// The lowering registered under `name`; throws InputError (key "collective") if none is.
const CollectiveLowering& collective_lowering(const std::string& name,
                                              const std::string& file = "<job>");
/// All registered names, in registration order.
std::vector<std::string> collective_lowering_names();

/// Lowers one call at the given granularity.
FlowProgram lower_collective(const std::string& algorithm, const model::CollectiveCall& call,
                             const model::Platform& platform, Granularity granularity,
                             const std::string& file = "<job>");

/// Coarse form of a stage: one flow per (source, destination) with all repeats' bytes, and
/// extra latency (repeat - 1) x the longest route latency among its flows.
FlowStage coarsen(const FlowStage& stage, const model::Platform& platform);

// Building blocks shared by the lowerings (collective_lowering.cpp).

/// One ring step over `hosts` (i -> i+1 mod K) moving `bytes` per hop, repeated `repeat` times.
/// With K = 2 its two flows are two-way (Flow::two_way: each sends the other its chunk).
FlowStage ring_stage(const std::string& phase, const std::vector<int>& hosts, double bytes,
                     long long repeat);

}  // namespace tauplan::sim
