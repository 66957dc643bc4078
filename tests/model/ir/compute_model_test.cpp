// The compute model of a transformer layer (model/compute/): its operations against the closed
// forms of transformer.hpp, a profile's interpolation, the profile file's checks, and the
// committed shapes list of exec/cuda/profile_shapes.txt.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "model/base/error.hpp"
#include "model/compute/compute_profile.hpp"
#include "model/compute/layer_ops.hpp"
#include "model/compute/profile_file.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/compute_shapes.hpp"

using namespace tauplan;
using namespace tauplan::model;

namespace {

double phase_flop(const std::vector<ComputeOp>& ops, ComputePhase phase) {
  double flop = 0;
  for (const ComputeOp& op : ops)
    if (op.phase == phase) flop += op.flop;
  return flop;
}

double memory_bytes(const std::vector<ComputeOp>& ops) {
  double bytes = 0;
  for (const ComputeOp& op : ops)
    if (op.kind == ComputeOpKind::Memory) bytes += op.bytes;
  return bytes;
}

ComputeProfile flat_profile(double gemm_efficiency) {
  ComputeProfile p;
  p.device = "test";
  p.precision = "bf16";
  p.source = "test";
  p.peak_flops = 1e15;
  p.memory_bandwidth_Bps = 2e12;
  p.default_gemm_efficiency = gemm_efficiency;
  p.default_attention_efficiency = gemm_efficiency / 2;
  return p;
}

}  // namespace

TEST_CASE("a layer's operations add up to the closed-form training flop, on every rank") {
  // Identity: layer_ops counts every weight GEMM (2 flop per multiply-add), the attention core
  // at 4 s^2 h per sequence forward and the backward at twice the forward, as transformer.hpp's
  // layer_training_flop does; per rank, 1/t of it.
  for (const char* name : {"gpt3-175b", "llama3-70b", "llama2-7b", "bert-large"}) {
    const Transformer shape = *load_workload(name).transformer;
    for (int t : {1, 2, 8})
      for (AttentionKernel kernel : {AttentionKernel::Math, AttentionKernel::Flash})
        for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
          CAPTURE(name, t, to_string(kernel), to_string(r));
          LayerShape s = layer_shape(shape, 2, t, false);
          s.attention = kernel;
          const std::vector<ComputeOp> ops = layer_ops(s, r);
          // K/V replicated when t > kv_heads adds GEMM work the closed form does not split.
          if (shape.kv_heads % t != 0) continue;
          CHECK(total_flop(ops) * t == Approx(shape.layer_training_flop(2, r)).epsilon(1e-12));
          CHECK(phase_flop(ops, ComputePhase::Forward) * t ==
                Approx(shape.layer_forward_flop(2)).epsilon(1e-12));
          CHECK(phase_flop(ops, ComputePhase::Backward) ==
                Approx(2 * phase_flop(ops, ComputePhase::Forward)).epsilon(1e-12));
        }
  }
}

TEST_CASE("K and V heads are replicated, not split, when the tensor shard exceeds kv_heads") {
  const Transformer llama = *load_workload("llama3-70b").transformer;  // 8 K/V heads
  LayerShape s = layer_shape(llama, 1, 16, false);
  REQUIRE(s.problem().empty());
  const std::vector<ComputeOp> ops = layer_ops(s, Recompute::None);
  const double d = 8192.0 / 64;
  for (const ComputeOp& op : ops)
    if (op.name == "qkv") CHECK(op.n == 64.0 / 16 * d + 2 * 1 * d);
}

TEST_CASE("flash attention keeps the s x s traffic off memory, the math path pays it") {
  const Transformer gpt3 = *load_workload("gpt3-175b").transformer;
  LayerShape s = layer_shape(gpt3, 1, 8, false);
  s.attention = AttentionKernel::Math;
  const double math = memory_bytes(layer_ops(s, Recompute::None));
  s.attention = AttentionKernel::Flash;
  const double flash = memory_bytes(layer_ops(s, Recompute::None));
  // Softmax forward reads and writes b a/t s^2 e bytes, its backward reads two and writes one.
  const double scores = 1.0 * (96 / 8) * 2048.0 * 2048.0 * 2;
  CHECK(math - flash == Approx(5 * scores));
}

TEST_CASE("a profile interpolates efficiency between measured GEMMs and floors at a launch") {
  ComputeProfile p = flat_profile(0.5);
  p.gemms = {{1024, 1024, 1024, 2.0 * 1024 * 1024 * 1024 / (0.4 * 1e15)},
             {8192, 8192, 8192, 2.0 * 8192 * 8192 * 8192 / (0.8 * 1e15)}};
  REQUIRE(p.problem().empty());
  CHECK(gemm_efficiency(p, 1024, 1024, 1024) == Approx(0.4));
  CHECK(gemm_efficiency(p, 8192, 8192, 8192) == Approx(0.8));
  // Halfway in log space: equal weights, the geometric mean of the efficiencies.
  CHECK(gemm_efficiency(p, 2896.309, 2896.309, 2896.309) == Approx(std::sqrt(0.32)).epsilon(1e-3));
  // A shape nearer the large one takes more of its efficiency.
  const double near_large = gemm_efficiency(p, 6000, 6000, 6000);
  CHECK(near_large > std::sqrt(0.32));
  CHECK(near_large < 0.8);

  p.launch_overhead_s = 1e-3;
  ComputeOp tiny;
  tiny.kind = ComputeOpKind::Memory;
  tiny.bytes = 1;
  CHECK(op_seconds(tiny, p) == 1e-3);
  const OpsTime t = ops_seconds({tiny}, p);
  CHECK(t.memory_s == Approx(1 / 2e12));
  CHECK(t.total() == Approx(1e-3));
}

TEST_CASE("a layer's time from a flat profile is flop over peak x efficiency plus bytes") {
  const Transformer gpt3 = *load_workload("gpt3-175b").transformer;
  const LayerShape s = layer_shape(gpt3, 1, 4, false);  // math path
  const ComputeProfile p = flat_profile(0.5);
  const std::vector<ComputeOp> ops = layer_ops(s, Recompute::None);
  const OpsTime time = ops_seconds(ops, p);
  CHECK(time.gemm_s == Approx(total_flop(ops) / (0.5 * 1e15)));
  CHECK(time.memory_s == Approx(memory_bytes(ops) / 2e12));
  CHECK(time.attention_s == 0);
}

TEST_CASE("layer_ops tags each memory-bound op with its kernel kind") {
  const Transformer llama = *load_workload("llama2-7b").transformer;
  LayerShape s = layer_shape(llama, 1, 1, false);
  s.attention = AttentionKernel::Math;
  std::vector<ComputeOp> ops = layer_ops(s, Recompute::None);
  const std::vector<ComputeOp> logits = logits_ops(s, llama.vocabulary);
  ops.insert(ops.end(), logits.begin(), logits.end());
  int memory_ops = 0;
  for (const ComputeOp& op : ops) {
    if (op.kind != ComputeOpKind::Memory) continue;
    ++memory_ops;
    CAPTURE(op.name);
    // Llama: RMSNorm and SwiGLU; the cross-entropy is a row softmax over the vocabulary.
    const MemoryKernel expected = op.name.find("softmax") != std::string::npos ||
                                          op.name.find("cross_entropy") != std::string::npos
                                      ? MemoryKernel::Softmax
                                  : op.name.find("norm") != std::string::npos
                                      ? MemoryKernel::RmsNorm
                                  : op.name.find("ffn.") == 0 ? MemoryKernel::SwiGlu
                                                              : MemoryKernel::Elementwise;
    CHECK(to_string(op.memory_kernel) == std::string(to_string(expected)));
    CHECK(to_string(memory_kernel_family(op.memory_kernel)) ==
          std::string(to_string(expected == MemoryKernel::RmsNorm  ? MemoryKernel::Norm
                                : expected == MemoryKernel::SwiGlu ? MemoryKernel::Activation
                                                                   : expected)));
  }
  CHECK(memory_ops == 16);  // 6 forward, 6 backward in the layer; 2 + 2 in the head
  // GPT-3: LayerNorm and GELU.
  const Transformer gpt3 = *load_workload("gpt3-175b").transformer;
  int layer_norms = 0, gelus = 0;
  for (const ComputeOp& op : layer_ops(layer_shape(gpt3, 1, 8, false), Recompute::Full)) {
    layer_norms += op.memory_kernel == MemoryKernel::LayerNorm;
    gelus += op.memory_kernel == MemoryKernel::Gelu;
    if (op.kind == ComputeOpKind::Memory) {
      CAPTURE(op.name);
      CHECK(op.memory_kernel != MemoryKernel::RmsNorm);
      CHECK(op.memory_kernel != MemoryKernel::SwiGlu);
    }
  }
  CHECK(layer_norms == 6);  // norm1, norm2 forward and recomputed, and their backward
  CHECK(gelus == 3);
}

TEST_CASE("a profile times batched GEMMs from batched samples and memory ops by kernel kind") {
  ComputeProfile p = flat_profile(0.5);
  p.gemms = {{640, 64, 32, 2.0 * 640 * 64 * 32 / (0.8 * 1e15)}};
  ComputeOp batched;
  batched.kind = ComputeOpKind::Gemm;
  batched.m = 64, batched.n = 64, batched.k = 32, batched.count = 10;
  batched.flop = 2 * 64 * 64 * 32 * 10.0;
  // Without batched samples: the stacked GEMM [640 x 32] x [32 x 64], measured at 0.8.
  CHECK(op_seconds(batched, p) == Approx(batched.flop / (0.8 * 1e15)));
  CHECK(batched_gemm_efficiency(p, 10, 64, 64, 32) == Approx(0.8));
  // With them: the batched form's own time (here a loop of 10 at 0.2 each).
  p.batched_gemms = {{10, 64, 64, 32, batched.flop / (0.2 * 1e15)},
                     {80, 64, 64, 32, 8 * batched.flop / (0.4 * 1e15)}};
  REQUIRE(p.problem().empty());
  CHECK(op_seconds(batched, p) == Approx(batched.flop / (0.2 * 1e15)));
  // Between the two counts (geometric middle), the geometric mean of their efficiencies.
  CHECK(batched_gemm_efficiency(p, std::sqrt(800.0), 64, 64, 32) ==
        Approx(std::sqrt(0.08)).epsilon(1e-9));
  // A single GEMM is not affected by batched samples.
  batched.count = 1;
  batched.m = 640;
  CHECK(op_seconds(batched, p) == Approx(batched.flop / (0.8 * 1e15)));

  ComputeOp softmax;
  softmax.kind = ComputeOpKind::Memory;
  softmax.memory_kernel = MemoryKernel::Softmax;
  softmax.bytes = 1e9;
  ComputeOp norm = softmax;
  norm.memory_kernel = MemoryKernel::Norm;
  CHECK(op_seconds(softmax, p) == Approx(1e9 / 2e12));
  p.memory_kernel_Bps[static_cast<int>(MemoryKernel::Softmax)] = 1e11;
  CHECK(op_seconds(softmax, p) == Approx(1e9 / 1e11));
  CHECK(op_seconds(norm, p) == Approx(1e9 / 2e12));  // not measured: the stream's bandwidth
  CHECK(ops_seconds({softmax, norm}, p).memory_s == Approx(1e9 / 1e11 + 1e9 / 2e12));
  // A variant not measured takes its family's figure when the family was measured, its own
  // when it was.
  ComputeOp layer_norm = softmax;
  layer_norm.memory_kernel = MemoryKernel::LayerNorm;
  CHECK(op_seconds(layer_norm, p) == Approx(1e9 / 2e12));
  p.memory_kernel_Bps[static_cast<int>(MemoryKernel::Norm)] = 4e11;
  CHECK(op_seconds(layer_norm, p) == Approx(1e9 / 4e11));
  p.memory_kernel_Bps[static_cast<int>(MemoryKernel::LayerNorm)] = 5e11;
  CHECK(op_seconds(layer_norm, p) == Approx(1e9 / 5e11));
  CHECK(op_seconds(norm, p) == Approx(1e9 / 4e11));
  p.memory_kernel_Bps[static_cast<int>(MemoryKernel::LayerNorm)] = 0;
  p.memory_kernel_Bps[static_cast<int>(MemoryKernel::Norm)] = -1;
  CHECK(p.problem() == "memory_kernels must be positive");
  p.memory_kernel_Bps[static_cast<int>(MemoryKernel::Norm)] = 0;
  p.batched_gemms[1].count = 0;
  CHECK(p.problem().find("batched gemm") != std::string::npos);
}

TEST_CASE("a compute profile file is read strictly") {
  const std::string good = R"({"format": "tauplan-compute-profile-1", "device": "X",
    "precision": "bf16", "source": "test", "peak_flops": 1e15, "peak_flops_source": "sheet",
    "memory_bandwidth_Bps": 3e12, "launch_overhead_s": 4e-6,
    "gemms": [[1024, 1024, 1024, 1e-5]],
    "attention": [{"kernel": "flash", "phase": "forward", "heads": 16, "sequence": 2048,
                   "head_dim": 128, "causal": true, "seconds": 1e-4},
                  {"kernel": "flash", "phase": "backward", "heads": 16, "sequence": 2048,
                   "head_dim": 128, "causal": true, "seconds": 3e-4}]})";
  const ComputeProfile p = parse_compute_profile(good, "p.json");
  CHECK(p.gemms.size() == 1);
  CHECK(p.attention.size() == 2);
  // Written and read back unchanged.
  const ComputeProfile again = parse_compute_profile(compute_profile_json(p), "again.json");
  CHECK(again.gemms[0].seconds == p.gemms[0].seconds);
  CHECK(again.attention[1].seconds == p.attention[1].seconds);
  CHECK(again.peak_flops_source == "sheet");

  auto error_of = [](const std::string& text) {
    try {
      parse_compute_profile(text, "p.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto replaced = [&good](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  CHECK(error_of("{").find("p.json: expected a JSON compute profile") == 0);
  CHECK(error_of(replaced("\"peak_flops\": 1e15", "\"peak_flop\": 1e15")).find("peak_flop") !=
        std::string::npos);
  CHECK(error_of(replaced("[[1024, 1024, 1024, 1e-5]]", "[[1024, 1024, 1e-5]]")).find("gemms[0]") !=
        std::string::npos);
  CHECK(error_of(replaced("[[1024, 1024, 1024, 1e-5]]", "[]")).find("gemms must be measured") !=
        std::string::npos);
  CHECK(error_of(replaced("\"kernel\": \"flash\", \"phase\": \"backward\"",
                          "\"kernel\": \"flash\", \"phase\": \"sideways\""))
            .find("attention[1].phase") != std::string::npos);
  // A profile with flash forward but not backward cannot time a training step's attention.
  CHECK(error_of(replaced("\"kernel\": \"flash\", \"phase\": \"backward\"",
                          "\"kernel\": \"math\", \"phase\": \"backward\""))
            .find("flash attention must be measured") != std::string::npos);
  CHECK(error_of(replaced("\"memory_bandwidth_Bps\": 3e12", "\"memory_bandwidth_Bps\": -3"))
            .find("memory_bandwidth_Bps: expected a number > 0") != std::string::npos);
  CHECK_THROWS_AS(read_compute_profile("/nonexistent/profile.json"), InputError);

  // The optional batched_gemms and memory_kernels: absent above, read and written back here.
  CHECK(p.batched_gemms.empty());
  CHECK(p.memory_kernel_Bps[static_cast<int>(MemoryKernel::Softmax)] == 0);
  CHECK(compute_profile_json(p).find("memory_kernels") == std::string::npos);
  const std::string extra = replaced("\"gemms\":", R"("batched_gemms": [[10, 64, 64, 32, 2e-5]],
      "memory_kernels": {"softmax": 2e9, "norm": 1.5e10, "gelu": 3e9}, "gemms":)");
  const ComputeProfile q = parse_compute_profile(extra, "p.json");
  REQUIRE(q.batched_gemms.size() == 1);
  CHECK(q.batched_gemms[0].count == 10);
  CHECK(q.batched_gemms[0].seconds == 2e-5);
  CHECK(q.memory_kernel_Bps[static_cast<int>(MemoryKernel::Softmax)] == 2e9);
  CHECK(q.memory_kernel_Bps[static_cast<int>(MemoryKernel::Norm)] == 1.5e10);
  CHECK(q.memory_kernel_Bps[static_cast<int>(MemoryKernel::Activation)] == 0);
  const ComputeProfile q2 = parse_compute_profile(compute_profile_json(q), "again.json");
  CHECK(q2.batched_gemms[0].m == 64);
  CHECK(q2.memory_kernel_Bps[static_cast<int>(MemoryKernel::Norm)] == 1.5e10);
  CHECK(q2.memory_kernel_Bps[static_cast<int>(MemoryKernel::Gelu)] == 3e9);
  CHECK(memory_kernel_bandwidth(q2, MemoryKernel::LayerNorm) == 1.5e10);  // the family's
  CHECK(memory_kernel_bandwidth(q2, MemoryKernel::SwiGlu) == q2.memory_bandwidth_Bps);
  auto extra_error = [&](const std::string& from, const std::string& to) {
    std::string text = extra;
    text.replace(text.find(from), from.size(), to);
    return error_of(text);
  };
  CHECK(extra_error("[[10, 64, 64, 32, 2e-5]]", "[[10, 64, 64, 2e-5]]")
            .find("batched_gemms[0]: expected [count, m, n, k, seconds]") != std::string::npos);
  CHECK(extra_error("[[10, 64, 64, 32, 2e-5]]", "[[0, 64, 64, 32, 2e-5]]")
            .find("batched_gemms[0]: expected five numbers > 0") != std::string::npos);
  CHECK(extra_error("[[10, 64, 64, 32, 2e-5]]", "7").find("batched_gemms: expected a list") !=
        std::string::npos);
  CHECK(extra_error("\"softmax\": 2e9", "\"softmx\": 2e9").find("memory_kernels.softmx") !=
        std::string::npos);
  CHECK(extra_error("\"norm\": 1.5e10", "\"norm\": -1")
            .find("memory_kernels.norm: expected a number > 0") != std::string::npos);
  CHECK(extra_error("{\"softmax\": 2e9, \"norm\": 1.5e10, \"gelu\": 3e9}", "[2e9]")
            .find("memory_kernels: expected an object") != std::string::npos);
  // Errors are one line.
  CHECK(extra_error("\"softmax\": 2e9", "\"softmx\": 2e9").find('\n') == std::string::npos);
}

TEST_CASE("the committed GPU shapes list is the catalog's", "[profile_shapes]") {
  const std::string generated = profile_shapes_text();
  if (const char* out = std::getenv("TAUPLAN_WRITE_PROFILE_SHAPES")) {
    std::ofstream(out) << generated;
    WARN("wrote " << out);
  }
  std::ifstream in("exec/cuda/profile_shapes.txt");
  REQUIRE(in);
  std::ostringstream committed;
  committed << in.rdbuf();
  CHECK(committed.str() == generated);
}

namespace {

const ComputeOp* find_op(const std::vector<ComputeOp>& ops, const std::string& name) {
  for (const ComputeOp& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace

TEST_CASE("MoE and MLA layers' operations add up to the closed-form training flop", "[moe]") {
  // The identity of dense layers, per layer kind: with dropless routing (capacity factor 0) the
  // router, the k routed experts' and the shared experts' GEMMs are the closed form's MACs; with
  // sequence parallelism (a MoE layer under t > 1 needs it) every tensor rank routes and
  // projects MLA's latents for 1/t of the tokens; a context rank computes 1/c of everything;
  // expert parallelism changes which experts a rank runs, not how many token copies (balanced).
  for (const char* name : {"mixtral-8x7b", "deepseek-v3"}) {
    const Transformer shape = *load_workload(name).transformer;
    for (LayerKind kind : {LayerKind::Dense, LayerKind::Moe}) {
      if (shape.layers_of_kind(kind, 0, shape.layers) == 0) continue;
      for (int t : {1, 2, 8})
        for (int c : {1, 2})
          for (int e : {1, 8})
            for (AttentionKernel kernel : {AttentionKernel::Math, AttentionKernel::Flash})
              for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
                CAPTURE(name, to_string(kind), t, c, e, to_string(kernel), to_string(r));
                LayerShape s = layer_shape(shape, 2, t, t > 1, kind, c, e);
                s.attention = kernel;
                REQUIRE(s.problem().empty());
                const std::vector<ComputeOp> ops = layer_ops(s, r);
                CHECK(total_flop(ops) * t * c ==
                      Approx(shape.layer_training_flop(2, r, kind)).epsilon(1e-12));
                CHECK(phase_flop(ops, ComputePhase::Forward) * t * c ==
                      Approx(shape.layer_forward_flop(2, kind)).epsilon(1e-12));
                CHECK(phase_flop(ops, ComputePhase::Backward) ==
                      Approx(2 * phase_flop(ops, ComputePhase::Forward)).epsilon(1e-12));
              }
    }
  }
}

TEST_CASE("a MoE layer's expert GEMMs: local experts, rows per expert, capacity padding", "[moe]") {
  const Transformer mixtral = *load_workload("mixtral-8x7b").transformer;
  const double s = 4096, h = 4096, f = 14336;
  // t = 1, e = 1, one sequence: 8 experts of 4096 x 2 / 8 rows each, the whole expert width.
  std::vector<ComputeOp> ops =
      layer_ops(layer_shape(mixtral, 1, 1, false, LayerKind::Moe), Recompute::None);
  const ComputeOp* gate_up = find_op(ops, "moe.experts.gate_up");
  REQUIRE(gate_up);
  CHECK(gate_up->count == 8);
  CHECK(gate_up->m == s * 2 / 8);
  CHECK(gate_up->n == 2 * f);
  CHECK(gate_up->k == h);
  const ComputeOp* router = find_op(ops, "moe.router");
  REQUIRE(router);
  CHECK(router->m == s);
  CHECK(router->n == 8);
  // Streamed, not computed: a Memory op with the GEMM's operand traffic and its flop.
  CHECK(router->kind == ComputeOpKind::Memory);
  CHECK(router->flop == 2 * s * 8 * h);
  CHECK(router->bytes == (s * h + h * 8 + s * 8) * 2);
  CHECK(find_op(ops, "moe.shared.gate_up") == nullptr);  // Mixtral has no shared expert
  // e = 4: 2 local experts, each taking 4 ranks' share; t = 2 with sequence parallelism: each
  // rank routes half the sequence.
  ops = layer_ops(layer_shape(mixtral, 1, 2, true, LayerKind::Moe, 1, 4), Recompute::None);
  gate_up = find_op(ops, "moe.experts.gate_up");
  REQUIRE(gate_up);
  CHECK(gate_up->count == 2);
  CHECK(gate_up->m == s / 2 * 2 / 2);
  CHECK(gate_up->n == 2 * f);  // expert tensor parallelism 1: never split over t
  CHECK(find_op(ops, "moe.router")->m == s / 2);
  // The permutation moves k' tokens x h each way (e bytes per value).
  CHECK(find_op(ops, "moe.permute")->bytes == 2 * (s / 2) * 2 * h * 2);
  // A capacity factor pads every expert's rows: the routed experts' flop grows by it.
  Transformer padded = mixtral;
  padded.moe.capacity_factor = 1.25;
  const double dropless =
      total_flop(layer_ops(layer_shape(mixtral, 1, 1, false, LayerKind::Moe), Recompute::None));
  const double with_padding =
      total_flop(layer_ops(layer_shape(padded, 1, 1, false, LayerKind::Moe), Recompute::None));
  CHECK(with_padding - dropless == Approx(0.25 * 3 * 2 * s * 2 * 3 * h * f).epsilon(1e-12));
  // Memory-bound ops of the MoE layer by kernel kind.
  for (const ComputeOp& op : ops) {
    if (op.kind != ComputeOpKind::Memory) continue;
    CAPTURE(op.name);
    if (op.name.rfind("moe.router.softmax", 0) == 0)
      CHECK(op.memory_kernel == MemoryKernel::Softmax);
    if (op.name.rfind("moe.experts.swiglu", 0) == 0)
      CHECK(op.memory_kernel == MemoryKernel::SwiGlu);
    if (op.name.rfind("moe.permute", 0) == 0 || op.name.rfind("moe.unpermute", 0) == 0)
      CHECK(op.memory_kernel == MemoryKernel::Elementwise);
  }
  // A MoE layer split over tensor ranks needs sequence parallelism; the expert shard must divide
  // the experts; the context shard the sequence.
  CHECK(layer_shape(mixtral, 1, 2, false, LayerKind::Moe).problem() ==
        "a MoE layer split over tensor ranks needs sequence parallelism");
  CHECK(layer_shape(mixtral, 1, 1, false, LayerKind::Moe, 1, 3).problem() ==
        "the expert shard must divide the experts");
  CHECK(layer_shape(mixtral, 1, 1, false, LayerKind::Moe, 3).problem() ==
        "the context shard must divide the sequence");
  // The dense layer of a model with no dense layers is still its ffn_hidden feed-forward.
  CHECK(find_op(layer_ops(layer_shape(mixtral, 1, 1, false), Recompute::None), "ffn.gate_up"));
}

TEST_CASE("MLA's projections and attention widths, context parallelism's attention", "[mla]") {
  const Transformer deepseek = *load_workload("deepseek-v3").transformer;
  const double s = 4096, h = 7168;
  // t = 2 with sequence parallelism: the down-projections on the rank's half of the tokens, the
  // up-projections split by heads (64 of 128 per rank) over every token.
  LayerShape shape = layer_shape(deepseek, 1, 2, true, LayerKind::Dense, 2);
  shape.attention = AttentionKernel::Flash;
  const std::vector<ComputeOp> ops = layer_ops(shape, Recompute::None);
  const double tokens = s / 2;  // context 2
  const ComputeOp* q_down = find_op(ops, "attention.q_down");
  REQUIRE(q_down);
  CHECK(q_down->m == tokens / 2);
  CHECK(q_down->n == 1536);
  CHECK(q_down->k == h);
  CHECK(find_op(ops, "attention.kv_down")->n == 512 + 64);
  CHECK(find_op(ops, "attention.q_up")->n == 64 * (128 + 64));
  CHECK(find_op(ops, "attention.q_up")->m == tokens);
  CHECK(find_op(ops, "attention.kv_up")->n == 64 * (128 + 128));
  CHECK(find_op(ops, "attention.output")->k == 64 * 128);
  CHECK(find_op(ops, "attention.q_norm")->memory_kernel == MemoryKernel::RmsNorm);
  // The attention kernel: s / c queries against s keys, the query/key head width 192, flop
  // 2 (s/c) s (192 + 128) per (sample, head).
  const ComputeOp* flash = find_op(ops, "attention.flash");
  REQUIRE(flash);
  CHECK(flash->m == s / 2);
  CHECK(flash->n == s);
  CHECK(flash->k == 192);
  CHECK(flash->count == 64);
  CHECK(flash->flop == 2 * (s / 2) * s * (192 + 128) * 64);
  // Without a query latent, one q projection from h.
  Transformer direct = deepseek;
  direct.mla.q_lora_rank = 0;
  const std::vector<ComputeOp> direct_ops =
      layer_ops(layer_shape(direct, 1, 1, false), Recompute::None);
  CHECK(find_op(direct_ops, "attention.q_down") == nullptr);
  CHECK(find_op(direct_ops, "attention.q")->k == h);
}
