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
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "exec/peer_group.hpp"
#include "exec/pipeline_parallel.hpp"
#include "exec/rank_threads.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/token_stream.hpp"
#include "exec/trainer.hpp"
#include "exec/transformer_reference.hpp"
#include "model/base/error.hpp"
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
  add_piece(l.token_embedding, f.token_embedding, 0, 0, first_stage && lead);
  add_piece(l.position_embedding, f.position_embedding, 0, 0, first_stage && lead);
  const int q_col = rank_ * local_.local_width(), ffn_col = rank_ * local_.local_ffn();
  const bool shared_kv = tensor_ > full_.kv_heads;
  const int share = shared_kv ? tensor_ / full_.kv_heads : 1;  // ranks per K/V head
  const int kv_col =
      (shared_kv ? rank_ / share : rank_ * local_.local_kv_heads()) * full_.head_dim();
  const bool kv_owned = rank_ % share == 0;
  auto norm = [&](const ParameterSlot& local, const ParameterSlot& whole) {
    if (local.size() == 0) return;
    add_piece(local, whole, 0, 0, lead);
    tensor_partial_.push_back({local.offset, local.size()});
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

std::vector<int> BlockShard::kv_sharers() const {
  if (tensor_ <= full_.kv_heads) return {rank_};
  const int share = tensor_ / full_.kv_heads, first = rank_ / share * share;
  std::vector<int> ranks;
  for (int k = 0; k < share; ++k)
    ranks.push_back(first + k);
  return ranks;
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
    throw InputError(o.file, "workload", "a decoder block shape exec can build",
                     problem.empty() ? "a split shape" : problem);
  if (o.data < 1 || o.tensor < 1 || o.pipeline < 1 || o.micro_batches < 1)
    throw InputError(o.file, "workers", "data, tensor, pipeline and micro-batch counts >= 1");
  BlockConfig shard = o.block;
  shard.tensor = o.tensor;
  if (const std::string problem = shard.problem(); !problem.empty())
    throw InputError(
        o.file, "tensor_parallel",
        fmt::format("a divisor of the {} heads, the feed-forward width {} and the vocabulary {} "
                    "(and a divisor or multiple of the {} key/value heads)",
                    o.block.heads, o.block.ffn_hidden, o.block.vocabulary, o.block.kv_heads),
        fmt::format("{} ({})", o.tensor, problem));
  if (o.pipeline > o.block.layers)
    throw InputError(o.file, "pipeline_parallel",
                     fmt::format("at most the {} layers of the block", o.block.layers),
                     std::to_string(o.pipeline));
  const long long split = static_cast<long long>(o.data) * o.micro_batches;
  if (o.batch < split || o.batch % split != 0)
    throw InputError(o.file, "micro_batches",
                     fmt::format("a divisor of the {} sequences each replica takes (batch {} / "
                                 "{} replicas)",
                                 o.batch / o.data, o.batch, o.data),
                     std::to_string(o.micro_batches));
  if (o.reduction == DataReduction::Communicator && (o.tensor > 1 || o.pipeline > 1))
    throw std::logic_error("the Communicator reduction is for data parallelism alone");
  if (o.steps < 1)
    throw InputError(o.file, "max_steps", "at least 1 step", std::to_string(o.steps));
}

// ------------------------------------------------------------------ one rank

namespace {

constexpr int kTagTensor = 1, kTagForward = 2, kTagBackward = 3, kTagData = 4, kTagNorms = 5,
              kTagKv = 6, kTagVocabulary = 7;

/// What the ranks of one process share: the data group's Communicator (sync) and its buffers.
struct SharedState {
  std::unique_ptr<ThreadCommunicator> communicator;
  std::vector<float*> gradients;  ///< per rank
  std::mutex mutex;               ///< for gathering into one vector
};

/// One rank of the mesh: its shard, blocks (one per micro-batch in flight), step and update.
class TransformerRank {
 public:
  TransformerRank(const TransformerTrainOptions& o, PeerGroup& peers, SharedState& shared)
      : o_(o),
        peers_(peers),
        shared_(shared),
        t_i_(peers.rank() % o.tensor),
        d_i_((peers.rank() / o.tensor) % o.data),
        p_i_(peers.rank() / (o.tensor * o.data)),
        shard_(make_shard(o, p_i_, t_i_)),
        vocabulary_reduce_(*this) {
    BlockConfig local = shard_.config();
    local.micro_batch = o.micro_batch();
    const int m = o.micro_batches;
    const int in_flight = o.pipeline == 1 ? 1
                          : o.schedule == model::PipelineSchedule::GPipe
                              ? m
                              : std::min(o.pipeline - p_i_, m);
    const std::size_t stream =
        static_cast<std::size_t>(local.tokens()) * static_cast<std::size_t>(local.hidden);
    for (int k = 0; k < in_flight; ++k) {
      blocks_.push_back(std::make_unique<CpuTransformerBlock>(local));
      hidden_.emplace_back(stream, 0.0f);
      hidden_gradient_.emplace_back(stream, 0.0f);
    }
    partial_.assign(stream, 0.0f);
    grads_.assign(shard_.size(), 0.0f);
    for (int k = 0; k < o.tensor; ++k)
      tensor_members_.push_back(rank_of(d_i_, k, p_i_));
    for (int d = 0; d < o.data; ++d)
      data_members_.push_back(rank_of(d, t_i_, p_i_));
    for (int k : shard_.kv_sharers())
      kv_members_.push_back(rank_of(d_i_, k, p_i_));
    if (shared_.communicator)
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
  long long allreduces() const { return allreduces_; }
  long long messages() const { return messages_; }

  /// Forward and backward of this replica's part of step `index`, gradients reduced over the
  /// tensor and data groups. Returns the replica's mean loss where reports_loss(), else NaN.
  double step(long long index) {
    comm_s_ = 0;
    allreduces_ = messages_ = 0;
    std::fill(grads_.begin(), grads_.end(), 0.0f);
    BlockConfig global = o_.block;
    global.micro_batch = static_cast<int>(o_.batch);
    const std::vector<int> tokens = synthetic_tokens(global, o_.seed, static_cast<long>(index));
    const std::size_t row = static_cast<std::size_t>(o_.block.sequence + 1);
    const std::size_t n = static_cast<std::size_t>(o_.micro_batch());
    const int* replica = tokens.data() + static_cast<std::size_t>(d_i_) *
                                             static_cast<std::size_t>(o_.batch / o_.data) * row;
    double loss = 0;
    for (const auto& [forward, j] :
         pipeline_schedule_ops(o_.schedule, o_.pipeline, p_i_, o_.micro_batches)) {
      const int* micro = replica + static_cast<std::size_t>(j) * n * row;
      const std::size_t slot = static_cast<std::size_t>(j) % blocks_.size();
      if (forward)
        loss += forward_pass(*blocks_[slot], micro, hidden_[slot], hidden_gradient_[slot]);
      else
        backward_pass(*blocks_[slot], micro, hidden_gradient_[slot]);
    }
    reduce_gradients();
    return reports_loss() ? loss / o_.micro_batches : std::numeric_limits<double>::quiet_NaN();
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

  int rank_of(int d, int t, int p) const { return t + o_.tensor * (d + o_.data * p); }
  bool first_stage() const { return p_i_ == 0; }
  bool last_stage() const { return p_i_ == o_.pipeline - 1; }

  /// Embedding (first stage) or the previous stage's activations, this stage's layers, then the
  /// head's loss and gradient (last stage) or a send to the next stage.
  double forward_pass(CpuTransformerBlock& block, const int* tokens, std::vector<float>& hidden,
                      std::vector<float>& hidden_gradient) {
    if (first_stage())
      block.embed_forward(params_.data(), tokens, hidden.data());
    else
      receive(rank_of(d_i_, t_i_, p_i_ - 1), hidden, kTagForward);
    const float* p = params_.data();
    for (int l = 0; l < shard_.config().layers; ++l) {
      block.attention_forward(l, p, hidden.data(), partial_.data());
      add_tensor_sum(hidden);
      block.feed_forward_forward(l, p, hidden.data(), partial_.data());
      add_tensor_sum(hidden);
    }
    if (last_stage())
      return static_cast<double>(block.head_loss_and_gradients(
          p, tokens, hidden.data(), hidden_gradient.data(), grads_.data(), &vocabulary_reduce_));
    send(rank_of(d_i_, t_i_, p_i_ + 1), hidden, kTagForward);
    return 0;
  }

  void backward_pass(CpuTransformerBlock& block, const int* tokens,
                     std::vector<float>& hidden_gradient) {
    if (!last_stage()) receive(rank_of(d_i_, t_i_, p_i_ + 1), hidden_gradient, kTagBackward);
    const float* p = params_.data();
    for (int l = shard_.config().layers - 1; l >= 0; --l) {
      block.feed_forward_backward(l, p, hidden_gradient.data(), partial_.data(), grads_.data());
      add_tensor_sum(hidden_gradient);
      block.attention_backward(l, p, hidden_gradient.data(), partial_.data(), grads_.data());
      add_tensor_sum(hidden_gradient);
    }
    if (first_stage())
      block.embed_backward(tokens, hidden_gradient.data(), grads_.data());
    else
      send(rank_of(d_i_, t_i_, p_i_ - 1), hidden_gradient, kTagBackward);
  }

  /// target += the tensor group's sum of partial_ (a sublayer's output or input gradient).
  void add_tensor_sum(std::vector<float>& target) {
    timed_allreduce(tensor_members_, partial_.data(), partial_.size(), kTagTensor);
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
    if (tag == kTagTensor || tag == kTagVocabulary) ++allreduces_;
  }

  /// The vocabulary-parallel head's reductions (CpuTransformerBlock::head_loss_and_gradients)
  /// over the tensor group, timed into the communication like the layers' all-reduces.
  class VocabularyReduce final : public TensorReduce {
   public:
    explicit VocabularyReduce(TransformerRank& owner) : owner_(owner) {}
    int rank() const override { return owner_.t_i_; }
    void max(float* values, std::size_t n) override {
      owner_.timed_allreduce(owner_.tensor_members_, values, n, kTagVocabulary, true);
    }
    void sum(float* values, std::size_t n) override {
      owner_.timed_allreduce(owner_.tensor_members_, values, n, kTagVocabulary);
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

  /// The mean over micro-batches, the norms' (and shared K/V heads') partial sums over the
  /// tensor group, then the mean over the data group.
  void reduce_gradients() {
    if (o_.micro_batches > 1) {
      const float scale = 1.0f / static_cast<float>(o_.micro_batches);
      for (float& g : grads_)
        g *= scale;
    }
    allreduce_ranges(shard_.tensor_partial(), tensor_members_, kTagNorms);
    allreduce_ranges(shard_.kv_partial(), kv_members_, kTagKv);
    if (o_.data < 2) return;
    const auto start = Clock::now();
    if (o_.reduction == DataReduction::Communicator) {
      // Every worker's gradient is ready at the first barrier; one thread combines them all.
      peers_.barrier();
      if (peers_.rank() == 0)
        shared_.communicator->combine(shared_.gradients,
                                      std::vector<double>(shared_.gradients.size(), 1.0),
                                      grads_.size(), o_.combine);
      peers_.barrier();
    } else {
      allreduce_sum(peers_, data_members_, grads_.data(), grads_.size(), kTagData);
      const float scale = 1.0f / static_cast<float>(o_.data);
      for (float& g : grads_)
        g *= scale;
    }
    comm_s_ += seconds_since(start);
  }

  void receive(int from, std::vector<float>& buffer, int tag) {
    timed_receive(peers_, from, buffer, tag, comm_s_);
  }

  void send(int to, const std::vector<float>& data, int tag) {
    peers_.send(to, data.data(), data.size(), tag);
    ++messages_;
  }

  const TransformerTrainOptions& o_;
  PeerGroup& peers_;
  SharedState& shared_;
  int t_i_, d_i_, p_i_;
  BlockShard shard_;
  VocabularyReduce vocabulary_reduce_;
  std::vector<std::unique_ptr<CpuTransformerBlock>> blocks_;
  std::vector<std::vector<float>> hidden_, hidden_gradient_;
  std::vector<float> partial_, params_, grads_;
  AdamState adam_;
  std::vector<int> tensor_members_, data_members_, kv_members_;
  double comm_s_ = 0;
  long long allreduces_ = 0, messages_ = 0;
};

void prepare_shared(const TransformerTrainOptions& o, SharedState& shared) {
  if (o.reduction != DataReduction::Communicator || o.data < 2) return;
  shared.communicator = std::make_unique<ThreadCommunicator>(o.workers());
  shared.gradients.assign(static_cast<std::size_t>(o.workers()), nullptr);
}

/// What one rank measured over the run.
struct RankRecord {
  std::vector<double> loss, step_s, comm_s;
  Clock::time_point start, end;
  RankTimes times;
};

/// The report from every rank's record: the global loss per step (the mean of the replicas'),
/// the slowest rank's step, medians per rank.
TransformerReport assemble(const TransformerTrainOptions& o, const std::vector<RankRecord>& ranks) {
  TransformerReport report;
  report.label = o.label();
  report.steps = o.steps;
  report.parameters = block_parameters(o.block).total;
  report.loss.assign(static_cast<std::size_t>(o.steps), 0.0);
  report.step_s.assign(static_cast<std::size_t>(o.steps), 0.0);
  Clock::time_point start = ranks.front().start, end = ranks.front().end;
  for (const RankRecord& r : ranks) {
    start = std::min(start, r.start);
    end = std::max(end, r.end);
    for (std::size_t s = 0; s < report.step_s.size(); ++s) {
      report.step_s[s] = std::max(report.step_s[s], r.step_s[s]);
      if (!std::isnan(r.loss[s])) report.loss[s] += r.loss[s] / o.data;
    }
    report.ranks.push_back(r.times);
  }
  report.wall_s = std::chrono::duration<double>(end - start).count();
  report.step_median_s = median(report.step_s);
  return report;
}

}  // namespace

TransformerReport train_transformer_threads(const TransformerTrainOptions& options) {
  check_transformer_layout(options);
  const std::vector<float> initial = init_block_parameters(options.block, options.seed);
  ThreadPeerHub hub(options.workers());
  SharedState shared;
  prepare_shared(options, shared);
  std::vector<RankRecord> records(static_cast<std::size_t>(options.workers()));
  std::vector<float> final_parameters(initial.size(), 0.0f);
  on_threads(options.workers(), [&](int r) {
    PeerGroup& peers = hub.peer(r);
    TransformerRank rank(options, peers, shared);
    rank.load(initial);
    RankRecord& record = records[static_cast<std::size_t>(r)];
    std::vector<double> compute_s;
    long long allreduces = 0, messages = 0;
    peers.barrier();  // every rank built: the clocks start together
    record.start = Clock::now();
    for (long long s = 0; s < options.steps; ++s) {
      const auto start = Clock::now();
      record.loss.push_back(rank.step(s));
      rank.update();
      record.step_s.push_back(seconds_since(start));
      record.comm_s.push_back(rank.comm_s());
      compute_s.push_back(record.step_s.back() - rank.comm_s());
      allreduces = rank.allreduces();
      messages = rank.messages();
    }
    record.end = Clock::now();
    record.times = {r,
                    rank.data_index(),
                    rank.tensor_index(),
                    rank.stage_index(),
                    median(record.step_s),
                    median(compute_s),
                    median(record.comm_s),
                    allreduces,
                    messages};
    if (rank.data_index() != 0) return;  // replica 0 holds the model (replicas are identical)
    std::lock_guard<std::mutex> lock(shared.mutex);
    rank.shard().add_to(rank.parameters().data(), final_parameters.data());
  });
  TransformerReport report = assemble(options, records);
  report.final_parameters = std::move(final_parameters);
  return report;
}

TransformerStepGradients transformer_step_gradients_threads(const TransformerTrainOptions& options,
                                                            const std::vector<float>& parameters,
                                                            long long step) {
  check_transformer_layout(options);
  ThreadPeerHub hub(options.workers());
  SharedState shared;
  prepare_shared(options, shared);
  TransformerStepGradients result;
  result.gradients.assign(block_parameters(options.block).total, 0.0f);
  on_threads(options.workers(), [&](int r) {
    TransformerRank rank(options, hub.peer(r), shared);
    rank.load(parameters);
    hub.peer(r).barrier();  // every rank has registered its buffers before a combine
    const double loss = rank.step(step);
    std::lock_guard<std::mutex> lock(shared.mutex);
    if (!std::isnan(loss)) result.loss += loss / options.data;
    if (rank.data_index() == 0)
      rank.shard().add_to(rank.gradients().data(), result.gradients.data());
  });
  return result;
}

}  // namespace tauplan::exec
