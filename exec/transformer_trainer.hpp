// transformer_trainer.hpp: real training of the decoder block stack (exec/transformer_block.hpp)
// on the synthetic token stream, one worker or split over a data x tensor x pipeline mesh.
//
// Every rank is a thread of this process (exec/peer_group.hpp's ThreadPeerHub carries its
// messages). Rank r = t_i + t (d_i + d p_i), the order of the MLP's layouts (tensor first, then
// data, then pipeline). Pipeline stage p_i holds a run of consecutive layers (model::stage_layers:
// layers / p each, the first ones one more); the first stage also holds the embeddings, the last
// one the final norm and the vocabulary head. Tensor rank t_i holds a Megatron shard of each of
// those layers (BlockConfig::tensor = t: heads / t query heads and their K/V heads, ffn_hidden / t
// feed-forward columns, the matching rows of Wo and W2) and of the vocabulary head (V / t of its
// columns: Megatron's vocabulary-parallel head); norms and embeddings are replicated. Per layer,
// the attention and feed-forward partial outputs are summed over the tensor group forward
// (Megatron's g) and the partial gradients of their inputs backward (its f): four all-reduces per
// layer and micro-batch. The last stage's head adds three per micro-batch (Megatron's
// vocab_parallel_cross_entropy): each token's largest logit (a maximum), its sum of exponentials
// and target logit (one sum), and the gradient of the final norm's output (a sum, before the
// norm's backward); the loss is then the same on every tensor rank, each rank keeps its columns'
// head gradient. Every tensor rank computes the replicated parts on the same bits, so the
// embedding and final norm gradients come out identical on every rank; the layers' norm gains'
// gradients are partial (each rank's heads and columns only) and are summed over the tensor group
// once per step, and so are Wk and Wv's when t > kv_heads (ranks sharing a K/V head).
// Data replica d_i takes rows [d_i b/d, (d_i+1) b/d) of the step's global batch of b sequences
// (synthetic_tokens(seed, step), so a step sees the same sequences whatever the layout), cut
// into m micro-batches run in the schedule's order, GPipe or 1F1B as exec/pipeline_parallel.hpp
// runs the MLP (activations forward and their gradients backward, point to point), with one
// block per micro-batch in flight (m with GPipe, min(p - p_i, m) with 1F1B). Gradients are
// accumulated over micro-batches and scaled by 1 / m, then averaged over the data group: an
// all-reduce over the group's ranks (mesh), or for `sync` (no tensor or pipeline split) a
// combine of the K gradient vectors through the thread Communicator (exec/communicator.hpp), as
// the MLP's sync does. Then Adam (exec/transformer_block.hpp) on every rank's own parameters.
// The loss of a step is the mean next-token cross-entropy of its global batch, computed before
// the update on sequences the model has not seen (the stream never repeats a step).
// Measured per rank on the wall clock, every rank running at once: each step's time, its
// communication (pipeline receives, tensor and data all-reduces, the combine and its barriers)
// and the rest. What it leaves out: MPI ranks (threads only), sequence parallelism, ZeRO,
// recomputation, interleaved schedules, a vocabulary-parallel token embedding (each rank holds
// the whole table), overlap of communication with compute; on fewer cores than ranks the ranks
// share cores (the times say so by being longer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/combine.hpp"
#include "exec/rank_times.hpp"
#include "exec/transformer_block.hpp"
#include "exec/transformer_config.hpp"
#include "model/inputs/mesh.hpp"

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
  /// Local (offset, count) ranges whose gradients are partial sums over the tensor group: the
  /// layers' norm gains and biases.
  const std::vector<std::pair<std::size_t, std::size_t>>& tensor_partial() const {
    return tensor_partial_;
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
  std::vector<std::pair<std::size_t, std::size_t>> tensor_partial_, kv_partial_;
};

/// Tensor rank `rank` of `tensor`'s shard of every layer of `full` (the unsplit parameter
/// vector of `config`, whose tensor is 1), in the flat layout of `config` with tensor set.
std::vector<float> shard_parameters(const std::vector<float>& full, const BlockConfig& config,
                                    int rank, int tensor);

/// How the data group averages its gradients.
enum class DataReduction {
  PeerAllReduce,  ///< a sum over the group's ranks (exec/peer_group.hpp), then / d
  Communicator,   ///< the thread Communicator's combine over all K workers (sync; t = p = 1)
};

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
  std::string file = "<command line>";      ///< named in errors

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

/// Trains options.steps steps from init_block_parameters(block, seed), one thread per rank.
TransformerReport train_transformer_threads(const TransformerTrainOptions& options);

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
