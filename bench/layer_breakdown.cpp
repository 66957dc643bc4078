// layer_breakdown.cpp: one decoder layer of exec's CPU block (exec/transformer_block.hpp), op by
// op, measured beside the compute model's matching op (model/compute/layer_ops.hpp timed by a
// profile, model/compute/compute_profile.hpp). A diagnostic, not a speed target.
//
// CpuTransformerBlock runs a layer as one call and keeps its passes private, so each op here is
// the block's code for it: the same cpu_blas.hpp products with the same operands, strides and
// transposes (the per-head attention products as the block's loop over b x heads), and the
// block's own memory-bound kernels (exec/block_kernels.hpp) for the norms, softmax, SwiGLU and
// residual adds. Each op is timed alone,
// `repeats` times after a warm-up (median), on `threads` threads at once (the run's workers,
// started together by a barrier; the mean of their medians), and the whole layer is timed
// through CpuTransformerBlock::layer_forward + layer_backward the same way, so the sum of the
// replicas can be checked against the block itself (the "closure" line; inputs are refilled
// before each timed call, outside the timing, as validate does). The shapes are the
// validation's (experiments/transformer/validate-{small,wide}.yaml: block-small at batch 16 and
// block-wide at batch 8, single / sync-2 / tensor-2 / pipeline-2 with 4 micro-batches), or one
// given with flags. Usage:
//   layer_breakdown --profile P.json [--threads K] [--repeats R] [--only small|wide]
// Exit 2 on a bad flag or an unreadable profile. What it leaves out: the head, embedding and
// optimizer (not part of a layer), and the interleaving of the per-head loop (the block runs
// scores, softmax and context head by head; here each runs over all heads in turn).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/block_kernels.hpp"
#include "exec/cpu_blas.hpp"
#include "exec/thread_barrier.hpp"
#include "exec/transformer_block.hpp"
#include "model/compute/compute_profile.hpp"
#include "model/compute/layer_ops.hpp"
#include "model/compute/profile_file.hpp"

namespace {

namespace kernels = tauplan::exec::kernels;
using tauplan::exec::BlockConfig;
using tauplan::exec::gemm;
using tauplan::exec::ThreadBarrier;
using Clock = std::chrono::steady_clock;

size_t sz(long long a) {
  return static_cast<size_t>(a);
}

/// One thread's buffers and the replicas of the block's passes, named as layer_ops names them.
struct Replica {
  BlockConfig c;
  int T, H, d, heads, kvh, qw, kvw, F, s, b;
  std::vector<float> x, y, normalized, inv_std, normed, gain, dgain;
  std::vector<float> wq, wk, wv, wo, wg, wu, w2, dwq, dwk, dwv, dwo, dwg, dwu, dw2;
  std::vector<float> q, k, v, p, att, gate, up, act, out;
  std::vector<float> dq, dk, dv, datt, dscores, dgate, dup, dact, dnormed, dx;

  explicit Replica(const BlockConfig& config) : c(config) {
    T = c.tokens(), H = c.hidden, d = c.head_dim(), heads = c.local_heads();
    kvh = c.local_kv_heads(), qw = c.local_width(), kvw = c.local_kv_width(), F = c.local_ffn();
    s = c.sequence, b = c.micro_batch;
    auto fill = [](std::vector<float>& buf, size_t n, float scale) {
      buf.resize(n);
      for (size_t i = 0; i < n; ++i)
        buf[i] = scale * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1));
    };
    const size_t th = sz(T) * sz(H);
    for (auto* buf : {&x, &y, &normalized, &normed, &out, &dnormed, &dx})
      fill(*buf, th, 1.0f);
    fill(inv_std, sz(T), 1.0f);
    fill(gain, sz(H), 1.0f);
    fill(dgain, sz(H), 0.0f);
    for (auto* buf : {&wq, &dwq})
      fill(*buf, sz(H) * sz(qw), 0.05f);
    for (auto* buf : {&wk, &wv, &dwk, &dwv})
      fill(*buf, sz(H) * sz(kvw), 0.05f);
    for (auto* buf : {&wo, &dwo})
      fill(*buf, sz(qw) * sz(H), 0.05f);
    for (auto* buf : {&wg, &wu, &dwg, &dwu})
      fill(*buf, sz(H) * sz(F), 0.05f);
    for (auto* buf : {&w2, &dw2})
      fill(*buf, sz(F) * sz(H), 0.05f);
    for (auto* buf : {&q, &att, &dq, &datt})
      fill(*buf, sz(T) * sz(qw), 0.1f);
    for (auto* buf : {&k, &v, &dk, &dv})
      fill(*buf, sz(T) * sz(kvw), 0.1f);
    fill(p, sz(b) * sz(heads) * sz(s) * sz(s), 0.01f);
    fill(dscores, sz(s) * sz(s), 0.01f);
    for (auto* buf : {&gate, &up, &act, &dgate, &dup, &dact})
      fill(*buf, sz(T) * sz(F), 0.3f);
  }

  void rms_forward() {  // the block's norm_forward, RMSNorm
    kernels::norm_forward(false, sz(T), sz(H), 1e-5f, x.data(), gain.data(), nullptr,
                          normalized.data(), inv_std.data(), normed.data());
  }
  void rms_backward() {  // norm_backward, RMSNorm
    kernels::norm_backward(false, sz(T), sz(H), normalized.data(), inv_std.data(), gain.data(),
                           dnormed.data(), dx.data(), dgain.data(), nullptr);
  }
  void residual() { kernels::add_into(y.data(), out.data(), sz(T) * sz(H)); }
  void qkv() {
    gemm(false, false, T, qw, H, 1.0f, normed.data(), H, wq.data(), qw, 0.0f, q.data(), qw);
    gemm(false, false, T, kvw, H, 1.0f, normed.data(), H, wk.data(), kvw, 0.0f, k.data(), kvw);
    gemm(false, false, T, kvw, H, 1.0f, normed.data(), H, wv.data(), kvw, 0.0f, v.data(), kvw);
  }
  template <class F>
  void per_head(F f) {
    const int group = heads / kvh;
    for (int row = 0; row < b; ++row)
      for (int head = 0; head < heads; ++head) {
        const size_t first = sz(row) * sz(s);
        const size_t q_at = first * sz(qw) + sz(head) * sz(d);
        const size_t kv_at = first * sz(kvw) + sz(head / group) * sz(d);
        float* pp = p.data() + sz(row * heads + head) * sz(s) * sz(s);
        f(q_at, kv_at, pp);
      }
  }
  void scores() {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    per_head([&](size_t q_at, size_t kv_at, float* pp) {
      gemm(false, true, s, s, d, scale, q.data() + q_at, qw, k.data() + kv_at, kvw, 0.0f, pp, s);
    });
  }
  void softmax() {
    per_head([&](size_t, size_t, float* pp) { kernels::causal_softmax_forward(pp, sz(s)); });
  }
  void context() {
    per_head([&](size_t q_at, size_t kv_at, float* pp) {
      gemm(false, false, s, d, s, 1.0f, pp, s, v.data() + kv_at, kvw, 0.0f, att.data() + q_at, qw);
    });
  }
  void output() {
    gemm(false, false, T, H, qw, 1.0f, att.data(), qw, wo.data(), H, 0.0f, out.data(), H);
  }
  void gate_up() {
    gemm(false, false, T, F, H, 1.0f, normed.data(), H, wu.data(), F, 0.0f, up.data(), F);
    gemm(false, false, T, F, H, 1.0f, normed.data(), H, wg.data(), F, 0.0f, gate.data(), F);
  }
  void swiglu() { kernels::swiglu_forward(gate.data(), up.data(), act.data(), sz(T) * sz(F)); }
  void down() {
    gemm(false, false, T, H, F, 1.0f, act.data(), F, w2.data(), H, 0.0f, out.data(), H);
  }
  // Backward.
  void down_wgrad() {
    gemm(true, false, F, H, T, 1.0f, act.data(), F, dnormed.data(), H, 1.0f, dw2.data(), H);
  }
  void down_dgrad() {
    gemm(false, true, T, F, H, 1.0f, dnormed.data(), H, w2.data(), H, 0.0f, dact.data(), F);
  }
  void swiglu_backward() {
    kernels::swiglu_backward(gate.data(), up.data(), dact.data(), dgate.data(), dup.data(),
                             sz(T) * sz(F));
  }
  void gate_up_wgrad() {
    gemm(true, false, H, F, T, 1.0f, normed.data(), H, dgate.data(), F, 1.0f, dwg.data(), F);
    gemm(true, false, H, F, T, 1.0f, normed.data(), H, dup.data(), F, 1.0f, dwu.data(), F);
  }
  void gate_up_dgrad() {
    gemm(false, true, T, H, F, 1.0f, dgate.data(), F, wg.data(), F, 0.0f, dnormed.data(), H);
    gemm(false, true, T, H, F, 1.0f, dup.data(), F, wu.data(), F, 1.0f, dnormed.data(), H);
  }
  void output_wgrad() {
    gemm(true, false, qw, H, T, 1.0f, att.data(), qw, out.data(), H, 1.0f, dwo.data(), H);
  }
  void output_dgrad() {
    gemm(false, true, T, qw, H, 1.0f, out.data(), H, wo.data(), H, 0.0f, datt.data(), qw);
  }
  void zero_kv_gradients() {
    std::fill(dk.begin(), dk.end(), 0.0f);
    std::fill(dv.begin(), dv.end(), 0.0f);
  }
  void dprobs() {
    per_head([&](size_t q_at, size_t kv_at, float*) {
      gemm(false, true, s, s, d, 1.0f, datt.data() + q_at, qw, v.data() + kv_at, kvw, 0.0f,
           dscores.data(), s);
    });
  }
  void dvalues() {
    per_head([&](size_t q_at, size_t kv_at, float* pp) {
      gemm(true, false, s, d, s, 1.0f, pp, s, datt.data() + q_at, qw, 1.0f, dv.data() + kv_at, kvw);
    });
  }
  void softmax_backward() {
    per_head([&](size_t, size_t, float* pp) {
      kernels::softmax_backward(pp, dscores.data(), dscores.data(), sz(s));
    });
  }
  void dqueries() {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    per_head([&](size_t q_at, size_t kv_at, float*) {
      gemm(false, false, s, d, s, scale, dscores.data(), s, k.data() + kv_at, kvw, 0.0f,
           dq.data() + q_at, qw);
    });
  }
  void dkeys() {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    per_head([&](size_t q_at, size_t kv_at, float*) {
      gemm(true, false, s, d, s, scale, dscores.data(), s, q.data() + q_at, qw, 1.0f,
           dk.data() + kv_at, kvw);
    });
  }
  void qkv_wgrad() {
    gemm(true, false, H, qw, T, 1.0f, normed.data(), H, dq.data(), qw, 1.0f, dwq.data(), qw);
    gemm(true, false, H, kvw, T, 1.0f, normed.data(), H, dk.data(), kvw, 1.0f, dwk.data(), kvw);
    gemm(true, false, H, kvw, T, 1.0f, normed.data(), H, dv.data(), kvw, 1.0f, dwv.data(), kvw);
  }
  void qkv_dgrad() {
    gemm(false, true, T, H, qw, 1.0f, dq.data(), qw, wq.data(), qw, 0.0f, dnormed.data(), H);
    gemm(false, true, T, H, kvw, 1.0f, dk.data(), kvw, wk.data(), kvw, 1.0f, dnormed.data(), H);
    gemm(false, true, T, H, kvw, 1.0f, dv.data(), kvw, wv.data(), kvw, 1.0f, dnormed.data(), H);
  }
};

/// The replicas in the block's order, each under the layer_ops name it corresponds to (norm and
/// residual twice: the same kernel, timed once per occurrence).
std::vector<std::pair<std::string, std::function<void(Replica&)>>> replica_ops() {
  using R = Replica;
  return {
      {"norm1", &R::rms_forward},
      {"qkv", &R::qkv},
      {"attention.scores", &R::scores},
      {"attention.softmax", &R::softmax},
      {"attention.context", &R::context},
      {"attention.output", &R::output},
      {"residual1", &R::residual},
      {"norm2", &R::rms_forward},
      {"ffn.gate_up", &R::gate_up},
      {"ffn.swiglu", &R::swiglu},
      {"ffn.down", &R::down},
      {"residual2", &R::residual},
      {"ffn.down.wgrad", &R::down_wgrad},
      {"ffn.down.dgrad", &R::down_dgrad},
      {"ffn.swiglu.backward", &R::swiglu_backward},
      {"ffn.gate_up.dgrad", &R::gate_up_dgrad},
      {"ffn.gate_up.wgrad", &R::gate_up_wgrad},
      {"norm2.backward", &R::rms_backward},
      {"residual2.backward", &R::residual},
      {"attention.output.dgrad", &R::output_dgrad},
      {"attention.output.wgrad", &R::output_wgrad},
      {"(zero dK, dV)", &R::zero_kv_gradients},
      {"attention.context.dprobs", &R::dprobs},
      {"attention.context.dvalues", &R::dvalues},
      {"attention.softmax.backward", &R::softmax_backward},
      {"attention.scores.dqueries", &R::dqueries},
      {"attention.scores.dkeys", &R::dkeys},
      {"qkv.dgrad", &R::qkv_dgrad},
      {"qkv.wgrad", &R::qkv_wgrad},
      {"norm1.backward", &R::rms_backward},
      {"residual1.backward", &R::residual},
  };
}

/// Mean over `threads` threads (started together) of each thread's median of `repeats` calls.
double time_concurrent(int threads, int repeats, const std::function<void(int)>& call,
                       const std::function<void(int)>& prepare = nullptr) {
  ThreadBarrier barrier(threads);
  std::vector<double> medians(sz(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<double> times;
      for (int r = 0; r <= repeats; ++r) {
        if (prepare) prepare(t);
        barrier.wait();
        const auto start = Clock::now();
        call(t);
        if (r > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
      std::sort(times.begin(), times.end());
      medians[sz(t)] = times[times.size() / 2];
    });
  for (auto& t : pool)
    t.join();
  double sum = 0;
  for (double m : medians)
    sum += m;
  return sum / threads;
}

struct Case {
  std::string name;
  BlockConfig block;
  int threads;
};

std::vector<Case> validation_cases(const std::string& only) {
  BlockConfig small;
  small.vocabulary = 256, small.hidden = 128, small.heads = 4, small.kv_heads = 2;
  small.ffn_hidden = 384, small.sequence = 64, small.layers = 1;
  BlockConfig wide;
  wide.vocabulary = 512, wide.hidden = 256, wide.heads = 8, wide.kv_heads = 4;
  wide.ffn_hidden = 768, wide.sequence = 128, wide.layers = 1;
  std::vector<Case> out;
  for (const auto& [shape_name, shape_block, shape_batch] :
       {std::tuple<std::string, BlockConfig, int>{"small", small, 16}, {"wide", wide, 8}}) {
    // Copies: C++17 lambdas cannot capture structured bindings.
    const std::string name = shape_name;
    const BlockConfig block = shape_block;
    const int batch = shape_batch;
    if (!only.empty() && only != name) continue;
    auto with = [&](std::string label, int micro, int tensor, int threads) {
      BlockConfig c = block;
      c.micro_batch = micro;
      c.tensor = tensor;
      out.push_back({name + "/" + label, c, threads});
    };
    with("single", batch, 1, 1);
    with("sync-2", batch / 2, 1, 2);
    with("tensor-2", batch, 2, 2);
    with("pipeline-2", batch / 4, 1, 2);
  }
  return out;
}

tauplan::model::LayerShape model_shape(const BlockConfig& c) {
  tauplan::model::LayerShape s;
  s.hidden = c.hidden, s.heads = c.heads, s.kv_heads = c.kv_heads, s.ffn_hidden = c.ffn_hidden;
  s.swiglu = true, s.layer_norm = false, s.sequence = c.sequence, s.micro_batch = c.micro_batch;
  s.tensor = c.tensor, s.element_bytes = 4;
  s.attention = tauplan::model::AttentionKernel::Math;
  return s;
}

/// The block's own layer (forward + backward), as validate measures it.
double time_block_layer(const BlockConfig& c, int threads, int repeats) {
  std::vector<tauplan::exec::CpuTransformerBlock> blocks(sz(threads),
                                                         tauplan::exec::CpuTransformerBlock(c));
  const size_t n = blocks[0].parameter_count();
  std::vector<std::vector<float>> params(sz(threads), std::vector<float>(n)), grads(params);
  for (auto& p : params)
    for (size_t i = 0; i < n; ++i)
      p[i] = 0.05f * static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  for (int t = 0; t < threads; ++t)
    for (const auto& s :
         {blocks[0].layout().layers[0].norm1_gain, blocks[0].layout().layers[0].norm2_gain})
      std::fill_n(params[sz(t)].begin() + static_cast<long>(s.offset), s.size(), 1.0f);
  const size_t stream = sz(c.tokens()) * sz(c.hidden);
  std::vector<std::vector<float>> hidden(sz(threads), std::vector<float>(stream)), grad(hidden);
  return time_concurrent(
      threads, repeats,
      [&](int t) {
        blocks[sz(t)].layer_forward(0, params[sz(t)].data(), hidden[sz(t)].data());
        blocks[sz(t)].layer_backward(0, params[sz(t)].data(), grad[sz(t)].data(),
                                     grads[sz(t)].data());
      },
      [&](int t) {  // fresh inputs before each call, outside the timed region (as validate)
        for (size_t i = 0; i < stream; ++i) {
          hidden[sz(t)][i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
          grad[sz(t)][i] = 1e-3f * static_cast<float>(std::sin(0.07 * static_cast<double>(i)));
        }
      });
}

int usage(const std::string& why) {
  std::fprintf(stderr,
               "layer_breakdown: %s\nusage: layer_breakdown --profile-k1 P1.json --profile-k2 "
               "P2.json [--repeats R] [--only small|wide]\n",
               why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<int, std::string> profile_path;
  int repeats = 15;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(a + ": expected a value");
    const std::string v = argv[++i];
    if (a == "--profile-k1") {
      profile_path[1] = v;
    } else if (a == "--profile-k2") {
      profile_path[2] = v;
    } else if (a == "--repeats") {
      repeats = std::atoi(v.c_str());
      if (repeats < 1) return usage("--repeats: expected >= 1");
    } else if (a == "--only") {
      if (v != "small" && v != "wide") return usage("--only: expected small or wide");
      only = v;
    } else {
      return usage(a + ": unknown flag");
    }
  }
  if (profile_path.size() != 2) return usage("--profile-k1 and --profile-k2 are required");
  std::map<int, tauplan::model::ComputeProfile> profile;
  try {
    for (const auto& [k, path] : profile_path)
      profile[k] = tauplan::model::read_compute_profile(path);
  } catch (const std::exception& e) {
    return usage(e.what());
  }
  tauplan::exec::set_compute_threads(1);
  for (const Case& c : validation_cases(only)) {
    std::vector<Replica> replicas(sz(c.threads), Replica(c.block));
    const auto ops =
        tauplan::model::layer_ops(model_shape(c.block), tauplan::model::Recompute::None);
    std::map<std::string, double> model_s;
    for (const auto& op : ops)
      model_s[op.name] += tauplan::model::op_seconds(op, profile.at(c.threads));
    std::printf("\n%s (micro-batch %d, tensor %d, %d thread(s) at once)\n", c.name.c_str(),
                c.block.micro_batch, c.block.tensor, c.threads);
    std::printf("%-28s %10s %10s %8s\n", "op", "measured", "model", "ratio");
    double measured_total = 0, model_total = 0;
    std::map<std::string, double> group_measured, group_model;
    for (const auto& [name, op] : replica_ops()) {
      const auto& run = op;  // C++17 lambdas cannot capture structured bindings
      const double m = time_concurrent(c.threads, repeats, [&](int t) { run(replicas[sz(t)]); });
      const double p = model_s.count(name) ? model_s.at(name) : 0.0;
      measured_total += m;
      model_total += p;
      const std::string group =
          name.find("softmax") != std::string::npos    ? "softmax"
          : name.find("norm") != std::string::npos     ? "norm"
          : name.find("swiglu") != std::string::npos   ? "swiglu"
          : name.find("residual") != std::string::npos ? "residual"
          : name.rfind("attention.scores", 0) == 0 || name.rfind("attention.context", 0) == 0
              ? "attention gemms (per head)"
          : name[0] == '(' ? "uncounted"
                           : "weight gemms";
      group_measured[group] += m;
      group_model[group] += p;
      std::printf("%-28s %10.4f %10.4f %8.2f\n", name.c_str(), m * 1e3, p * 1e3,
                  p > 0 ? m / p : 0.0);
    }
    std::printf("%-28s %10.4f %10.4f %8.2f   (ms)\n", "sum of ops", measured_total * 1e3,
                model_total * 1e3, measured_total / model_total);
    for (const auto& [g, m] : group_measured)
      std::printf("  group %-26s %10.4f %10.4f %8.2f\n", g.c_str(), m * 1e3, group_model[g] * 1e3,
                  group_model[g] > 0 ? m / group_model[g] : 0.0);
    const double block = time_block_layer(c.block, c.threads, repeats);
    std::printf(
        "closure: block layer_forward + layer_backward %.4f ms; sum of replicas %.4f ms "
        "(%+.1f%%)\n",
        block * 1e3, measured_total * 1e3, 100 * (measured_total - block) / block);
  }
  return 0;
}
