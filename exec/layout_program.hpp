// layout_program.hpp: one rank's part of a layout's Plan (strategy mesh), in the order the rank
// runs it, as exec's layout trainer (exec/pipeline_parallel.hpp) executes it.
//
// model/ir/strategy_mesh.cpp lowers a layout into a Plan: per rank, Compute ops for each pass
// (forward or backward of a micro-batch on the rank's stage, Op::pass) in the schedule's order,
// each followed by its tensor group's all-reduces (Collective ops) and its sends to the
// neighbouring stage (Transfer ops, whose arrival a Barrier marks); after the last pass, the
// gradient all-reduces of the rank's data group (Collective ops) and its Update. rank_program()
// reads that Plan for one worker: its passes in the Plan's dependency order, each with the rank
// it receives its input from (the Transfer to this worker that the pass waits on, directly or
// through the arrival Barrier), the ranks it sends to, and the tensor all-reduces the Plan
// charges it; then the gradient reductions (their groups, from the Plan) and the count of its
// updates. The trainer runs the passes in the program's order, receiving from and sending to the
// ranks it names, and reduces over its groups: a Plan with another order runs in that order.
// Where the rank's shard sits (stage, tensor index, data index) still follows exec's rank order
// (tensor, data, pipeline); the trainer checks before its first message that the program agrees
// with it (neighbours, groups, the tensor all-reduces its shard runs) and refuses it otherwise.
//
// A transformer's stage sends carry each tensor rank's 1/t slice, and the receiving tensor group
// all-gathers them in a ring of Transfers before the pass (Op::pass names that pass and marks
// them `gather`): the program says which sends are slices and, per pass, the ring steps this
// rank sends and the neighbours it exchanges with.
//
// run_program() is the one interpreter of a program: it receives each pass's input (whole, or a
// slice and the all-gather), hands the pass to a model's handlers (PassHandlers: the compute op,
// on the model's own buffers), makes the pass's sends, then hands each of the program's gradient
// reductions to the handlers (what a group's reduction sums differs by model). Both layout
// trainers are such handlers: the MLP's (exec/pipeline_parallel.hpp, whole sends, no all-gather)
// and the transformer block's (exec/transformer_trainer.hpp).
//
// What it leaves out: ops a CPU layout does not have. A Plan with an Apply, a transfer to or
// from a server, a transfer not sent by a pass, a pass with two compute ops (context
// parallelism's attention core), a receive from two ranks, or passes of two stages on one rank
// (interleaving) is refused with std::invalid_argument naming the op (or, for a count of
// updates other than one, the worker): exec cannot run it. `tauplan measure` turns that into
// an input error naming the job's strategies before anything runs.
#pragma once

#include <string>
#include <vector>

#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/mesh.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::exec {

class PeerGroup;

/// One pass of a rank's program.
struct ProgramPass {
  bool forward = true;
  int micro_batch = 0;
  int receive_from = -1;     ///< worker whose send this pass waits for (-1: none)
  std::vector<int> send_to;  ///< workers that get this pass's output (forward) or input gradient
  /// The sends carry this rank's 1/t slice of it (the receiving tensor group all-gathers them).
  bool send_slice = false;
  /// The input arrives as slices that the rank's group all-gathers in a ring: the Transfers
  /// this rank sends in it (t - 1 steps) and the ranks it exchanges slices with (its ring
  /// neighbours). 0 and empty: the input arrives whole.
  int gather_sends = 0;
  std::vector<int> gather_peers;
  long long tensor_allreduces = 0;  ///< the pass's tensor all-reduces (Op::repeat summed)
  std::vector<int> tensor_group;    ///< their group, in tensor-rank order (empty: none)
};

struct RankProgram {
  int worker = -1;
  int stage = -1;  ///< the pipeline stage of every pass (-1: the rank has no pass)
  std::vector<ProgramPass> passes;
  /// Gradient all-reduces after the passes, in order: each its group (worker indices).
  std::vector<std::vector<int>> reductions;
  int updates = 0;  ///< Update ops of the worker (1 for a layout's step)
};

/// The program of `worker` in `plan` (see the file comment). std::invalid_argument for an op
/// exec's layout trainer cannot run.
RankProgram rank_program(const model::Plan& plan, int worker);

/// One model's handlers of the compute ops of a rank's program: what a pass computes, on buffers
/// the model owns, and its gradient reductions. run_program() does the passes' transfers around
/// them and times the reductions.
class PassHandlers {
 public:
  virtual ~PassHandlers() = default;
  /// Readies `pass` and returns the buffer its input is received into, sized to the whole input
  /// (the previous stage's activations for a forward, the next stage's gradient for a
  /// backward). Called for every pass, whether or not it receives.
  virtual std::vector<float>& prepare(const ProgramPass& pass) = 0;
  /// Runs `pass` on the received input when `received`, else from the data (a first stage's
  /// forward) or the loss (a last stage's backward). Returns what the pass's sends carry (its
  /// output, or its input's gradient), whole.
  virtual const std::vector<float>& run(const ProgramPass& pass, bool received) = 0;
  /// After the last pass, before the reductions (a model's scaling of its summed gradients).
  virtual void passes_done() {}
  /// Reduces the gradients over `group` (ranks, in order): one of the program's reductions.
  virtual void reduce(const std::vector<int>& group) = 0;
};

/// Where a rank's stage transfers go, and the step's counts they add to.
struct ProgramTransfers {
  PeerGroup* peers = nullptr;
  std::vector<int> tensor_group;  ///< the rank's tensor group, in tensor order (all-gathers)
  int tensor_index = 0;           ///< the rank's place in it (which slice it sends)
  int forward_tag = 0, backward_tag = 0, gather_tag = 0;
  double* comm_s = nullptr;       ///< += seconds in receives, all-gathers and reductions
  long long* messages = nullptr;  ///< += messages sent (stage sends and all-gather steps)
};

/// Runs `program` (one step of the rank): its passes in order, each pass's input received from
/// the rank it names (whole, or this rank's slice and then the tensor group's ring all-gather),
/// `handlers`'s compute, then its output (or input gradient) sent to the ranks the pass names,
/// whole or this rank's 1/t slice; then handlers.passes_done() and handlers.reduce() for each of
/// its reductions, in order, timed. Sends are counted, not timed.
void run_program(const RankProgram& program, PassHandlers& handlers,
                 const ProgramTransfers& transfers);

/// Where exec's rank order (tensor, then data, then pipeline) puts rank `rank` of a layout of
/// data x tensor x pipeline ranks and `micro_batches` micro-batches per step.
struct MeshRank {
  int data = 1, tensor = 1, pipeline = 1, micro_batches = 1;
  int rank = 0;
  int tensor_index() const { return rank % tensor; }
  int data_index() const { return (rank / tensor) % data; }
  int stage() const { return rank / (tensor * data); }
  int rank_of(int d, int t, int p) const { return t + tensor * (d + data * p); }
  /// The ranks of this rank's tensor group, in tensor order.
  std::vector<int> tensor_group() const;
  /// The ranks of this rank's data group (same tensor index and stage), in data order.
  std::vector<int> data_group() const;
};

/// Refuses (std::invalid_argument naming `trainer`, the Plan, the rank's place and `what`) a
/// program its trainer cannot run on that rank.
[[noreturn]] void refuse_program(const std::string& trainer, const model::Plan& plan,
                                 const MeshRank& place, const std::string& what);

/// Checks that `program` (the rank's part of `plan`) puts the rank where `place` does, before
/// any message: the Plan's workers and micro-batches, the rank's stage, one pass per micro-batch
/// and direction with each forward before its backward, receives from and sends to the same
/// tensor and data index of the neighbouring stages, and `reductions` (groups of ranks, in
/// order) as its gradient reductions. What each pass computes (its tensor all-reduces, slices)
/// is the trainer's to check. refuse_program otherwise.
void check_place(const std::string& trainer, const model::Plan& plan, const RankProgram& program,
                 const MeshRank& place, const std::vector<std::vector<int>>& reductions);

/// How a layout trainer splits its job, for lowering its Plan.
struct LayoutShape {
  int data = 1, tensor = 1, pipeline = 1, micro_batches = 1;
  model::PipelineSchedule schedule = model::PipelineSchedule::OneFOneB;
  long long batch = 1;                    ///< global batch per step
  KeyOrigins origins = "<command line>";  ///< where the job keys were given, named in errors
};

/// Strategy mesh's Plan of `workload` under `shape`, for one step, on a crossbar of one host per
/// rank: exec reads its ops (their order, groups and neighbours), not their costs, so any hosts
/// will do. InputError as model::make_plan.
model::Plan layout_plan(const model::Workload& workload, const LayoutShape& shape);

}  // namespace tauplan::exec
