// transformer_check.cpp: the CUDA decoder block (device_transformer.hpp) checked and timed.
//
//   tauplan_cuda_transformer_check --grad
//       GPU loss and gradients (bf16 compute) against the double reference
//       (transformer_reference.hpp) for three small configs: RMSNorm + SwiGLU + grouped-query
//       heads 4 / kv 2; LayerNorm + GELU + multi-head; a tensor = 2 shard (heads 8 / kv 2 ->
//       4 local heads sharing 1 K/V head). Bounds: loss relative error < 1e-2, gradient
//       relative L2 error (relative_error: ||gpu - ref|| / ||ref|| over the whole vector)
//       < 2e-2; also the first AdamW step against the same step on the host (max abs < 1e-6).
//   tauplan_cuda_transformer_check --train [--steps N] [--lr LR]
//       AdamW on the synthetic token stream (token_stream.hpp); passes when the mean loss of the
//       last 10 steps is below (log V + entropy floor) / 2, halfway between a model that
//       learned nothing and the best possible one (the mean of 10 steps, not the last alone,
//       so that one noisy micro-batch neither passes nor fails it).
//   tauplan_cuda_transformer_check --layer-times --profile FILE.json [--tensors 1,2,4,8]
//                                  [--reps R]
//       forward + backward of ONE layer shard (no embedding, no head) of GPT-3 175B and of
//       Llama-3-70B at each tensor shard t, on random input and random upstream gradient:
//       median of R (default 10) CUDA-event timings after 3 warm-ups, beside the compute
//       model's prediction ops_seconds(layer_ops(shape, Recompute::None), profile) with the
//       math attention path (our kernel) and 2-byte elements. The time includes the weight-
//       gradient GEMMs (they write fp32 into the gradient vector) and the norm-gain gradients;
//       it excludes zeroing or accumulating gradients across micro-batches and the optimizer.
//   tauplan_cuda_transformer_check --layer-breakdown --profile FILE.json
//                                  [--models gpt3-175b,llama3-70b] [--tensors 1,8] [--reps R]
//       the same layer shards, every kernel, cuBLAS call and copy timed on its own (CUDA events
//       between consecutive launches, DeviceTransformerBlock::time_layer_stack_ops; median over
//       R passes, default 5, after 2 warm-ups), grouped into the compute model's ops of
//       layer_ops(shape, Recompute::None): one JSON line per op ("breakdown_op": the model's
//       op name, or the device's own name with predicted 0 where the model has no op: bf16
//       casts, the norm gain-gradient pass), its measured ms, the device ops it sums
//       ({label: ms}) and the model ops with their predicted ms (op_seconds); then one summary
//       line per shard with the measured and predicted totals by category (gemm, batched_gemm:
//       the attention GEMMs, memory: kernels and copies the model counts, unmatched) and the
//       plain (event-free) layer time for comparison.
//   tauplan_cuda_transformer_check --step-times [--reps R]
//       one whole training step (zero gradients, forward, backward, AdamW) of a mid-size model,
//       median of R (default 10), for comparison with exec/cuda/pytorch_block.py.
//
// Every result is one JSON object per line on stdout (a human line goes to stderr). Exit 0 when
// every check passes, 1 when one fails or a CUDA error occurs, 2 on a bad argument or profile
// file, 77 without a usable GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "exec/cuda/cuda_backend.hpp"
#include "exec/cuda/device_transformer.hpp"
#include "exec/token_stream.hpp"
#include "exec/transformer_config.hpp"
#include "exec/transformer_reference.hpp"
#include "model/compute/compute_profile.hpp"
#include "model/compute/layer_ops.hpp"
#include "model/compute/profile_file.hpp"

using namespace tauplan::exec;
using tauplan::exec::cuda::DeviceTransformerBlock;

namespace {

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr,
               "tauplan_cuda_transformer_check: error: %s\n"
               "usage: tauplan_cuda_transformer_check --grad | --train [--steps N] [--lr LR] |\n"
               "       --layer-times --profile FILE.json [--tensors 1,2,4,8] [--reps R] |\n"
               "       --layer-breakdown --profile FILE.json [--models gpt3-175b,llama3-70b]\n"
               "                         [--tensors 1,8] [--reps R] |\n"
               "       --step-times [--reps R]\n",
               message.c_str());
  std::exit(2);
}

// A JSON string literal of s. (Not named `quoted`: std::quoted, found by argument-dependent
// lookup wherever <iomanip> is included, is the better match for a non-const std::string.)
std::string json_quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
  }
  return out + "\"";
}

std::string num(double v, int digits = 6) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

const char* norm_name(BlockNorm n) {
  return n == BlockNorm::LayerNorm ? "layernorm" : "rmsnorm";
}
const char* ffn_name(BlockFeedForward f) {
  return f == BlockFeedForward::Gelu ? "gelu" : "swiglu";
}

// The config's fields as JSON members (no braces).
std::string config_fields(const BlockConfig& c) {
  std::ostringstream o;
  o << "\"vocabulary\": " << c.vocabulary << ", \"hidden\": " << c.hidden
    << ", \"heads\": " << c.heads << ", \"kv_heads\": " << c.kv_heads
    << ", \"ffn_hidden\": " << c.ffn_hidden << ", \"layers\": " << c.layers
    << ", \"sequence\": " << c.sequence << ", \"micro_batch\": " << c.micro_batch
    << ", \"tensor\": " << c.tensor << ", \"norm\": \"" << norm_name(c.norm)
    << "\", \"feed_forward\": \"" << ffn_name(c.feed_forward) << "\"";
  return o.str();
}

double median(std::vector<float> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? static_cast<double>(v[n / 2])
               : 0.5 * (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2]));
}

double gib(std::size_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(1ull << 30);
}

std::vector<double> widen(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// ------------------------------------------------------------------------ --grad

bool check_gradients(const std::string& name, const BlockConfig& c) {
  const uint64_t param_seed = 7, token_seed = 11;
  const std::vector<float> params = init_block_parameters(c, param_seed);
  const std::vector<int> tokens = synthetic_tokens(c, token_seed, 0);
  std::vector<double> g_ref;
  const double loss_ref = reference_loss_and_gradients(c, widen(params), tokens, &g_ref);

  DeviceTransformerBlock block(c, 0);
  block.set_debug_sync(true);  // small: name the kernel of any asynchronous fault
  block.set_parameters(params);
  const double loss = static_cast<double>(block.loss_and_gradients(tokens.data()));
  const std::vector<float> g = block.gradients();
  const std::vector<double> g_gpu = widen(g);
  const double grad_err = relative_error(g_gpu, g_ref);
  const double loss_err = std::fabs(loss - loss_ref) / std::max(std::fabs(loss_ref), 1e-300);

  // Per parameter tensor, for the diagnosis of a failure.
  std::string slots;
  std::string worst_name;
  double worst = 0;
  for (const ParameterSlot& slot : block_parameters(c).all()) {
    const auto first = static_cast<std::ptrdiff_t>(slot.offset);
    const auto last = static_cast<std::ptrdiff_t>(slot.offset + slot.size());
    const std::vector<double> a(g_gpu.begin() + first, g_gpu.begin() + last);
    const std::vector<double> r(g_ref.begin() + first, g_ref.begin() + last);
    const double e = relative_error(a, r);
    if (!slots.empty()) slots += ", ";
    slots += json_quoted(slot.name) + ": " + num(e, 3);
    if (!(e <= worst)) {
      worst = e;
      worst_name = slot.name;
    }
  }

  // First AdamW step: m = (1 - b1) g, v = (1 - b2) g^2, so p1 = p0 (1 - lr wd) - lr mhat /
  // (sqrt(vhat) + eps) with mhat = m / (1 - b1), vhat = v / (1 - b2).
  const cuda::AdamConfig adam;
  const float lr = 1e-3f;
  block.step(lr);
  const std::vector<float> after = block.parameters();
  double adam_err = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const double gi = static_cast<double>(g[i]);
    const double b1 = static_cast<double>(adam.beta1), b2 = static_cast<double>(adam.beta2);
    const double mhat = (1 - b1) * gi / (1 - b1);
    const double vhat = (1 - b2) * gi * gi / (1 - b2);
    const double expect =
        static_cast<double>(params[i]) *
            (1 - static_cast<double>(lr) * static_cast<double>(adam.weight_decay)) -
        static_cast<double>(lr) * mhat / (std::sqrt(vhat) + static_cast<double>(adam.epsilon));
    adam_err = std::max(adam_err, std::fabs(static_cast<double>(after[i]) - expect));
  }

  const bool ok = std::isfinite(loss) && loss_err < 1e-2 && grad_err < 2e-2 && adam_err < 1e-6;
  std::printf(
      "{\"mode\": \"grad\", \"name\": %s, %s, \"parameters\": %zu, \"loss_gpu\": %s, "
      "\"loss_reference\": %s, \"loss_relative_error\": %s, \"loss_bound\": 1e-2, "
      "\"gradient_relative_error\": %s, \"gradient_bound\": 2e-2, \"worst_slot\": %s, "
      "\"worst_slot_error\": %s, \"adam_max_abs_error\": %s, \"adam_bound\": 1e-6, "
      "\"slot_errors\": {%s}, \"ok\": %s}\n",
      json_quoted(name).c_str(), config_fields(c).c_str(), params.size(), num(loss, 8).c_str(),
      num(loss_ref, 8).c_str(), num(loss_err, 3).c_str(), num(grad_err, 3).c_str(),
      json_quoted(worst_name).c_str(), num(worst, 3).c_str(), num(adam_err, 3).c_str(),
      slots.c_str(), ok ? "true" : "false");
  std::fflush(stdout);
  std::fprintf(stderr,
               "grad %-34s loss %.6f ref %.6f (rel %.2e)  gradient rel %.2e (worst %s %.2e)  "
               "adam %.1e  %s\n",
               name.c_str(), loss, loss_ref, loss_err, grad_err, worst_name.c_str(), worst,
               adam_err, ok ? "PASS" : "FAIL");
  return ok;
}

int run_grad() {
  BlockConfig a;  // RMSNorm + SwiGLU + GQA
  a.vocabulary = 64;
  a.hidden = 64;
  a.heads = 4;
  a.kv_heads = 2;
  a.ffn_hidden = 128;
  a.layers = 2;
  a.sequence = 32;
  a.micro_batch = 4;
  a.norm = BlockNorm::RmsNorm;
  a.feed_forward = BlockFeedForward::SwiGlu;

  BlockConfig m;  // LayerNorm + GELU + MHA
  m.vocabulary = 96;
  m.hidden = 128;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  m.layers = 2;
  m.sequence = 64;
  m.micro_batch = 2;
  m.norm = BlockNorm::LayerNorm;
  m.feed_forward = BlockFeedForward::Gelu;

  BlockConfig t = a;  // tensor = 2 shard: 4 local query heads share 1 local K/V head
  t.hidden = 128;
  t.heads = 8;
  t.kv_heads = 2;
  t.ffn_hidden = 256;
  t.sequence = 48;
  t.micro_batch = 3;
  t.tensor = 2;

  int failures = 0;
  failures += check_gradients("rmsnorm-swiglu-gqa", a) ? 0 : 1;
  failures += check_gradients("layernorm-gelu-mha", m) ? 0 : 1;
  failures += check_gradients("rmsnorm-swiglu-gqa-tensor2", t) ? 0 : 1;
  std::fprintf(stderr, "grad: %s (%d of 3 failed)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}

// ------------------------------------------------------------------------ --train

int run_train(int steps, float lr) {
  BlockConfig c;  // transformer_config.hpp defaults, hidden 64
  c.vocabulary = 64;
  c.hidden = 64;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn_hidden = 128;
  c.layers = 2;
  c.sequence = 32;
  c.micro_batch = 4;
  const uint64_t seed = 5;
  const double floor = synthetic_entropy_floor(c, seed);
  const double uniform = std::log(static_cast<double>(c.vocabulary));
  const double bound = 0.5 * (uniform + floor);

  DeviceTransformerBlock block(c, 0);
  block.set_parameters(init_block_parameters(c, 3));
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    const std::vector<int> tokens = synthetic_tokens(c, seed, i);
    losses.push_back(static_cast<double>(block.loss_and_gradients(tokens.data())));
    block.step(lr);
  }
  const std::size_t tail = std::min<std::size_t>(10, losses.size());
  double final_mean = 0;
  for (std::size_t i = losses.size() - tail; i < losses.size(); ++i)
    final_mean += losses[i];
  final_mean /= static_cast<double>(tail);
  bool finite = true;
  for (double l : losses)
    finite = finite && std::isfinite(l);
  const bool ok = finite && final_mean < bound;
  std::printf(
      "{\"mode\": \"train\", %s, \"steps\": %d, \"lr\": %s, \"first_loss\": %s, "
      "\"last_loss\": %s, \"final_mean_loss\": %s, \"uniform_loss\": %s, "
      "\"entropy_floor\": %s, \"bound\": %s, \"ok\": %s}\n",
      config_fields(c).c_str(), steps, num(static_cast<double>(lr)).c_str(),
      num(losses.front()).c_str(), num(losses.back()).c_str(), num(final_mean).c_str(),
      num(uniform).c_str(), num(floor).c_str(), num(bound).c_str(), ok ? "true" : "false");
  std::fprintf(stderr,
               "train %d steps: loss %.4f -> %.4f (mean of last %zu %.4f), bound %.4f "
               "(log V %.4f, floor %.4f): %s\n",
               steps, losses.front(), losses.back(), tail, final_mean, bound, uniform, floor,
               ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

// ------------------------------------------------------------------------ --layer-times

struct LayerModel {
  const char* name;
  BlockConfig config;
};

std::vector<LayerModel> layer_models() {
  // GPT-3 175B: Brown et al. 2020, "Language Models are Few-Shot Learners", arXiv 2005.14165,
  // Table 2.1: d_model 12288, 96 heads (d_head 128), 96 layers, context 2048; feed-forward
  // 4 d_model; GELU and LayerNorm (GPT-2's architecture).
  BlockConfig g;
  g.vocabulary = 8;  // the head is not timed: keep it small
  g.hidden = 12288;
  g.heads = 96;
  g.kv_heads = 96;
  g.ffn_hidden = 49152;
  g.layers = 1;
  g.sequence = 2048;
  g.micro_batch = 1;
  g.norm = BlockNorm::LayerNorm;
  g.feed_forward = BlockFeedForward::Gelu;
  // Llama 3 70B: Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783, Table 3:
  // model dimension 8192, FFN dimension 28672, 64 attention heads, 8 key/value heads, SwiGLU,
  // RMSNorm; sequence 8192 (the pre-training context length).
  BlockConfig l;
  l.vocabulary = 8;
  l.hidden = 8192;
  l.heads = 64;
  l.kv_heads = 8;
  l.ffn_hidden = 28672;
  l.layers = 1;
  l.sequence = 8192;
  l.micro_batch = 1;
  l.norm = BlockNorm::RmsNorm;
  l.feed_forward = BlockFeedForward::SwiGlu;
  return {{"gpt3-175b", g}, {"llama3-70b", l}};
}

// The compute model's shape of one layer shard of `c` (math attention, bf16 activations).
tauplan::model::LayerShape layer_shape(const BlockConfig& c) {
  tauplan::model::LayerShape shape;
  shape.hidden = c.hidden;
  shape.heads = c.heads;
  shape.kv_heads = c.kv_heads;
  shape.ffn_hidden = c.ffn_hidden;
  shape.swiglu = c.feed_forward == BlockFeedForward::SwiGlu;
  shape.layer_norm = c.norm == BlockNorm::LayerNorm;
  shape.sequence = c.sequence;
  shape.micro_batch = c.micro_batch;
  shape.tensor = c.tensor;
  shape.sequence_parallel = false;
  shape.attention = tauplan::model::AttentionKernel::Math;
  shape.element_bytes = 2;
  return shape;
}

int run_layer_times(const std::string& profile_path, const std::vector<int>& tensors, int reps) {
  tauplan::model::ComputeProfile profile;
  try {
    profile = tauplan::model::read_compute_profile(profile_path);
  } catch (const std::exception& e) {
    std::printf("{\"mode\": \"layer_times\", \"error\": %s}\n", json_quoted(e.what()).c_str());
    std::fprintf(stderr, "layer-times: cannot read the profile: %s\n", e.what());
    return 2;
  }
  const std::string device = cuda::device_description(0);
  int failures = 0;
  for (const LayerModel& model : layer_models()) {
    for (int t : tensors) {
      BlockConfig c = model.config;
      c.tensor = t;
      const std::string head = std::string("{\"mode\": \"layer_times\", \"model\": ") +
                               json_quoted(model.name) + ", \"impl\": \"tauplan-cuda\", " +
                               "\"attention\": \"math\", " + config_fields(c);
      const std::string problem = c.problem();
      if (!problem.empty()) {
        std::printf("%s, \"skipped\": %s}\n", head.c_str(), json_quoted(problem).c_str());
        std::fflush(stdout);
        continue;
      }
      const tauplan::model::LayerShape shape = layer_shape(c);
      std::string prediction;
      double predicted_ms = std::nan("");
      try {
        const tauplan::model::OpsTime p = tauplan::model::ops_seconds(
            tauplan::model::layer_ops(shape, tauplan::model::Recompute::None), profile);
        predicted_ms = p.total() * 1e3;
        prediction = ", \"predicted_ms\": " + num(predicted_ms) +
                     ", \"predicted_split_ms\": {\"gemm\": " + num(p.gemm_s * 1e3) +
                     ", \"attention\": " + num(p.attention_s * 1e3) +
                     ", \"memory\": " + num(p.memory_s * 1e3) +
                     ", \"launch\": " + num(p.launch_s * 1e3) + "}";
      } catch (const std::exception& e) {
        prediction = ", \"prediction_error\": " + json_quoted(e.what());
      }

      const std::size_t need = DeviceTransformerBlock::device_bytes(c, false);
      std::size_t total = 0;
      const std::size_t free_bytes = cuda::free_device_memory(0, &total);
      if (static_cast<double>(need) > 0.95 * static_cast<double>(free_bytes)) {
        std::printf("%s%s, \"skipped\": \"needs %.1f GiB, %.1f GiB free\"}\n", head.c_str(),
                    prediction.c_str(), gib(need), gib(free_bytes));
        std::fflush(stdout);
        std::fprintf(stderr, "layer-times %s t=%d: skipped (needs %.1f GiB, %.1f free)\n",
                     model.name, t, gib(need), gib(free_bytes));
        continue;
      }
      double measured_ms = std::nan("");
      double min_ms = std::nan("");
      std::string error;
      try {
        DeviceTransformerBlock block(c, 0);
        block.randomize_parameters(1, 0.02f);
        block.randomize_layer_io(2);
        const std::vector<float> ms = block.time_layer_stack(3, reps);
        measured_ms = median(ms);
        min_ms = static_cast<double>(*std::min_element(ms.begin(), ms.end()));
      } catch (const std::exception& e) {  // freed by the destructor on the way out
        error = e.what();
        ++failures;
      }
      if (!error.empty()) {
        std::printf("%s%s, \"error\": %s}\n", head.c_str(), prediction.c_str(),
                    json_quoted(error).c_str());
        std::fflush(stdout);
        std::fprintf(stderr, "layer-times %s t=%d: error: %s\n", model.name, t, error.c_str());
        continue;
      }
      const double error_pct = 100.0 * (predicted_ms - measured_ms) / measured_ms;
      std::printf(
          "%s, \"device\": %s, \"reps\": %d, \"measured_ms\": %s, \"measured_min_ms\": %s%s, "
          "\"error_pct\": %s, \"device_gib\": %.2f, \"includes\": \"forward + backward of one "
          "layer shard incl. weight-gradient GEMMs; no gradient accumulation, no optimizer\"}\n",
          head.c_str(), json_quoted(device).c_str(), reps, num(measured_ms).c_str(),
          num(min_ms).c_str(), prediction.c_str(), num(error_pct, 4).c_str(), gib(need));
      std::fflush(stdout);
      std::fprintf(stderr,
                   "layer-times %-10s t=%d: measured %.3f ms, predicted %.3f ms (%+.1f%%)\n",
                   model.name, t, measured_ms, predicted_ms, error_pct);
    }
  }
  return failures ? 1 : 0;
}

// ------------------------------------------------------------------------ --layer-breakdown

// Where a device op (its label in device_transformer.cu, and which occurrence of that label in
// one layer's forward + backward: the two norms share theirs) goes: the row it is summed into
// and the model ops of that row ("" = none: the device does work the model does not count).
struct DeviceOpMap {
  const char* what;
  int occurrence;  // -1: every occurrence (the per-group attention GEMMs)
  const char* row;
  const char* model_ops;  // comma-separated layer_ops names; "" = unmatched
};

const std::vector<DeviceOpMap>& device_op_map() {
  static const std::vector<DeviceOpMap> map = {
      // forward
      {"norm forward", 0, "norm1", "norm1"},
      {"Q = xn1 Wq", -1, "qkv", "qkv"},
      {"K = xn1 Wk", -1, "qkv", "qkv"},
      {"V = xn1 Wv", -1, "qkv", "qkv"},
      {"attention scores Q K^T", -1, "attention.scores", "attention.scores"},
      {"causal softmax", -1, "attention.softmax", "attention.softmax"},
      {"attention P V", -1, "attention.context", "attention.context"},
      {"x1 = x (residual copy)", -1, "residual1", "residual1"},
      {"x1 = x + attn Wo", -1, "attention.output", "attention.output"},
      {"norm forward", 1, "norm2", "norm2"},
      {"gate = xn2 Wgate", -1, "ffn.gate_up", "ffn.gate_up"},
      {"up = xn2 Wup", -1, "ffn.up|ffn.gate_up", ""},  // resolved by the feed-forward kind
      {"swiglu forward", -1, "ffn.swiglu", "ffn.swiglu"},
      {"gelu forward", -1, "ffn.gelu", "ffn.gelu"},
      {"x2 = x1 (residual copy)", -1, "residual2", "residual2"},
      {"x2 = x1 + act W2", -1, "ffn.down", "ffn.down"},
      // backward
      {"dx2 to bf16", -1, "cast.dx2_to_bf16 (unmatched)", ""},
      {"dW2 = act^T dx2", -1, "ffn.down.wgrad", "ffn.down.wgrad"},
      {"dact = dx2 W2^T", -1, "ffn.down.dgrad", "ffn.down.dgrad"},
      {"swiglu backward", -1, "ffn.swiglu.backward", "ffn.swiglu.backward"},
      {"gelu backward", -1, "ffn.gelu.backward", "ffn.gelu.backward"},
      {"dWgate = xn2^T dgate", -1, "ffn.gate_up.wgrad", "ffn.gate_up.wgrad"},
      {"dWup = xn2^T dup", -1, "ffn.up|ffn.gate_up.wgrad", ""},
      {"dxn2 = dup Wup^T", -1, "ffn.up|ffn.gate_up.dgrad", ""},
      {"dxn2 += dgate Wgate^T", -1, "ffn.gate_up.dgrad", "ffn.gate_up.dgrad"},
      {"norm backward", 0, "norm2.backward+residual2.backward",
       "norm2.backward,residual2.backward"},
      {"norm gain gradient", 0, "norm2.gain_grad (unmatched)", ""},
      {"dx1 to bf16", -1, "cast.dx1_to_bf16 (unmatched)", ""},
      {"dWo = attn^T dx1", -1, "attention.output.wgrad", "attention.output.wgrad"},
      {"dattn = dx1 Wo^T", -1, "attention.output.dgrad", "attention.output.dgrad"},
      {"attention dV = P^T dO", -1, "attention.context.dvalues", "attention.context.dvalues"},
      {"attention dP = dO V^T", -1, "attention.context.dprobs", "attention.context.dprobs"},
      {"softmax backward", -1, "attention.softmax.backward", "attention.softmax.backward"},
      {"attention dQ = dS K", -1, "attention.scores.dqueries", "attention.scores.dqueries"},
      {"attention dK = dS^T Q", -1, "attention.scores.dkeys", "attention.scores.dkeys"},
      {"dQ to bf16", -1, "cast.dqkv_to_bf16 (unmatched)", ""},
      {"dK to bf16", -1, "cast.dqkv_to_bf16 (unmatched)", ""},
      {"dV to bf16", -1, "cast.dqkv_to_bf16 (unmatched)", ""},
      {"dWq = xn1^T dQ", -1, "qkv.wgrad", "qkv.wgrad"},
      {"dWk = xn1^T dK", -1, "qkv.wgrad", "qkv.wgrad"},
      {"dWv = xn1^T dV", -1, "qkv.wgrad", "qkv.wgrad"},
      {"dxn1 = dQ Wq^T", -1, "qkv.dgrad", "qkv.dgrad"},
      {"dxn1 += dK Wk^T", -1, "qkv.dgrad", "qkv.dgrad"},
      {"dxn1 += dV Wv^T", -1, "qkv.dgrad", "qkv.dgrad"},
      {"norm backward", 1, "norm1.backward+residual1.backward",
       "norm1.backward,residual1.backward"},
      {"norm gain gradient", 1, "norm1.gain_grad (unmatched)", ""},
  };
  return map;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Row and model ops of the `occurrence`-th launch labelled `what` (swiglu: the up projection
// belongs to ffn.gate_up, else to ffn.up). An unknown label is its own unmatched row.
std::pair<std::string, std::string> map_device_op(const std::string& what, int occurrence,
                                                  bool swiglu) {
  for (const DeviceOpMap& m : device_op_map()) {
    if (what != m.what || (m.occurrence >= 0 && m.occurrence != occurrence)) continue;
    std::string row = m.row;
    const auto bar = row.find('|');
    if (bar != std::string::npos) {  // "ffn.up|ffn.gate_up<suffix>"
      const std::string rest = row.substr(bar + 1);
      const std::string suffix = rest.substr(std::string("ffn.gate_up").size());
      row = swiglu ? rest : "ffn.up" + suffix;
      return {row, row};
    }
    return {row, m.model_ops};
  }
  return {what + " (unmatched)", ""};
}

struct BreakdownRow {
  std::string name;
  std::vector<std::string> model_ops;
  std::vector<std::string> device_labels;      // in launch order
  std::vector<std::vector<double>> device_ms;  // per label, per pass
  std::vector<double> pass_ms;                 // the row's sum, per pass
  std::string category;
};

// gemm / batched_gemm / memory, by the model op's kind and name.
std::string model_category(const tauplan::model::ComputeOp& op) {
  if (op.kind == tauplan::model::ComputeOpKind::Memory) return "memory";
  if (op.name.rfind("attention.", 0) == 0 && op.name.rfind("attention.output", 0) != 0)
    return "batched_gemm";
  return "gemm";
}

// The row named `name`, appended (empty) when there is none yet.
BreakdownRow& row_named(std::vector<BreakdownRow>& rows, const std::string& name) {
  for (BreakdownRow& r : rows)
    if (r.name == name) return r;
  rows.push_back(BreakdownRow{});
  rows.back().name = name;
  return rows.back();
}

// The device ops of every pass summed into rows, in first-launch order (every pass launches the
// same ops in the same order).
std::vector<BreakdownRow> device_rows(const std::vector<std::vector<cuda::OpTime>>& passes,
                                      bool swiglu) {
  std::vector<BreakdownRow> rows;
  const std::size_t npass = passes.size();
  for (std::size_t pi = 0; pi < npass; ++pi) {
    std::vector<std::pair<std::string, int>> seen;
    for (const cuda::OpTime& op : passes[pi]) {
      const std::string what = op.what;
      int occurrence = 0;
      for (auto& sn : seen)
        if (sn.first == what) occurrence = ++sn.second;
      if (occurrence == 0) seen.emplace_back(what, 0);
      const auto mapped = map_device_op(what, occurrence, swiglu);
      BreakdownRow& r = row_named(rows, mapped.first);
      if (r.model_ops.empty() && !mapped.second.empty()) r.model_ops = split(mapped.second, ',');
      if (r.pass_ms.size() < npass) r.pass_ms.assign(npass, 0.0);
      const std::string label =
          what + (occurrence > 0 && what.find("norm") == 0 ? "#" + std::to_string(occurrence) : "");
      std::size_t li = 0;
      while (li < r.device_labels.size() && r.device_labels[li] != label)
        ++li;
      if (li == r.device_labels.size()) {
        r.device_labels.push_back(label);
        r.device_ms.emplace_back(npass, 0.0);
      }
      r.device_ms[li][pi] += static_cast<double>(op.ms);
      r.pass_ms[pi] += static_cast<double>(op.ms);
    }
  }
  return rows;
}

// Model ops no device op maps to: rows of their own, measured 0.
void add_model_only_rows(std::vector<BreakdownRow>& rows,
                         const std::vector<tauplan::model::ComputeOp>& ops, std::size_t npass) {
  std::vector<bool> used(ops.size(), false);
  for (const BreakdownRow& r : rows)
    for (const std::string& name : r.model_ops)
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i].name == name) used[i] = true;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (used[i]) continue;
    BreakdownRow& r = row_named(rows, ops[i].name + " (model only)");
    r.model_ops = {ops[i].name};
    r.pass_ms.assign(npass, 0.0);
  }
}

// A shard's measured and predicted ms, in all and by category.
struct BreakdownTotals {
  std::vector<std::string> categories = {"gemm", "batched_gemm", "memory", "unmatched"};
  std::vector<double> cat_measured = std::vector<double>(categories.size(), 0.0),
                      cat_predicted = std::vector<double>(categories.size(), 0.0);
  double total_measured = 0, total_predicted = 0;
  std::size_t cat_index(const std::string& name) const {
    return static_cast<std::size_t>(std::find(categories.begin(), categories.end(), name) -
                                    categories.begin());
  }
};

// One JSON line per row (its category set from its model ops): measured beside predicted ms;
// the shard's totals.
BreakdownTotals print_rows(const std::string& head, std::vector<BreakdownRow>& rows,
                           const std::vector<tauplan::model::ComputeOp>& ops,
                           const std::vector<double>& predicted) {
  BreakdownTotals totals;
  for (BreakdownRow& r : rows) {
    double pred = 0;
    std::string model_fields;
    for (const std::string& name : r.model_ops) {
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].name != name) continue;
        pred += predicted[i];
        if (!model_fields.empty()) model_fields += ", ";
        model_fields += json_quoted(name) + ": " + num(predicted[i], 4);
        if (r.category.empty()) r.category = model_category(ops[i]);
        totals.cat_predicted[totals.cat_index(model_category(ops[i]))] += predicted[i];
      }
    }
    if (r.category.empty()) r.category = "unmatched";
    const double meas = median(std::vector<float>(r.pass_ms.begin(), r.pass_ms.end()));
    totals.cat_measured[totals.cat_index(r.category)] += meas;
    totals.total_measured += meas;
    totals.total_predicted += pred;
    std::string device_fields;
    for (std::size_t li = 0; li < r.device_labels.size(); ++li) {
      if (!device_fields.empty()) device_fields += ", ";
      device_fields +=
          json_quoted(r.device_labels[li]) + ": " +
          num(median(std::vector<float>(r.device_ms[li].begin(), r.device_ms[li].end())), 4);
    }
    std::printf(
        "%s, \"breakdown_op\": %s, \"category\": %s, \"measured_ms\": %s, "
        "\"predicted_ms\": %s, \"ratio\": %s, \"device_ops\": {%s}, \"model_ops\": {%s}}\n",
        head.c_str(), json_quoted(r.name).c_str(), json_quoted(r.category).c_str(),
        num(meas, 4).c_str(), num(pred, 4).c_str(), pred > 0 ? num(meas / pred, 3).c_str() : "null",
        device_fields.c_str(), model_fields.c_str());
  }
  return totals;
}

// Device ops' passes and the plain (event-free) passes of one layer shard.
struct ShardTimes {
  std::vector<std::vector<cuda::OpTime>> passes;
  std::vector<float> plain;
};

// The shard's summary JSON line (totals by category, the plain layer time) and its human line.
void print_shard_summary(const std::string& head, const std::string& device, int reps,
                         const char* model, int t, const ShardTimes& times,
                         const BreakdownTotals& totals) {
  const auto& passes = times.passes;
  const std::size_t npass = passes.size();
  std::string split_fields;
  for (std::size_t k = 0; k < totals.categories.size(); ++k) {
    if (!split_fields.empty()) split_fields += ", ";
    split_fields += json_quoted(totals.categories[k]) +
                    ": {\"measured_ms\": " + num(totals.cat_measured[k], 4) +
                    ", \"predicted_ms\": " + num(totals.cat_predicted[k], 4) + "}";
  }
  std::vector<double> sums(npass, 0.0);
  for (std::size_t pi = 0; pi < npass; ++pi)
    for (const cuda::OpTime& op : passes[pi])
      sums[pi] += static_cast<double>(op.ms);
  const double plain_ms = median(times.plain);
  std::printf(
      "%s, \"breakdown_summary\": true, \"device\": %s, \"reps\": %d, \"device_ops\": %zu, "
      "\"measured_ms\": %s, \"predicted_ms\": %s, \"pass_with_events_ms\": %s, "
      "\"plain_ms\": %s, \"by_category\": {%s}}\n",
      head.c_str(), json_quoted(device).c_str(), reps,
      passes.empty() ? std::size_t{0} : passes[0].size(), num(totals.total_measured, 5).c_str(),
      num(totals.total_predicted, 5).c_str(),
      num(median(std::vector<float>(sums.begin(), sums.end())), 5).c_str(),
      num(plain_ms, 5).c_str(), split_fields.c_str());
  std::fflush(stdout);
  std::fprintf(stderr,
               "layer-breakdown %-10s t=%d: %zu device ops, sum of op medians %.3f ms "
               "(plain pass %.3f ms), predicted %.3f ms\n",
               model, t, passes.empty() ? std::size_t{0} : passes[0].size(), totals.total_measured,
               plain_ms, totals.total_predicted);
}

// One layer shard of `model` at tensor t: predicted, timed op by op, printed row by row and
// summarised. 1 when the prediction or the timing fails, else 0 (a skipped shard too).
int breakdown_shard(const LayerModel& model, int t, const tauplan::model::ComputeProfile& profile,
                    const std::string& device, int reps) {
  namespace tm = tauplan::model;
  BlockConfig c = model.config;
  c.tensor = t;
  const std::string head = std::string("{\"mode\": \"layer_breakdown\", \"model\": ") +
                           json_quoted(model.name) + ", \"tensor\": " + std::to_string(t);
  const std::string problem = c.problem();
  if (!problem.empty()) {
    std::printf("%s, \"skipped\": %s}\n", head.c_str(), json_quoted(problem).c_str());
    std::fflush(stdout);
    return 0;
  }
  const bool swiglu = c.feed_forward == BlockFeedForward::SwiGlu;
  std::vector<tm::ComputeOp> ops;
  std::vector<double> predicted;
  try {
    ops = tm::layer_ops(layer_shape(c), tm::Recompute::None);
    for (const tm::ComputeOp& op : ops)
      predicted.push_back(tm::op_seconds(op, profile) * 1e3);
  } catch (const std::exception& e) {
    std::printf("%s, \"prediction_error\": %s}\n", head.c_str(), json_quoted(e.what()).c_str());
    std::fflush(stdout);
    return 1;
  }
  const std::size_t need = DeviceTransformerBlock::device_bytes(c, false);
  const std::size_t free_bytes = cuda::free_device_memory(0);
  if (static_cast<double>(need) > 0.95 * static_cast<double>(free_bytes)) {
    std::printf("%s, \"skipped\": \"needs %.1f GiB, %.1f GiB free\"}\n", head.c_str(), gib(need),
                gib(free_bytes));
    std::fflush(stdout);
    return 0;
  }
  ShardTimes times;
  try {
    DeviceTransformerBlock block(c, 0);
    block.randomize_parameters(1, 0.02f);
    block.randomize_layer_io(2);
    times.passes = block.time_layer_stack_ops(2, reps);
    times.plain = block.time_layer_stack(1, 3);
  } catch (const std::exception& e) {
    std::printf("%s, \"error\": %s}\n", head.c_str(), json_quoted(e.what()).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "layer-breakdown %s t=%d: error: %s\n", model.name, t, e.what());
    return 1;
  }

  std::vector<BreakdownRow> rows = device_rows(times.passes, swiglu);
  add_model_only_rows(rows, ops, times.passes.size());
  const BreakdownTotals totals = print_rows(head, rows, ops, predicted);
  print_shard_summary(head, device, reps, model.name, t, times, totals);
  return 0;
}

// --layer-breakdown: every selected model's layer shard at every t broken down (exit 2 when the
// profile does not read, 1 when a shard fails).
int run_layer_breakdown(const std::string& profile_path, const std::vector<std::string>& models,
                        const std::vector<int>& tensors, int reps) {
  namespace tm = tauplan::model;
  tm::ComputeProfile profile;
  try {
    profile = tm::read_compute_profile(profile_path);
  } catch (const std::exception& e) {
    std::printf("{\"mode\": \"layer_breakdown\", \"error\": %s}\n", json_quoted(e.what()).c_str());
    std::fprintf(stderr, "layer-breakdown: cannot read the profile: %s\n", e.what());
    return 2;
  }
  const std::string device = cuda::device_description(0);
  int failures = 0;
  for (const LayerModel& model : layer_models()) {
    if (std::find(models.begin(), models.end(), model.name) == models.end()) continue;
    for (int t : tensors)
      failures += breakdown_shard(model, t, profile, device, reps);
  }
  return failures ? 1 : 0;
}

// ------------------------------------------------------------------------ --step-times

int run_step_times(int reps) {
  BlockConfig c;
  c.vocabulary = 8192;
  c.hidden = 1024;
  c.heads = 16;
  c.kv_heads = 4;
  c.ffn_hidden = 2816;
  c.layers = 4;
  c.sequence = 1024;
  c.micro_batch = 4;
  c.norm = BlockNorm::RmsNorm;
  c.feed_forward = BlockFeedForward::SwiGlu;
  const std::size_t need = DeviceTransformerBlock::device_bytes(c, true);
  const std::size_t free_bytes = cuda::free_device_memory(0);
  const std::string head =
      std::string(
          "{\"mode\": \"step_times\", \"impl\": \"tauplan-cuda\", \"attention\": "
          "\"math\", ") +
      config_fields(c);
  if (static_cast<double>(need) > 0.95 * static_cast<double>(free_bytes)) {
    std::printf("%s, \"skipped\": \"needs %.1f GiB, %.1f GiB free\"}\n", head.c_str(), gib(need),
                gib(free_bytes));
    return 0;
  }
  DeviceTransformerBlock block(c, 0);
  block.set_parameters(init_block_parameters(c, 1));
  const std::vector<int> tokens = synthetic_tokens(c, 1, 0);
  const double loss = static_cast<double>(block.loss_and_gradients(tokens.data()));
  block.upload_tokens(tokens.data());
  const std::vector<float> ms = block.time_training_steps(3, reps, 1e-4f);
  const double step_ms = median(ms);
  const double tokens_per_s = static_cast<double>(c.tokens()) / (step_ms * 1e-3);
  std::printf(
      "%s, \"device\": %s, \"parameters\": %zu, \"reps\": %d, \"step_ms\": %s, "
      "\"step_min_ms\": %s, \"tokens_per_s\": %s, \"initial_loss\": %s, \"includes\": \"zero "
      "gradients, forward, backward, AdamW (fp32 master, bf16 copy refreshed)\"}\n",
      head.c_str(), json_quoted(cuda::device_description(0)).c_str(), block.parameter_count(), reps,
      num(step_ms).c_str(),
      num(static_cast<double>(*std::min_element(ms.begin(), ms.end()))).c_str(),
      num(tokens_per_s).c_str(), num(loss).c_str());
  std::fprintf(stderr, "step-times: %.3f ms per step (median of %d), %.0f tokens/s, loss %.4f\n",
               step_ms, reps, tokens_per_s, loss);
  return std::isfinite(loss) ? 0 : 1;
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 1024)
      usage("--tensors: expected positive integers separated by commas, got " + text);
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) usage("--tensors: empty list");
  return out;
}

int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi)
    usage(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
          "], got " + text);
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode, profile;
  std::vector<int> tensors{1, 2, 4, 8};
  bool tensors_given = false;
  std::vector<std::string> models{"gpt3-175b", "llama3-70b"};
  int reps = -1, steps = 200;
  float lr = 3e-3f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + ": expected a value");
      return argv[++i];
    };
    if (a == "--grad" || a == "--train" || a == "--layer-times" || a == "--step-times" ||
        a == "--layer-breakdown") {
      if (!mode.empty()) usage("one mode at a time (" + mode + " and " + a + ")");
      mode = a;
    } else if (a == "--steps") {
      steps = parse_int(a, value(), 1, 1000000);
    } else if (a == "--reps") {
      reps = parse_int(a, value(), 1, 100000);
    } else if (a == "--lr") {
      const std::string v = value();
      char* end = nullptr;
      lr = std::strtof(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(lr > 0.f)) usage("--lr: expected a positive number");
    } else if (a == "--profile") {
      profile = value();
    } else if (a == "--tensors") {
      tensors = parse_list(value());
      tensors_given = true;
    } else if (a == "--models") {
      const std::string v = value();
      models = split(v, ',');
      if (models.empty()) usage("--models: empty list");
      for (const std::string& m : models)
        if (m != "gpt3-175b" && m != "llama3-70b")
          usage("--models: expected gpt3-175b and/or llama3-70b, got " + m);
    } else {
      usage("unknown argument " + a);
    }
  }
  if (mode.empty()) usage("expected a mode");
  if ((mode == "--layer-times" || mode == "--layer-breakdown") && profile.empty())
    usage(mode + " needs --profile FILE.json");
  if (mode == "--layer-breakdown" && !tensors_given) tensors = {1, 8};
  if (reps < 0) reps = mode == "--layer-breakdown" ? 5 : 10;

  std::string json_mode = mode.substr(2);
  std::replace(json_mode.begin(), json_mode.end(), '-', '_');
  std::string why;
  if (cuda::usable_devices(&why) == 0) {
    std::printf("{\"mode\": %s, \"skipped\": %s}\n", json_quoted(json_mode).c_str(),
                json_quoted("no usable GPU: " + why).c_str());
    std::fprintf(stderr, "tauplan_cuda_transformer_check: no usable GPU (%s): skipped\n",
                 why.c_str());
    return 77;
  }
  std::fprintf(stderr, "tauplan_cuda_transformer_check %s on %s\n", mode.c_str(),
               cuda::device_description(0).c_str());
  try {
    if (mode == "--grad") return run_grad();
    if (mode == "--train") return run_train(steps, lr);
    if (mode == "--layer-times") return run_layer_times(profile, tensors, reps);
    if (mode == "--layer-breakdown") return run_layer_breakdown(profile, models, tensors, reps);
    return run_step_times(reps);
  } catch (const std::exception& e) {
    std::printf("{\"mode\": %s, \"error\": %s}\n", json_quoted(json_mode).c_str(),
                json_quoted(e.what()).c_str());
    std::fprintf(stderr, "tauplan_cuda_transformer_check: error: %s\n", e.what());
    return 1;
  }
}
