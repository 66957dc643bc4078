// private_links.hpp: which communication ops of a round have their links to themselves, and
// which of those are copies of one another, so that the simulator runs the first copy as flows
// and takes its time for the others (memoised private collectives).
//
// Why it is exact: SimGrid's network models are deterministic fluid models, so a set of flows
// that no other flow touches takes a time that depends only on the flows themselves (bytes,
// start pattern) and on the bandwidth, latency and sharing policy of the links they cross. Two
// ops whose programs match stage for stage, flow for flow, with their routes' links alike in
// bandwidth, latency, policy and in which flows share which link (links renamed in order of
// first use), take the same time when each runs alone on its links. An op runs alone on its
// links when every other op that uses one of them is ordered with it: the simulator runs one
// before the other (a dependency path through the round, or one worker's sequence). The tensor
// group's all-reduces of a layout inside one NVLink domain are the case this is for: thousands
// of calls, one chain per group, on links nobody else uses.
//
// What it leaves out: links whose bandwidth changes over time (profiles), the rendezvous
// protocol (its handshakes meet other hosts' steps) and a second job beside this one: the caller
// turns the analysis off then. Order is proved only by short paths (a bounded search through
// successors and worker sequences); an op it cannot prove ordered is not private, so the
// analysis can only miss a saving, never change a result. This header does not include SimGrid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/inputs/platform.hpp"
#include "sim/collective_lowering.hpp"

namespace tauplan::sim {

/// The view of a round's ops that the analysis needs. `links[i]` are the platform links that op
/// i's flows cross (empty for an op without flows); `succs[i]` its successors in the round's
/// DAG; `next_on_worker[i]` the op its worker runs right after it (-1 if none). Ops are numbered
/// in a topological order consistent with both.
struct RoundOrder {
  std::vector<std::vector<int>> links;
  std::vector<std::vector<int>> succs;
  std::vector<int> next_on_worker;
};

/// private[i]: every other op that shares a link with op i is proved ordered with it (before or
/// after): each link op i crosses has users that form a chain. Ops without links are false. Ops
/// are indexed in topological order.
std::vector<bool> private_link_ops(const RoundOrder& order);

/// The platform links a program's flows cross, sorted, without repeats.
std::vector<int> program_links(const FlowProgram& program, const model::Platform& platform);

/// A key equal for two programs exactly when they take the same time alone on their links (see
/// the file comment): stages, repeats, extra latencies, bytes, and each flow's route as the
/// bandwidth, latency and sharing of its links, the links renamed in order of first use.
std::string program_signature(const FlowProgram& program, const model::Platform& platform);

}  // namespace tauplan::sim
