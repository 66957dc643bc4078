// transformer_trainer.hpp: real training of the decoder block stack (exec/transformer_block.hpp)
// on the synthetic token stream, one worker or split over a data x tensor x pipeline mesh.
//
// Every rank, a thread of this process or an MPI process (exec/peer_group.hpp carries its
// messages), runs its part of the layout's Plan (strategy mesh, model/ir/strategy_mesh.cpp),
// read by exec/layout_program.hpp: its passes in the Plan's order, the ranks it receives from and
// sends to, the all-gathers of its inputs and its gradient reductions. Where a rank's shard sits
// follows exec's rank order, r = t_i + t (d_i + d p_i) (tensor first, then data, then pipeline),
// and every rank's program is checked against it before any rank starts. Pipeline stage p_i
// holds a run of consecutive layers (model::stage_layers: layers / p each, the first ones one
// more); the first stage also holds the embeddings, the last one the final norm and the
// vocabulary head. Tensor rank t_i holds a Megatron shard of each of those layers
// (BlockConfig::tensor = t: heads / t query heads and their K/V heads, ffn_hidden / t
// feed-forward columns, the matching rows of Wo and W2), of the vocabulary head (V / t of its
// columns) and of the token embedding (its rows [t_i V/t, (t_i+1) V/t) used and owned, in a
// table of the whole size); position embeddings and norms are replicated. The tensor group's
// all-reduces are Megatron's, and the Plan charges each of them: per layer, the attention's and
// the feed-forward's partial outputs forward (g) and the gradients of their norms' outputs
// backward (f, before the norm's backward, so norm gradients are whole on every rank); the
// vocabulary-parallel embedding's output (first stage, forward); the vocabulary-parallel
// cross-entropy's largest logit and sums of exponentials with target logits (last stage,
// forward) and the output projection's input gradient (last stage, backward). Between stages
// each tensor rank sends its 1/t slice of the activations (gradients) to the same tensor rank of
// the next (previous) stage and the receiving group all-gathers the slices in a ring (Megatron's
// scatter-gather of pipeline messages). After the passes, Wk and Wv's gradients are summed over
// the ranks that share a K/V head (t > kv_heads), then the data group's mean: the Plan's
// reductions.
// Data replica d_i takes rows [d_i b/d, (d_i+1) b/d) of the step's global batch of b sequences
// (synthetic_tokens(seed, step), so a step sees the same sequences whatever the layout), cut
// into m micro-batches, each pass on a block of its own while its micro-batch is in flight (as
// many blocks as the program has micro-batches in flight at once: m with GPipe, min(p - p_i, m)
// with 1F1B). Gradients are accumulated over micro-batches and scaled by 1 / m, then averaged
// over the data group: an all-reduce over the group's ranks (mesh), or for `sync` (no tensor or
// pipeline split; its Plan has no layout passes, so each micro-batch's forward and backward run
// in turn) a combine of the K gradient vectors through a Communicator (exec/communicator.hpp),
// as the MLP's sync does: the shared-memory threads one by default, or the one the caller gives,
// which runs the plan's collective algorithm (thread-messages: one thread hands the K vectors to
// it; MPI: every process combines its own). Then Adam (exec/transformer_block.hpp) on
// every rank's own parameters. The loss of a step is the mean next-token cross-entropy of its
// global batch, computed before the update on sequences the model has not seen (the stream never
// repeats a step). Measured per rank on the wall clock, every rank running at once: each step's
// time, its communication (pipeline receives and all-gathers, tensor and data all-reduces, the
// combine and its barriers) and the rest. The ranks are threads (train_transformer_threads) or
// MPI processes (train_transformer over MpiPeers; sync's combine through the MPI communicator).
// What it leaves out: sequence parallelism, ZeRO, recomputation, interleaved schedules, overlap of
// communication with compute; on fewer cores than ranks the ranks share cores (the times say so by
// being longer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/combine.hpp"
#include "exec/layout_program.hpp"
#include "exec/peer_group.hpp"
#include "exec/rank_times.hpp"
#include "exec/transformer_block.hpp"
#include "exec/transformer_config.hpp"
#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/mesh.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::exec {

/// One rank's parameters as a piece of the unsplit flat vector: a block of layers
/// [first_layer, first_layer + layers) of `full` (a BlockConfig with tensor 1) on tensor rank
/// `tensor_rank` of `tensor`, in the flat layout of config() (layers and tensor set; its
/// embeddings and head are there even where the stage does not use them).
class BlockShard {
 public:
  /// Throws std::invalid_argument for a bad range or rank, or a shape config().problem() names.
  BlockShard(const BlockConfig& full, int first_layer, int layers, int tensor_rank, int tensor);

  const BlockConfig& config() const { return local_; }
  std::size_t size() const { return block_parameters(local_).total; }
  /// This rank's parameters, taken from the unsplit vector.
  std::vector<float> take(const std::vector<float>& full) const;
  /// Adds this rank's local vector into the unsplit one, only the parts it owns: split parts
  /// always, a replicated part from tensor rank 0 (a shared K/V head from the first rank that
  /// holds it), embeddings from the first stage, the final norm and the head's columns from the
  /// last; summing every rank's contribution gives each value once.
  void add_to(const float* local, float* full) const;
  /// Local (offset, count) ranges of what the stage uses: its layers, and its token embedding rows
  /// and position embedding (first stage) or final norm and head columns (last stage). Its
  /// gradients are zero elsewhere, and the data group reduces these ranges only (the bytes
  /// strategy mesh's Plan charges).
  const std::vector<std::pair<std::size_t, std::size_t>>& stage_ranges() const {
    return stage_ranges_;
  }
  /// Local ranges of Wk and Wv when K/V heads are shared by several tensor ranks (t > kv_heads).
  const std::vector<std::pair<std::size_t, std::size_t>>& kv_partial() const { return kv_partial_; }
  /// The tensor ranks that share this rank's K/V heads (itself alone when t <= kv_heads).
  std::vector<int> kv_sharers() const;

 private:
  struct Piece {
    std::size_t local_offset = 0, full_offset = 0;
    int rows = 0, cols = 0, full_cols = 0;
    bool owned = false;
  };
  void add_piece(const ParameterSlot& local, const ParameterSlot& full, int row_begin,
                 int col_begin, bool owned);

  BlockConfig full_, local_;
  int first_, layers_, rank_, tensor_;
  std::vector<Piece> pieces_;
  std::vector<std::pair<std::size_t, std::size_t>> kv_partial_, stage_ranges_;
};

/// The tensor ranks that share tensor rank `tensor_rank`'s K/V head: tensor / kv_heads
/// consecutive ranks when tensor > kv_heads, else the rank alone.
std::vector<int> kv_sharing_ranks(int kv_heads, int tensor, int tensor_rank);

/// Tensor rank `rank` of `tensor`'s shard of every layer of `full` (the unsplit parameter
/// vector of `config`, whose tensor is 1), in the flat layout of `config` with tensor set.
std::vector<float> shard_parameters(const std::vector<float>& full, const BlockConfig& config,
                                    int rank, int tensor);

/// How the data group averages its gradients.
enum class DataReduction {
  PeerAllReduce,  ///< a sum over the group's ranks (exec/peer_group.hpp), then / d
  Communicator,   ///< a Communicator's combine over all K workers (sync; t = p = 1)
};

class Communicator;

struct TransformerTrainOptions {
  BlockConfig block;  ///< the unsplit shape; micro_batch and tensor are set per rank
  int data = 1;
  int tensor = 1;
  int pipeline = 1;
  int micro_batches = 1;
  model::PipelineSchedule schedule = model::PipelineSchedule::OneFOneB;
  long long batch = 8;  ///< global batch per step, in sequences
  AdamSettings adam;
  std::uint64_t seed = 1;  ///< initial parameters and token stream
  long long steps = 100;
  DataReduction reduction = DataReduction::PeerAllReduce;
  CombineRule combine = CombineRule::Mean;  ///< with DataReduction::Communicator
  /// With DataReduction::Communicator and data > 1: the communicator that combines the K
  /// gradients (not owned; K workers, all in this process for train_transformer_threads, one per
  /// process for train_transformer). nullptr: a shared-memory ThreadCommunicator (threads only).
  Communicator* communicator = nullptr;
  KeyOrigins origins = "<command line>";  ///< where the job keys were given, named in errors
  /// The layout's Plan (strategy mesh), whose part for each rank the rank runs
  /// (exec/layout_program.hpp). nullptr: the Plan transformer_layout_plan() lowers from these
  /// options. Not owned; unused by the Communicator's reduction (sync), which has no layout Plan.
  const model::Plan* plan = nullptr;

  int workers() const { return data * tensor * pipeline; }
  /// Sequences of one micro-batch: batch / (data x micro_batches).
  int micro_batch() const { return static_cast<int>(batch / (data * micro_batches)); }
  /// "d1 t2 p1 m1" (and the schedule with p > 1).
  std::string label() const;
};

/// InputError (file, key) unless the mesh fits the block: the shape valid, tensor dividing its
/// heads, feed-forward width and vocabulary (tensor_parallel), pipeline at most its layers
/// (pipeline_parallel), batch divisible by data x micro-batches (batch, micro_batches), and the
/// Communicator reduction only without a tensor or pipeline split.
void check_transformer_layout(const TransformerTrainOptions& options);

struct TransformerReport {
  std::string label;
  long long steps = 0;
  std::vector<double> loss;    ///< per step: mean loss of the global batch, before the update
  std::vector<double> step_s;  ///< per step: the slowest rank's step
  double wall_s = 0;           ///< from the first step's start to the last step's end
  double step_median_s = 0;    ///< median over steps of the slowest rank's step
  std::vector<RankTimes> ranks;
  std::size_t parameters = 0;           ///< of the unsplit block
  std::vector<float> final_parameters;  ///< unsplit, gathered from every rank after training
};

/// The Plan of strategy mesh for these options: the block as a transformer workload (fp32,
/// untied head, learned positions, no biases) on a crossbar of one host per rank; exec reads its
/// ops, not their costs. InputError as check_transformer_layout.
model::Plan transformer_layout_plan(const TransformerTrainOptions& options);

/// Every rank's program (exec/layout_program.hpp): read from the Plan (options.plan, or
/// transformer_layout_plan's) and checked against the rank's place and what its shard runs;
/// for the Communicator's sync, which has no layout Plan, one forward and one backward of each
/// micro-batch in turn, the combine after them. std::invalid_argument naming the rank and what
/// differs, or the op a rank cannot run.
std::vector<RankProgram> transformer_rank_programs(const TransformerTrainOptions& options);

/// Trains options.steps steps from init_block_parameters(block, seed), one thread per rank, each
/// running its part of the Plan. std::invalid_argument, before any rank starts, for a Plan a rank
/// cannot run (exec/layout_program.hpp) or one that places a rank elsewhere than the rank order,
/// or for sync through a communicator whose K workers are not all in this process.
TransformerReport train_transformer_threads(const TransformerTrainOptions& options);

/// The same on every rank of `peers` (MpiPeers: one MPI process per rank), options.workers()
/// of them: each runs its own part, and every rank's record and replica 0's parameters meet on
/// rank 0, whose report is the run's (the other ranks return an empty one). The wall is the
/// longest rank's, from the barrier that starts them. Sync's combine (DataReduction::
/// Communicator, data > 1) goes through options.communicator, one worker per process, worker
/// peers.rank() on this one. std::invalid_argument for another number of ranks, or for sync
/// without such a communicator.
TransformerReport train_transformer(const TransformerTrainOptions& options, PeerGroup& peers);

struct TransformerStepGradients {
  double loss = 0;               ///< mean over the global batch
  std::vector<float> gradients;  ///< unsplit layout of options.block, before any update
};

/// One step (step index `step` of the stream) from `parameters` (unsplit), on one thread per
/// rank: the global batch's loss and its unsplit gradient, as the ranks hold it after their
/// tensor and data reductions (tests compare it with the unsplit block's).
TransformerStepGradients transformer_step_gradients_threads(const TransformerTrainOptions& options,
                                                            const std::vector<float>& parameters,
                                                            long long step);

}  // namespace tauplan::exec
