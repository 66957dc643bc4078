// layout_program.cpp: reads one rank's program out of a layout's Plan (exec/layout_program.hpp).
#include "exec/layout_program.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace tauplan::exec {
namespace {

[[noreturn]] void refuse(const model::Op& op, const std::string& why) {
  throw std::invalid_argument(
      fmt::format("exec's layout trainer cannot run op '{}' of the Plan: {}", op.label, why));
}

bool is_worker(const model::Endpoint& end, int worker) {
  return end.role == model::Endpoint::Role::Worker && end.index == worker;
}

/// The worker whose Transfer to `worker` the compute op `v` waits on: an in-edge from the
/// Transfer, or from a Barrier that waits on it (a stage's arrival). -1 when none.
int sender_feeding(const model::Plan& plan, model::OpId v, int worker) {
  const model::PlanGraph& g = plan.graph;
  std::set<int> senders;
  const auto look = [&](model::OpId u) {
    const model::Op& op = g[u];
    if (op.kind == model::OpKind::Transfer && is_worker(op.destination, worker))
      senders.insert(op.source.index);
  };
  for (auto [e, end] = boost::in_edges(v, g); e != end; ++e) {
    const model::OpId u = boost::source(*e, g);
    look(u);
    if (g[u].kind != model::OpKind::Barrier) continue;
    for (auto [f, f_end] = boost::in_edges(u, g); f != f_end; ++f)
      look(boost::source(*f, g));
  }
  if (senders.size() > 1) refuse(g[v], "its input comes from more than one rank");
  return senders.empty() ? -1 : *senders.begin();
}

class ProgramReader {
 public:
  ProgramReader(const model::Plan& plan, int worker) : plan_(plan) { program_.worker = worker; }

  RankProgram read() {
    for (model::OpId v : plan_.topological_order())
      visit(v);
    if (program_.updates != 1 && !program_.passes.empty())
      throw std::invalid_argument(
          fmt::format("exec's layout trainer runs one update per step: the Plan gives worker {} {}",
                      program_.worker, program_.updates));
    return std::move(program_);
  }

 private:
  int me() const { return program_.worker; }

  void visit(model::OpId v) {
    const model::Op& op = plan_.graph[v];
    switch (op.kind) {
      case model::OpKind::Compute:
        if (op.worker == me()) add_pass(v, op);
        break;
      case model::OpKind::Collective:
        if (std::find(op.group.begin(), op.group.end(), me()) != op.group.end()) add_collective(op);
        break;
      case model::OpKind::Transfer:
        add_transfer(op);
        break;
      case model::OpKind::Apply:
        if (op.worker == me()) refuse(op, "a server's apply (async-ps runs in its own trainer)");
        break;
      case model::OpKind::Update:
        if (op.worker == me()) ++program_.updates;
        break;
      case model::OpKind::Barrier:  // the sends and receives carry the synchronisation
        break;
    }
  }

  void add_pass(model::OpId v, const model::Op& op) {
    const model::LayoutPass& pass = op.pass;
    if (pass.stage < 0) refuse(op, "a compute op that is no layout pass");
    if (pass.chunk != 0) refuse(op, "a model chunk of an interleaved schedule");
    if (program_.stage >= 0 && pass.stage != program_.stage)
      refuse(op, fmt::format("passes of stages {} and {} on one rank", program_.stage, pass.stage));
    if (!program_.reductions.empty()) refuse(op, "a pass after the gradient reduction");
    if (!index_.emplace(std::make_pair(pass.forward, pass.micro_batch), program_.passes.size())
             .second)
      refuse(op, "a second compute op of one pass (context parallelism's attention core)");
    program_.stage = pass.stage;
    ProgramPass step;
    step.forward = pass.forward;
    step.micro_batch = pass.micro_batch;
    step.receive_from = sender_feeding(plan_, v, me());
    program_.passes.push_back(std::move(step));
  }

  /// The pass `op` belongs to, one this rank has run (a pass's send may come after the rank's
  /// next pass in the Plan's order: it depends on its own pass only).
  ProgramPass& pass_of(const model::Op& op) {
    const auto it = index_.find({op.pass.forward, op.pass.micro_batch});
    if (op.pass.stage != program_.stage || op.pass.chunk != 0 || it == index_.end())
      refuse(op, "it belongs to no pass this rank has run");
    return program_.passes[it->second];
  }

  void add_collective(const model::Op& op) {
    if (op.pass.stage < 0) {  // a gradient reduction after the passes
      if (op.payload != model::CollectivePayload::Gradients)
        refuse(op, "a collective of parameters (exec's layouts reduce gradients)");
      program_.reductions.push_back(op.group);
      return;
    }
    ProgramPass& pass = pass_of(op);
    if (!pass.tensor_group.empty() && pass.tensor_group != op.group)
      refuse(op, "two tensor groups in one pass");
    pass.tensor_group = op.group;
    pass.tensor_allreduces += op.repeat;
  }

  void add_transfer(const model::Op& op) {
    const bool mine = is_worker(op.source, me()) || is_worker(op.destination, me());
    if (!mine) return;
    const auto server = model::Endpoint::Role::Server;
    if (op.source.role == server || op.destination.role == server)
      refuse(op, "a transfer with a parameter server");
    if (!is_worker(op.source, me())) return;  // a receive: its pass reads it (sender_feeding)
    if (op.pass.stage < 0) refuse(op, "a transfer that no pass sends (ZeRO-3's gathers)");
    pass_of(op).send_to.push_back(op.destination.index);
  }

  const model::Plan& plan_;
  RankProgram program_;
  std::map<std::pair<bool, int>, std::size_t> index_;  ///< (forward, micro-batch) -> pass
};

}  // namespace

RankProgram rank_program(const model::Plan& plan, int worker) {
  return ProgramReader(plan, worker).read();
}

}  // namespace tauplan::exec
