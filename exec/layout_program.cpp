// layout_program.cpp: reads one rank's program out of a layout's Plan and runs its passes'
// transfers (exec/layout_program.hpp).
#include "exec/layout_program.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "exec/peer_group.hpp"
#include "exec/rank_threads.hpp"
#include "model/convergence/convergence.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/strategy.hpp"

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
/// Transfer, or from Barriers that wait on it (a stage's arrival, or the steps of the receivers'
/// all-gather of the slices, whose own Transfers are walked through). -1 when none.
int sender_feeding(const model::Plan& plan, model::OpId v, int worker) {
  std::set<int> senders;
  std::set<model::OpId> seen;
  std::vector<model::OpId> frontier{v};
  while (!frontier.empty()) {
    const model::OpId at = frontier.back();
    frontier.pop_back();
    for (const model::OpId u : plan.predecessors(at)) {
      const model::Op& op = plan.op(u);
      const bool gather = op.kind == model::OpKind::Transfer && op.pass.gather;
      if (op.kind == model::OpKind::Transfer && !gather && is_worker(op.destination, worker))
        senders.insert(op.source.index);
      if ((op.kind == model::OpKind::Barrier || gather) && seen.insert(u).second)
        frontier.push_back(u);
    }
  }
  if (senders.size() > 1) refuse(plan.op(v), "its input comes from more than one rank");
  return senders.empty() ? -1 : *senders.begin();
}

class ProgramReader {
 public:
  ProgramReader(const model::Plan& plan, int worker) : plan_(plan) { program_.worker = worker; }

  RankProgram read() {
    for (model::OpId v : plan_.topological_order())
      visit(v);
    if (!gathers_.empty())
      throw std::invalid_argument(fmt::format(
          "exec's layout trainer cannot run the Plan: worker {} all-gathers the input of a pass "
          "it does not run",
          program_.worker));
    if (program_.updates != 1 && !program_.passes.empty())
      throw std::invalid_argument(
          fmt::format("exec's layout trainer runs one update per step: the Plan gives worker {} {}",
                      program_.worker, program_.updates));
    return std::move(program_);
  }

 private:
  int me() const { return program_.worker; }

  void visit(model::OpId v) {
    const model::Op& op = plan_.op(v);
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
    if (const auto gather = gathers_.find({pass.forward, pass.micro_batch});
        gather != gathers_.end()) {
      if (gather->second.stage != pass.stage)
        refuse(op, "its input's all-gather is another stage's");
      step.gather_sends = gather->second.sends;
      step.gather_peers.assign(gather->second.peers.begin(), gather->second.peers.end());
      gathers_.erase(gather);
    }
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
    if (op.pass.gather) {  // a step of the all-gather of a pass's input, not yet run here
      if (op.pass.chunk != 0) refuse(op, "a model chunk of an interleaved schedule");
      if (index_.count({op.pass.forward, op.pass.micro_batch}) != 0)
        refuse(op, "an all-gather of the input of a pass this rank has run");
      Gather& gather = gathers_[{op.pass.forward, op.pass.micro_batch}];
      gather.stage = op.pass.stage;
      const bool sends = is_worker(op.source, me());
      gather.sends += sends ? 1 : 0;
      gather.peers.insert(sends ? op.destination.index : op.source.index);
      return;
    }
    if (!is_worker(op.source, me())) return;  // a receive: its pass reads it (sender_feeding)
    if (op.pass.stage < 0) refuse(op, "a transfer that no pass sends (ZeRO-3's gathers)");
    ProgramPass& pass = pass_of(op);
    if (!pass.send_to.empty() && pass.send_slice != op.pass.sliced)
      refuse(op, "whole and sliced sends in one pass");
    pass.send_slice = op.pass.sliced;
    pass.send_to.push_back(op.destination.index);
  }

  /// What this rank does in the all-gather of a pass's input, before the pass.
  struct Gather {
    int stage = -1;
    int sends = 0;
    std::set<int> peers;
  };

  const model::Plan& plan_;
  RankProgram program_;
  std::map<std::pair<bool, int>, std::size_t> index_;  ///< (forward, micro-batch) -> pass
  std::map<std::pair<bool, int>, Gather> gathers_;     ///< of passes still to come
};

}  // namespace

RankProgram rank_program(const model::Plan& plan, int worker) {
  return ProgramReader(plan, worker).read();
}

namespace {

/// The pass's input from the rank it names: whole, or this rank's slice and the others by the
/// tensor group's ring all-gather.
void receive_input(const ProgramPass& pass, std::vector<float>& input, int tag,
                   const ProgramTransfers& t) {
  const auto start = Clock::now();
  if (pass.gather_sends == 0) {
    t.peers->recv(pass.receive_from, input.data(), input.size(), tag);
  } else {
    const std::size_t slice = input.size() / std::max<std::size_t>(1, t.tensor_group.size());
    float* mine = input.data() + static_cast<std::size_t>(t.tensor_index) * slice;
    t.peers->recv(pass.receive_from, mine, slice, tag);
    *t.messages +=
        ring_allgather(*t.peers, t.tensor_group, input.data(), input.size(), t.gather_tag);
  }
  *t.comm_s += seconds_since(start);
}

/// The pass's output (or input gradient) to the ranks it names: whole, or this rank's slice.
void send_output(const ProgramPass& pass, const std::vector<float>& output, int tag,
                 const ProgramTransfers& t) {
  const std::size_t slice = pass.send_slice
                                ? output.size() / std::max<std::size_t>(1, t.tensor_group.size())
                                : output.size();
  const float* from =
      output.data() + (pass.send_slice ? static_cast<std::size_t>(t.tensor_index) * slice : 0);
  for (int to : pass.send_to) {
    t.peers->send(to, from, slice, tag);
    ++*t.messages;
  }
}

}  // namespace

void run_program(const RankProgram& program, PassHandlers& handlers,
                 const ProgramTransfers& transfers) {
  for (const ProgramPass& pass : program.passes) {
    std::vector<float>& input = handlers.prepare(pass);
    const int tag = pass.forward ? transfers.forward_tag : transfers.backward_tag;
    const bool received = pass.receive_from >= 0;
    if (received) receive_input(pass, input, tag, transfers);
    send_output(pass, handlers.run(pass, received), tag, transfers);
  }
  handlers.passes_done();
  for (const std::vector<int>& group : program.reductions) {
    const auto start = Clock::now();
    handlers.reduce(group);
    *transfers.comm_s += seconds_since(start);
  }
}

std::vector<int> MeshRank::tensor_group() const {
  std::vector<int> members;
  for (int k = 0; k < tensor; ++k)
    members.push_back(rank_of(data_index(), k, stage()));
  return members;
}

std::vector<int> MeshRank::data_group() const {
  std::vector<int> members;
  for (int d = 0; d < data; ++d)
    members.push_back(rank_of(d, tensor_index(), stage()));
  return members;
}

void refuse_program(const std::string& trainer, const model::Plan& plan, const MeshRank& place,
                    const std::string& what) {
  throw std::invalid_argument(
      fmt::format("exec's {} cannot run the Plan ({} on {} workers) on rank {} (stage {} of d{} "
                  "t{} p{}, tensor-data-pipeline order): {}",
                  trainer, plan.strategy, plan.workers, place.rank, place.stage(), place.data,
                  place.tensor, place.pipeline, what));
}

void check_place(const std::string& trainer, const model::Plan& plan, const RankProgram& program,
                 const MeshRank& place, const std::vector<std::vector<int>>& reductions) {
  const auto wrong = [&](const std::string& what) { refuse_program(trainer, plan, place, what); };
  const int m = place.micro_batches, r = place.stage();
  if (plan.workers != place.data * place.tensor * place.pipeline)
    wrong(fmt::format("the Plan is for {} workers", plan.workers));
  if (plan.micro_batches != m)
    wrong(fmt::format("the Plan is for {} micro-batches", plan.micro_batches));
  if (program.stage != r) wrong(fmt::format("its passes are on stage {}", program.stage));
  if (static_cast<int>(program.passes.size()) != 2 * m)
    wrong(fmt::format("it has {} passes, not 2 x {} micro-batches", program.passes.size(), m));
  std::vector<int> state(static_cast<std::size_t>(m), 0);  // 0 none, 1 forward run, 2 both
  for (const ProgramPass& pass : program.passes) {
    if (pass.micro_batch < 0 || pass.micro_batch >= m)
      wrong(fmt::format("a pass of micro-batch {}", pass.micro_batch));
    int& seen = state[static_cast<std::size_t>(pass.micro_batch)];
    if (seen != (pass.forward ? 0 : 1))
      wrong(fmt::format("micro-batch {}'s {} pass comes {}", pass.micro_batch,
                        pass.forward ? "forward" : "backward",
                        pass.forward ? "twice" : "before its forward or twice"));
    seen = pass.forward ? 1 : 2;
    const bool from_none = pass.forward ? r == 0 : r == place.pipeline - 1;
    const bool to_none = pass.forward ? r == place.pipeline - 1 : r == 0;
    const int from =
        place.rank_of(place.data_index(), place.tensor_index(), r + (pass.forward ? -1 : 1));
    const int to =
        place.rank_of(place.data_index(), place.tensor_index(), r + (pass.forward ? 1 : -1));
    if (pass.receive_from != (from_none ? -1 : from))
      wrong(fmt::format("a pass receives from rank {}", pass.receive_from));
    if (pass.send_to != (to_none ? std::vector<int>{} : std::vector<int>{to}))
      wrong("a pass sends to other ranks than the next stage's");
  }
  if (program.reductions != reductions) wrong("its gradient reductions are over other groups");
}

model::Plan layout_plan(const model::Workload& workload, const LayoutShape& shape) {
  model::StrategyOptions strategy;
  strategy.file = shape.origins.file;
  strategy.keys_from_command_line = shape.origins.flagged;
  strategy.workers = shape.data * shape.tensor * shape.pipeline;
  strategy.batch = static_cast<double>(shape.batch);
  strategy.check_memory = false;
  strategy.layout.data = shape.data;
  strategy.layout.tensor = shape.tensor;
  strategy.layout.pipeline = shape.pipeline;
  strategy.layout.micro_batches = shape.micro_batches;
  strategy.layout.schedule = shape.schedule;
  const model::Platform platform = model::make_crossbar_platform(
      std::vector<double>(static_cast<std::size_t>(strategy.workers), 1e9), 1e9, 1e-6);
  const model::FixedCounts one_step(1, -1, shape.origins.file);
  return model::make_plan(model::mesh_strategy().name(), strategy, workload, platform, one_step);
}

}  // namespace tauplan::exec
