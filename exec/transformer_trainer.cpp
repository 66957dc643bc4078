// transformer_trainer.cpp: shards of the block, one rank's step (schedule, tensor and data
// reductions), and the thread harness that trains or takes one step.
#include "exec/transformer_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "exec/layout_program.hpp"
#include "exec/peer_group.hpp"
#include "exec/rank_threads.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/token_stream.hpp"
#include "exec/trainer.hpp"
#include "exec/transformer_reference.hpp"
#include "model/base/error.hpp"
#include "model/inputs/transformer.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/layout.hpp"

namespace tauplan::exec {

// ------------------------------------------------------------------ shards

BlockShard::BlockShard(const BlockConfig& full, int first_layer, int layers, int tensor_rank,
                       int tensor)
    : full_(full),
      local_(full),
      first_(first_layer),
      layers_(layers),
      rank_(tensor_rank),
      tensor_(tensor) {
  if (full.tensor != 1) throw std::invalid_argument("BlockShard: the full config has tensor 1");
  if (first_ < 0 || layers_ < 1 || first_ + layers_ > full.layers || tensor_ < 1 || rank_ < 0 ||
      rank_ >= tensor_)
    throw std::invalid_argument("BlockShard: bad layer range or tensor rank");
  local_.layers = layers_;
  local_.tensor = tensor_;
  if (const std::string problem = local_.problem(); !problem.empty())
    throw std::invalid_argument("BlockShard: " + problem);
  const BlockParameters f = block_parameters(full_), l = block_parameters(local_);
  const bool lead = rank_ == 0;
  const bool first_stage = first_ == 0, last_stage = first_ + layers_ == full_.layers;
  // Megatron's vocabulary-parallel embedding: rank k looks up (and owns) the token rows
  // [k V/t, (k+1) V/t) of its whole-sized table; the position table is replicated.
  const int rows = full_.vocabulary / tensor_;
  const std::size_t token_rows =
      l.token_embedding.offset +
      static_cast<std::size_t>(rank_ * rows) * static_cast<std::size_t>(l.token_embedding.cols);
  add_piece(ParameterSlot{"", rows, l.token_embedding.cols, token_rows},
            ParameterSlot{"", rows, f.token_embedding.cols, f.token_embedding.offset}, rank_ * rows,
            0, first_stage);
  add_piece(l.position_embedding, f.position_embedding, 0, 0, first_stage && lead);
  const int q_col = rank_ * local_.local_width(), ffn_col = rank_ * local_.local_ffn();
  const bool shared_kv = tensor_ > full_.kv_heads;
  const int share = shared_kv ? tensor_ / full_.kv_heads : 1;  // ranks per K/V head
  const int kv_col =
      (shared_kv ? rank_ / share : rank_ * local_.local_kv_heads()) * full_.head_dim();
  const bool kv_owned = rank_ % share == 0;
  // Norms are replicated and their gradients whole on every rank (the norms' output gradients
  // are summed before their backward): tensor rank 0 owns them.
  auto norm = [&](const ParameterSlot& local, const ParameterSlot& whole) {
    if (local.size() > 0) add_piece(local, whole, 0, 0, lead);
  };
  for (int i = 0; i < layers_; ++i) {
    const LayerSlots& ls = l.layers[static_cast<std::size_t>(i)];
    const LayerSlots& fs = f.layers[static_cast<std::size_t>(first_ + i)];
    norm(ls.norm1_gain, fs.norm1_gain);
    norm(ls.norm1_bias, fs.norm1_bias);
    add_piece(ls.wq, fs.wq, 0, q_col, true);
    add_piece(ls.wk, fs.wk, 0, kv_col, kv_owned);
    add_piece(ls.wv, fs.wv, 0, kv_col, kv_owned);
    if (shared_kv) {
      kv_partial_.push_back({ls.wk.offset, ls.wk.size()});
      kv_partial_.push_back({ls.wv.offset, ls.wv.size()});
    }
    add_piece(ls.wo, fs.wo, q_col, 0, true);
    norm(ls.norm2_gain, fs.norm2_gain);
    norm(ls.norm2_bias, fs.norm2_bias);
    if (ls.w_gate.size() > 0) add_piece(ls.w_gate, fs.w_gate, 0, ffn_col, true);
    add_piece(ls.w_up, fs.w_up, 0, ffn_col, true);
    add_piece(ls.w2, fs.w2, ffn_col, 0, true);
  }
  add_piece(l.final_gain, f.final_gain, 0, 0, last_stage && lead);
  if (l.final_bias.size() > 0) add_piece(l.final_bias, f.final_bias, 0, 0, last_stage && lead);
  // The vocabulary-parallel head: this rank's V / t columns, its own on every tensor rank.
  add_piece(l.head, f.head, 0, rank_ * local_.local_vocabulary(), last_stage);
  // What the stage uses, as strategy mesh's Plan counts a stage's parameters.
  const auto use = [this](std::size_t offset, std::size_t count) {
    if (count > 0) stage_ranges_.push_back({offset, count});
  };
  if (first_stage) {
    use(token_rows,
        static_cast<std::size_t>(rows) * static_cast<std::size_t>(l.token_embedding.cols));
    use(l.position_embedding.offset, l.position_embedding.size());
  }
  for (const LayerSlots& ls : l.layers)
    for (const ParameterSlot& slot : {ls.norm1_gain, ls.norm1_bias, ls.wq, ls.wk, ls.wv, ls.wo,
                                      ls.norm2_gain, ls.norm2_bias, ls.w_gate, ls.w_up, ls.w2})
      use(slot.offset, slot.size());
  if (last_stage)
    for (const ParameterSlot& slot : {l.final_gain, l.final_bias, l.head})
      use(slot.offset, slot.size());
}

void BlockShard::add_piece(const ParameterSlot& local, const ParameterSlot& full, int row_begin,
                           int col_begin, bool owned) {
  Piece p;
  p.local_offset = local.offset;
  p.full_offset = full.offset +
                  static_cast<std::size_t>(row_begin) * static_cast<std::size_t>(full.cols) +
                  static_cast<std::size_t>(col_begin);
  p.rows = local.rows;
  p.cols = local.cols;
  p.full_cols = full.cols;
  p.owned = owned;
  pieces_.push_back(p);
}

std::vector<float> BlockShard::take(const std::vector<float>& full) const {
  if (full.size() != block_parameters(full_).total)
    throw std::invalid_argument("BlockShard::take: the full vector has the wrong size");
  std::vector<float> local(size(), 0.0f);
  for (const Piece& p : pieces_)
    for (int r = 0; r < p.rows; ++r) {
      const float* from = full.data() + p.full_offset +
                          static_cast<std::size_t>(r) * static_cast<std::size_t>(p.full_cols);
      std::copy(from, from + p.cols,
                local.begin() + static_cast<std::ptrdiff_t>(p.local_offset +
                                                            static_cast<std::size_t>(r) *
                                                                static_cast<std::size_t>(p.cols)));
    }
  return local;
}

void BlockShard::add_to(const float* local, float* full) const {
  for (const Piece& p : pieces_) {
    if (!p.owned) continue;
    for (int r = 0; r < p.rows; ++r) {
      const float* from =
          local + p.local_offset + static_cast<std::size_t>(r) * static_cast<std::size_t>(p.cols);
      float* to = full + p.full_offset +
                  static_cast<std::size_t>(r) * static_cast<std::size_t>(p.full_cols);
      for (int c = 0; c < p.cols; ++c)
        to[c] += from[c];
    }
  }
}

std::vector<int> kv_sharing_ranks(int kv_heads, int tensor, int tensor_rank) {
  if (tensor <= kv_heads) return {tensor_rank};
  const int share = tensor / kv_heads, first = tensor_rank / share * share;
  std::vector<int> ranks;
  for (int k = 0; k < share; ++k)
    ranks.push_back(first + k);
  return ranks;
}

std::vector<int> BlockShard::kv_sharers() const {
  return kv_sharing_ranks(full_.kv_heads, tensor_, rank_);
}

std::vector<float> shard_parameters(const std::vector<float>& full, const BlockConfig& config,
                                    int rank, int tensor) {
  return BlockShard(config, 0, config.layers, rank, tensor).take(full);
}

// ------------------------------------------------------------------ options

std::string TransformerTrainOptions::label() const {
  std::string label = fmt::format("d{} t{} p{} m{}", data, tensor, pipeline, micro_batches);
  if (pipeline > 1) label += std::string(" ") + model::to_string(schedule);
  return label;
}

void check_transformer_layout(const TransformerTrainOptions& o) {
  if (const std::string problem = o.block.problem(); !problem.empty() || o.block.tensor != 1)
    throw InputError(o.origins.of("workload"), "a decoder block shape exec can build",
                     problem.empty() ? "a split shape" : problem);
  if (o.data < 1 || o.tensor < 1 || o.pipeline < 1 || o.micro_batches < 1)
    throw InputError(o.origins.of("workers"), "data, tensor, pipeline and micro-batch counts >= 1");
  BlockConfig shard = o.block;
  shard.tensor = o.tensor;
  if (const std::string problem = shard.problem(); !problem.empty())
    throw InputError(
        o.origins.of("tensor_parallel"),
        fmt::format("a divisor of the {} heads, the feed-forward width {} and the vocabulary {} "
                    "(and a divisor or multiple of the {} key/value heads)",
                    o.block.heads, o.block.ffn_hidden, o.block.vocabulary, o.block.kv_heads),
        fmt::format("{} ({})", o.tensor, problem));
  if (o.pipeline > o.block.layers)
    throw InputError(o.origins.of("pipeline_parallel"),
                     fmt::format("at most the {} layers of the block", o.block.layers),
                     std::to_string(o.pipeline));
  const long long split = static_cast<long long>(o.data) * o.micro_batches;
  if (o.batch < split || o.batch % split != 0)
    throw InputError(o.origins.of("micro_batches"),
                     fmt::format("a divisor of the {} sequences each replica takes (batch {} / "
                                 "{} replicas)",
                                 o.batch / o.data, o.batch, o.data),
                     std::to_string(o.micro_batches));
  if (o.reduction == DataReduction::Communicator && (o.tensor > 1 || o.pipeline > 1))
    throw std::logic_error("the Communicator reduction is for data parallelism alone");
  if (o.steps < 1)
    throw InputError(o.origins.of("max_steps"), "at least 1 step", std::to_string(o.steps));
}

// ------------------------------------------------------------------ one rank

namespace {

constexpr int kTagTensor = 1, kTagForward = 2, kTagBackward = 3, kTagData = 4, kTagKv = 5,
              kTagGather = 6;

/// What the ranks of one process share: the data group's Communicator (sync) and, when its K
/// workers are all in this process, their gradient buffers.
struct SharedState {
  std::unique_ptr<Communicator> owned;
  Communicator* communicator = nullptr;  ///< sync with data > 1: owned or the caller's
  std::vector<float*> gradients;         ///< per rank (in-process communicators)
  std::mutex mutex;                      ///< for gathering into one vector
};

/// One rank of the mesh: its shard, blocks (one per micro-batch in flight), and its program
/// (exec/layout_program.hpp): the handlers of its passes' compute (run_program makes the
/// sends and all-gathers the Plan gives them), then its gradient reductions.
class TransformerRank final : private PassHandlers {
 public:
  TransformerRank(const TransformerTrainOptions& o, RankProgram program, PeerGroup& peers,
                  SharedState& shared)
      : o_(o),
        peers_(peers),
        shared_(shared),
        t_i_(peers.rank() % o.tensor),
        d_i_((peers.rank() / o.tensor) % o.data),
        p_i_(peers.rank() / (o.tensor * o.data)),
        shard_(make_shard(o, p_i_, t_i_)),
        program_(std::move(program)),
        tensor_reduce_(*this) {
    BlockConfig local = shard_.config();
    local.micro_batch = o.micro_batch();
    const std::size_t stream =
        static_cast<std::size_t>(local.tokens()) * static_cast<std::size_t>(local.hidden);
    for (int k = 0; k < in_flight(program_); ++k) {
      blocks_.push_back(std::make_unique<CpuTransformerBlock>(local));
      hidden_.emplace_back(stream, 0.0f);
      free_slots_.push_back(k);
    }
    slot_of_.assign(static_cast<std::size_t>(o.micro_batches), -1);
    hidden_gradient_.assign(stream, 0.0f);
    partial_.assign(stream, 0.0f);
    grads_.assign(shard_.size(), 0.0f);
    for (int k = 0; k < o.tensor; ++k)
      tensor_members_.push_back(rank_of(d_i_, k, p_i_));
    for (int k : shard_.kv_sharers())
      kv_members_.push_back(rank_of(d_i_, k, p_i_));
    if (!shared_.gradients.empty())
      shared_.gradients[static_cast<std::size_t>(peers.rank())] = grads_.data();
  }

  void load(const std::vector<float>& full) { params_ = shard_.take(full); }
  const BlockShard& shard() const { return shard_; }
  const std::vector<float>& parameters() const { return params_; }
  const std::vector<float>& gradients() const { return grads_; }
  bool reports_loss() const { return p_i_ == o_.pipeline - 1 && t_i_ == 0; }
  int data_index() const { return d_i_; }
  int tensor_index() const { return t_i_; }
  int stage_index() const { return p_i_; }
  double comm_s() const { return comm_s_; }
  /// This step's embedding, layers and head, on the wall clock (RankTimes).
  double embedding_s() const { return embedding_s_; }
  double layers_s() const { return layers_s_; }
  double head_s() const { return head_s_; }
  long long allreduces() const { return allreduces_; }
  long long messages() const { return messages_; }

  /// Forward and backward of this replica's part of step `index` in the program's order,
  /// gradients reduced over the tensor and data groups. Returns the replica's mean loss where
  /// reports_loss(), else NaN.
  double step(long long index) {
    comm_s_ = embedding_s_ = layers_s_ = head_s_ = 0;
    allreduces_ = messages_ = 0;
    std::fill(grads_.begin(), grads_.end(), 0.0f);
    BlockConfig global = o_.block;
    global.micro_batch = static_cast<int>(o_.batch);
    const std::vector<int> tokens = synthetic_tokens(global, o_.seed, static_cast<long>(index));
    replica_tokens_ = tokens.data() + static_cast<std::size_t>(d_i_) *
                                          static_cast<std::size_t>(o_.batch / o_.data) *
                                          static_cast<std::size_t>(o_.block.sequence + 1);
    loss_ = 0;
    run_program(program_, *this,
                ProgramTransfers{&peers_, tensor_members_, t_i_, kTagForward, kTagBackward,
                                 kTagGather, &comm_s_, &messages_});
    replica_tokens_ = nullptr;
    return reports_loss() ? loss_ / o_.micro_batches : std::numeric_limits<double>::quiet_NaN();
  }

  void update() { adam_step(o_.adam, adam_, params_.data(), grads_.data(), params_.size()); }

 private:
  static BlockShard make_shard(const TransformerTrainOptions& o, int stage, int tensor_rank) {
    const std::vector<int> layers = model::stage_layers(o.block.layers, o.pipeline);
    int first = 0;
    for (int s = 0; s < stage; ++s)
      first += layers[static_cast<std::size_t>(s)];
    return BlockShard(o.block, first, layers[static_cast<std::size_t>(stage)], tensor_rank,
                      o.tensor);
  }

  /// The most micro-batches whose forward has run and backward not yet, in the program's order.
  static int in_flight(const RankProgram& program) {
    int open = 0, most = 1;
    for (const ProgramPass& pass : program.passes) {
      open += pass.forward ? 1 : -1;
      most = std::max(most, open);
    }
    return most;
  }

  int rank_of(int d, int t, int p) const { return t + o_.tensor * (d + o_.data * p); }
  bool last_stage() const { return p_i_ == o_.pipeline - 1; }

  /// The micro-batch's tokens in this step's replica batch.
  const int* micro_tokens(int micro_batch) const {
    return replica_tokens_ + static_cast<std::size_t>(micro_batch) *
                                 static_cast<std::size_t>(o_.micro_batch()) *
                                 static_cast<std::size_t>(o_.block.sequence + 1);
  }

  /// A forward takes a free block (and its stream) for its micro-batch until the backward;
  /// a backward's input is the stream's gradient.
  std::vector<float>& prepare(const ProgramPass& pass) override {
    if (!pass.forward) return hidden_gradient_;
    int& slot = slot_of_[static_cast<std::size_t>(pass.micro_batch)];
    slot = free_slots_.back();
    free_slots_.pop_back();
    return hidden_[static_cast<std::size_t>(slot)];
  }

  const std::vector<float>& run(const ProgramPass& pass, bool received) override {
    int& slot = slot_of_[static_cast<std::size_t>(pass.micro_batch)];
    CpuTransformerBlock& block = *blocks_[static_cast<std::size_t>(slot)];
    const int* tokens = micro_tokens(pass.micro_batch);
    if (pass.forward) {
      std::vector<float>& hidden = hidden_[static_cast<std::size_t>(slot)];
      loss_ += forward_pass(received, block, tokens, hidden);
      return hidden;
    }
    backward_pass(received, block, tokens);
    free_slots_.push_back(slot);
    slot = -1;
    return hidden_gradient_;
  }

  /// The embedding (no input received) or the previous stage's activations, this stage's
  /// layers, then the head's loss and gradient (last stage).
  double forward_pass(bool received, CpuTransformerBlock& block, const int* tokens,
                      std::vector<float>& hidden) {
    auto mark = Clock::now();
    if (!received) {
      block.embed_forward(params_.data(), tokens, hidden.data(), &tensor_reduce_);
      embedding_s_ += lap(mark);
    }
    const float* p = params_.data();
    for (int l = 0; l < shard_.config().layers; ++l) {
      block.attention_forward(l, p, hidden.data(), partial_.data());
      add_tensor_sum(hidden);
      block.feed_forward_forward(l, p, hidden.data(), partial_.data());
      add_tensor_sum(hidden);
    }
    layers_s_ += lap(mark);
    if (!last_stage()) return 0;
    const float loss = block.head_forward(p, tokens, hidden.data(), grads_.data(), &tensor_reduce_);
    head_s_ += lap(mark);
    return static_cast<double>(loss);
  }

  /// The head's backward (no input received) or the next stage's gradient, this stage's layers
  /// backward, then the embedding's (first stage).
  void backward_pass(bool received, CpuTransformerBlock& block, const int* tokens) {
    std::vector<float>& gradient = hidden_gradient_;
    const float* p = params_.data();
    auto mark = Clock::now();
    if (!received) {
      block.head_backward(p, gradient.data(), grads_.data(), &tensor_reduce_);
      head_s_ += lap(mark);
    }
    for (int l = shard_.config().layers - 1; l >= 0; --l) {
      block.feed_forward_backward(l, p, gradient.data(), partial_.data(), grads_.data(),
                                  &tensor_reduce_);
      add_whole(gradient);
      block.attention_backward(l, p, gradient.data(), partial_.data(), grads_.data(),
                               &tensor_reduce_);
      add_whole(gradient);
    }
    layers_s_ += lap(mark);
    if (p_i_ == 0) {
      block.embed_backward(tokens, gradient.data(), grads_.data(), &tensor_reduce_);
      embedding_s_ += lap(mark);
    }
  }

  /// target += the tensor group's sum of partial_ (a sublayer's partial output: Megatron's g).
  void add_tensor_sum(std::vector<float>& target) {
    timed_allreduce(tensor_members_, partial_.data(), partial_.size(), kTagTensor);
    add_whole(target);
  }

  /// Seconds since `mark`, which moves to now.
  static double lap(Clock::time_point& mark) {
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return seconds;
  }

  /// target += partial_, already whole on every rank (summed inside the block: Megatron's f).
  void add_whole(std::vector<float>& target) {
    for (std::size_t e = 0; e < target.size(); ++e)
      target[e] += partial_[e];
  }

  void timed_allreduce(const std::vector<int>& members, float* data, std::size_t n, int tag,
                       bool maximum = false) {
    if (members.size() < 2) return;
    const auto start = Clock::now();
    if (maximum)
      allreduce_max(peers_, members, data, n, tag);
    else
      allreduce_sum(peers_, members, data, n, tag);
    comm_s_ += seconds_since(start);
    if (tag == kTagTensor) ++allreduces_;
  }

  /// The block's own reductions over the tensor group (the embedding's output, the norms' output
  /// gradients, the vocabulary-parallel head's), timed and counted like the sublayers'.
  class TensorGroupReduce final : public TensorReduce {
   public:
    explicit TensorGroupReduce(TransformerRank& owner) : owner_(owner) {}
    int rank() const override { return owner_.t_i_; }
    void max(float* values, std::size_t n) override {
      owner_.timed_allreduce(owner_.tensor_members_, values, n, kTagTensor, true);
    }
    void sum(float* values, std::size_t n) override {
      owner_.timed_allreduce(owner_.tensor_members_, values, n, kTagTensor);
    }

   private:
    TransformerRank& owner_;
  };

  /// Sums the ranges' values over `members` in one message each way.
  void allreduce_ranges(const std::vector<std::pair<std::size_t, std::size_t>>& ranges,
                        const std::vector<int>& members, int tag) {
    if (members.size() < 2 || ranges.empty()) return;
    std::vector<float> packed;
    for (const auto& [offset, count] : ranges)
      packed.insert(packed.end(), grads_.begin() + static_cast<std::ptrdiff_t>(offset),
                    grads_.begin() + static_cast<std::ptrdiff_t>(offset + count));
    timed_allreduce(members, packed.data(), packed.size(), tag);
    std::size_t at = 0;
    for (const auto& [offset, count] : ranges) {
      std::copy(packed.begin() + static_cast<std::ptrdiff_t>(at),
                packed.begin() + static_cast<std::ptrdiff_t>(at + count),
                grads_.begin() + static_cast<std::ptrdiff_t>(offset));
      at += count;
    }
  }

  /// The mean over micro-batches.
  void passes_done() override {
    if (o_.micro_batches == 1) return;
    const float scale = 1.0f / static_cast<float>(o_.micro_batches);
    for (float& g : grads_)
      g *= scale;
  }

  /// One of the program's reductions: the shared K/V heads' partial sums over the ranks that
  /// share them (t > kv_heads), or the mean over the data group, by sync's communicator when
  /// there is one (the plan's collective algorithm), else by an all-reduce of the stage's ranges.
  void reduce(const std::vector<int>& group) override {
    if (group == kv_members_) {  // ranks sharing a K/V head: its projections' partial sums
      allreduce_ranges(shard_.kv_partial(), group, kTagKv);
    } else if (shared_.communicator != nullptr && shared_.gradients.empty()) {
      // One worker per process: each combines its own gradient with the others' (the plan's
      // collective algorithm, its messages and waits are this rank's communication).
      shared_.communicator->combine({grads_.data()}, {1.0}, grads_.size(), o_.combine);
    } else if (shared_.communicator != nullptr) {
      // Every worker's gradient is ready at the first barrier; one thread combines them all.
      peers_.barrier();
      if (peers_.rank() == 0)
        shared_.communicator->combine(shared_.gradients,
                                      std::vector<double>(shared_.gradients.size(), 1.0),
                                      grads_.size(), o_.combine);
      peers_.barrier();
    } else {
      allreduce_ranges(shard_.stage_ranges(), group, kTagData);  // the rest is zero
      const float scale = 1.0f / static_cast<float>(group.size());
      for (float& g : grads_)
        g *= scale;
    }
  }

  const TransformerTrainOptions& o_;
  PeerGroup& peers_;
  SharedState& shared_;
  int t_i_, d_i_, p_i_;
  BlockShard shard_;
  RankProgram program_;
  TensorGroupReduce tensor_reduce_;
  std::vector<std::unique_ptr<CpuTransformerBlock>> blocks_;
  std::vector<std::vector<float>> hidden_;  ///< per block
  std::vector<int> free_slots_, slot_of_;   ///< blocks not in use; each micro-batch's block
  std::vector<float> hidden_gradient_, partial_, params_, grads_;
  AdamState adam_;
  std::vector<int> tensor_members_, kv_members_;
  const int* replica_tokens_ = nullptr;  ///< this step's replica batch, during step()
  double loss_ = 0;                      ///< this step's summed micro-batch losses
  double comm_s_ = 0;
  double embedding_s_ = 0, layers_s_ = 0, head_s_ = 0;  ///< this step's (lap())
  long long allreduces_ = 0, messages_ = 0;
};

/// Rank r's program must place its shard where exec's rank order does (check_place) and charge
/// what the shard runs: each pass's tensor all-reduces over its tensor group, 1/t slices sent and
/// sliced inputs all-gathered by the tensor group's ring, and its reductions (the ranks sharing
/// its K/V head, its data group). Checked for every rank before any rank starts (a refusal on
/// one rank after the others began would leave them waiting).
void check_program(const TransformerTrainOptions& o, const model::Plan& plan, int rank,
                   const RankProgram& program) {
  const int t = o.tensor, p = o.pipeline;
  const MeshRank place{o.data, t, p, o.micro_batches, rank};
  const int t_i = place.tensor_index(), d_i = place.data_index(), p_i = place.stage();
  const auto wrong = [&](const std::string& what) {
    refuse_program("transformer trainer", plan, place, what);
  };
  std::vector<std::vector<int>> reductions;
  if (t > o.block.kv_heads) {  // the ranks that share this rank's K/V head
    reductions.emplace_back();
    for (int k : kv_sharing_ranks(o.block.kv_heads, t, t_i))
      reductions.back().push_back(place.rank_of(d_i, k, p_i));
  }
  if (o.data > 1 && o.reduction == DataReduction::PeerAllReduce)
    reductions.push_back(place.data_group());
  check_place("transformer trainer", plan, program, place, reductions);
  const int layers = model::stage_layers(o.block.layers, p)[static_cast<std::size_t>(p_i)];
  const bool first = p_i == 0, last = p_i == p - 1;
  std::vector<int> ring;
  if (t > 1)
    ring = {place.rank_of(d_i, (t_i + t - 1) % t, p_i), place.rank_of(d_i, (t_i + 1) % t, p_i)};
  std::sort(ring.begin(), ring.end());
  ring.erase(std::unique(ring.begin(), ring.end()), ring.end());
  for (const ProgramPass& pass : program.passes) {
    // The block's tensor all-reduces: two per layer each way (g forward, f backward), the
    // embedding's on the first stage, the head's two forward and one backward on the last.
    const long long runs =
        t == 1 ? 0
               : 2LL * layers + (pass.forward ? (first ? 1 : 0) + (last ? 2 : 0) : (last ? 1 : 0));
    if (pass.tensor_allreduces != runs)
      wrong(fmt::format("a pass charged {} tensor all-reduces, where the shard runs {}",
                        pass.tensor_allreduces, runs));
    if (runs > 0 && pass.tensor_group != place.tensor_group())
      wrong("a tensor all-reduce over another group");
    if (!pass.send_to.empty() && pass.send_slice != (t > 1))
      wrong(t > 1 ? "a pass sends its whole output, not its 1/t slice"
                  : "a pass sends a slice with no tensor split");
    const bool gathers = pass.receive_from >= 0 && t > 1;
    if (pass.gather_sends != (gathers ? t - 1 : 0) ||
        pass.gather_peers != (gathers ? ring : std::vector<int>{}))
      wrong("a pass's input is not all-gathered by its tensor group's ring");
  }
}

}  // namespace

std::vector<RankProgram> transformer_rank_programs(const TransformerTrainOptions& o) {
  std::vector<RankProgram> programs;
  if (o.reduction == DataReduction::Communicator) {
    RankProgram program;
    program.stage = 0;
    program.updates = 1;
    for (int j = 0; j < o.micro_batches; ++j)
      for (bool forward : {true, false}) {
        ProgramPass pass;
        pass.forward = forward;
        pass.micro_batch = j;
        program.passes.push_back(pass);
      }
    if (o.data > 1) {  // sync's combine over every worker, by its communicator
      program.reductions.emplace_back();
      for (int r = 0; r < o.workers(); ++r)
        program.reductions.back().push_back(r);
    }
    for (int r = 0; r < o.workers(); ++r) {
      program.worker = r;
      programs.push_back(program);
    }
    return programs;
  }
  std::optional<model::Plan> owned;
  if (o.plan == nullptr) owned = transformer_layout_plan(o);
  const model::Plan& plan = o.plan != nullptr ? *o.plan : *owned;
  for (int r = 0; r < o.workers(); ++r) {
    programs.push_back(rank_program(plan, r));
    check_program(o, plan, r, programs.back());
  }
  return programs;
}

namespace {

/// Sync's communicator for ranks that are threads of this process (`in_process`) or one MPI
/// process each; std::invalid_argument when the one the options give cannot serve them.
void prepare_shared(const TransformerTrainOptions& o, SharedState& shared, bool in_process) {
  if (o.reduction != DataReduction::Communicator || o.data < 2) return;
  if (o.communicator == nullptr && !in_process)
    throw std::invalid_argument(
        "train_transformer: sync across processes needs a communicator of one worker per process");
  if (o.communicator == nullptr) shared.owned = std::make_unique<ThreadCommunicator>(o.workers());
  shared.communicator = o.communicator != nullptr ? o.communicator : shared.owned.get();
  Communicator& c = *shared.communicator;
  const int local = in_process ? o.workers() : 1;
  if (c.workers() != o.workers() || c.local_workers() != local)
    throw std::invalid_argument(fmt::format(
        "train_transformer: a {} communicator of {} workers, {} in this process, for {} ranks {}",
        c.name(), c.workers(), c.local_workers(), o.workers(),
        in_process ? "on threads" : "one per process"));
  if (in_process) shared.gradients.assign(static_cast<std::size_t>(o.workers()), nullptr);
}

/// What one rank measured over the run.
struct RankRecord {
  std::vector<double> loss, step_s, comm_s;
  double wall_s = 0;  ///< from its first step's start to its last step's end
  RankTimes times;
};

nlohmann::json record_json(const RankRecord& r) {
  const RankTimes& t = r.times;
  return {{"loss", r.loss},
          {"step_s", r.step_s},
          {"comm_s", r.comm_s},
          {"wall_s", r.wall_s},
          {"times",
           {t.rank, t.data_index, t.tensor_index, t.stage, t.step_s, t.compute_s, t.comm_s,
            t.tensor_allreduces, t.messages, t.embedding_s, t.layers_s, t.head_s, t.update_s}}};
}

RankRecord record_from_json(const nlohmann::json& j) {
  RankRecord r;
  // A rank that computes no loss (not the last stage) sends NaN, which JSON writes as null.
  for (const nlohmann::json& loss : j.at("loss"))
    r.loss.push_back(loss.is_null() ? std::nan("") : loss.get<double>());
  r.step_s = j.at("step_s").get<std::vector<double>>();
  r.comm_s = j.at("comm_s").get<std::vector<double>>();
  r.wall_s = j.at("wall_s").get<double>();
  const nlohmann::json& t = j.at("times");
  r.times = {t[0].get<int>(),       t[1].get<int>(),    t[2].get<int>(),     t[3].get<int>(),
             t[4].get<double>(),    t[5].get<double>(), t[6].get<double>(),  t[7].get<long long>(),
             t[8].get<long long>(), t[9].get<double>(), t[10].get<double>(), t[11].get<double>(),
             t[12].get<double>()};
  return r;
}

/// The report from every rank's record: the global loss per step (the mean of the replicas'),
/// the slowest rank's step, medians per rank; the wall is the longest rank's (every rank
/// starts as the barrier releases it).
TransformerReport assemble(const TransformerTrainOptions& o, const std::vector<RankRecord>& ranks) {
  TransformerReport report;
  report.label = o.label();
  report.steps = o.steps;
  report.parameters = block_parameters(o.block).total;
  report.loss.assign(static_cast<std::size_t>(o.steps), 0.0);
  report.step_s.assign(static_cast<std::size_t>(o.steps), 0.0);
  for (const RankRecord& r : ranks) {
    report.wall_s = std::max(report.wall_s, r.wall_s);
    for (std::size_t s = 0; s < report.step_s.size(); ++s) {
      report.step_s[s] = std::max(report.step_s[s], r.step_s[s]);
      if (!std::isnan(r.loss[s])) report.loss[s] += r.loss[s] / o.data;
    }
    report.ranks.push_back(r.times);
  }
  report.step_median_s = median(report.step_s);
  return report;
}

/// Rank peers.rank()'s training: options.steps steps from `initial`, timed; its record, and
/// for replica 0's ranks their shard's final parameters added into `final_parameters`
/// (unsplit, under `shared.mutex`).
RankRecord train_rank(const TransformerTrainOptions& options, RankProgram program, PeerGroup& peers,
                      SharedState& shared, const std::vector<float>& initial,
                      std::vector<float>& final_parameters) {
  TransformerRank rank(options, std::move(program), peers, shared);
  rank.load(initial);
  RankRecord record;
  std::vector<double> compute_s;
  double embedding_s = 0, layers_s = 0, head_s = 0, update_s = 0;  // summed over steps
  long long allreduces = 0, messages = 0;
  peers.barrier();  // every rank built: the clocks start together
  const auto start = Clock::now();
  for (long long s = 0; s < options.steps; ++s) {
    const auto step_start = Clock::now();
    record.loss.push_back(rank.step(s));
    const auto update_start = Clock::now();
    rank.update();
    update_s += seconds_since(update_start);
    embedding_s += rank.embedding_s();
    layers_s += rank.layers_s();
    head_s += rank.head_s();
    record.step_s.push_back(seconds_since(step_start));
    record.comm_s.push_back(rank.comm_s());
    compute_s.push_back(record.step_s.back() - rank.comm_s());
    allreduces = rank.allreduces();
    messages = rank.messages();
  }
  record.wall_s = seconds_since(start);
  const double steps = static_cast<double>(std::max<long long>(1, options.steps));
  record.times = {peers.rank(),
                  rank.data_index(),
                  rank.tensor_index(),
                  rank.stage_index(),
                  median(record.step_s),
                  median(compute_s),
                  median(record.comm_s),
                  allreduces,
                  messages,
                  embedding_s / steps,
                  layers_s / steps,
                  head_s / steps,
                  update_s / steps};
  if (rank.data_index() == 0) {  // replica 0 holds the model (replicas are identical)
    std::lock_guard<std::mutex> lock(shared.mutex);
    rank.shard().add_to(rank.parameters().data(), final_parameters.data());
  }
  return record;
}

constexpr int kTagRecord = 900;      ///< a rank's record, JSON text, to rank 0
constexpr int kTagParameters = 901;  ///< replica 0's ranks' final parameters, to rank 0

}  // namespace

model::Plan transformer_layout_plan(const TransformerTrainOptions& o) {
  check_transformer_layout(o);
  model::Transformer shape;
  shape.layers = o.block.layers;
  shape.hidden = o.block.hidden;
  shape.heads = o.block.heads;
  shape.kv_heads = o.block.kv_heads;
  shape.ffn_hidden = o.block.ffn_hidden;
  shape.feed_forward = o.block.feed_forward == BlockFeedForward::SwiGlu ? model::FeedForward::SwiGlu
                                                                        : model::FeedForward::Gelu;
  shape.sequence = o.block.sequence;
  shape.vocabulary = o.block.vocabulary;
  shape.tied_embeddings = false;
  shape.linear_bias = false;
  shape.normalization = o.block.norm == BlockNorm::RmsNorm ? model::Normalization::RmsNorm
                                                           : model::Normalization::LayerNorm;
  shape.positions = model::PositionEmbedding::Learned;
  shape.max_positions = o.block.sequence;
  shape.element_bytes = 4;
  model::Workload workload;
  workload.name = "exec's decoder block";
  workload.source = o.origins.file;
  workload.bytes_per_parameter = 4;
  workload.transformer = shape;
  model::derive_workload_fields(workload);
  return layout_plan(workload, LayoutShape{o.data, o.tensor, o.pipeline, o.micro_batches,
                                           o.schedule, o.batch, o.origins});
}

TransformerReport train_transformer_threads(const TransformerTrainOptions& options) {
  check_transformer_layout(options);
  std::vector<RankProgram> programs = transformer_rank_programs(options);
  const std::vector<float> initial = init_block_parameters(options.block, options.seed);
  ThreadPeerHub hub(options.workers());
  SharedState shared;
  prepare_shared(options, shared, true);
  std::vector<RankRecord> records(static_cast<std::size_t>(options.workers()));
  std::vector<float> final_parameters(initial.size(), 0.0f);
  on_threads(
      options.workers(),
      [&](int r) {
        records[static_cast<std::size_t>(r)] =
            train_rank(options, std::move(programs[static_cast<std::size_t>(r)]), hub.peer(r),
                       shared, initial, final_parameters);
      },
      [&hub] { hub.abort(); });
  TransformerReport report = assemble(options, records);
  report.final_parameters = std::move(final_parameters);
  return report;
}

TransformerReport train_transformer(const TransformerTrainOptions& options, PeerGroup& peers) {
  check_transformer_layout(options);
  if (peers.size() != options.workers())
    throw std::invalid_argument("train_transformer: " + std::to_string(peers.size()) +
                                " ranks for a layout of " + std::to_string(options.workers()));
  SharedState shared;
  prepare_shared(options, shared, false);
  if (shared.communicator != nullptr && shared.communicator->first_local_worker() != peers.rank())
    throw std::invalid_argument(
        fmt::format("train_transformer: rank {} holds worker {} of the communicator", peers.rank(),
                    shared.communicator->first_local_worker()));
  std::vector<RankProgram> programs = transformer_rank_programs(options);
  const std::vector<float> initial = init_block_parameters(options.block, options.seed);
  std::vector<float> final_parameters(initial.size(), 0.0f);
  const RankRecord mine =
      train_rank(options, std::move(programs[static_cast<std::size_t>(peers.rank())]), peers,
                 shared, initial, final_parameters);
  // Every rank's record and replica 0's parameters meet on rank 0.
  if (peers.rank() != 0) {
    const std::string text = record_json(mine).dump();
    peers.send_bytes(0, text.data(), text.size(), kTagRecord);
    if ((peers.rank() / options.tensor) % options.data == 0)
      peers.send(0, final_parameters.data(), final_parameters.size(), kTagParameters);
    peers.barrier();  // rank 0 has everything
    return TransformerReport{};
  }
  std::vector<RankRecord> records{mine};
  std::vector<char> text;
  std::vector<float> part(final_parameters.size());
  for (int r = 1; r < peers.size(); ++r) {
    peers.recv_any(r, kTagRecord, text);
    records.push_back(record_from_json(nlohmann::json::parse(text.begin(), text.end())));
    if ((r / options.tensor) % options.data != 0) continue;
    peers.recv(r, part.data(), part.size(), kTagParameters);
    for (std::size_t i = 0; i < part.size(); ++i)
      final_parameters[i] += part[i];
  }
  peers.barrier();
  TransformerReport report = assemble(options, records);
  report.final_parameters = std::move(final_parameters);
  return report;
}

TransformerStepGradients transformer_step_gradients_threads(const TransformerTrainOptions& options,
                                                            const std::vector<float>& parameters,
                                                            long long step) {
  check_transformer_layout(options);
  std::vector<RankProgram> programs = transformer_rank_programs(options);
  ThreadPeerHub hub(options.workers());
  SharedState shared;
  prepare_shared(options, shared, true);
  TransformerStepGradients result;
  result.gradients.assign(block_parameters(options.block).total, 0.0f);
  on_threads(
      options.workers(),
      [&](int r) {
        TransformerRank rank(options, std::move(programs[static_cast<std::size_t>(r)]), hub.peer(r),
                             shared);
        rank.load(parameters);
        hub.peer(r).barrier();  // every rank has registered its buffers before a combine
        const double loss = rank.step(step);
        std::lock_guard<std::mutex> lock(shared.mutex);
        if (!std::isnan(loss)) result.loss += loss / options.data;
        if (rank.data_index() == 0)
          rank.shard().add_to(rank.gradients().data(), result.gradients.data());
      },
      [&hub] { hub.abort(); });
  return result;
}

}  // namespace tauplan::exec
