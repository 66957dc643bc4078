// transformer_test.cpp: transformer workloads: parameter counts against the published ones,
// flop and activation counts against the papers' closed forms, and bad shapes refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "model/base/error.hpp"
#include "model/inputs/workload.hpp"

using namespace tauplan;

namespace {

/// A GPT of Narayanan et al. 2021 (GELU 4h, tied, biases, learned positions, V = 51200).
model::Transformer gpt(int layers, int hidden, int heads, int sequence = 2048,
                       int vocabulary = 51200) {
  model::Transformer t;
  t.layers = layers;
  t.hidden = hidden;
  t.heads = t.kv_heads = heads;
  t.ffn_hidden = 4 * hidden;
  t.sequence = t.max_positions = sequence;
  t.vocabulary = vocabulary;
  t.element_bytes = 2;
  return t;
}

}  // namespace

TEST_CASE("every catalog transformer's parameter count is within 1% of the published count") {
  int transformers = 0;
  std::printf("%-12s %16s %16s %8s  source\n", "workload", "derived", "published", "error");
  for (const auto& name : model::catalog_workload_names()) {
    const model::Workload w = model::load_workload(name);
    if (!w.transformer) continue;
    ++transformers;
    const model::Transformer& t = *w.transformer;
    INFO(name << ": derived " << t.parameters() << ", published " << t.published_parameters << " ("
              << t.published_source << ")");
    REQUIRE(t.published_parameters > 0);
    CHECK_FALSE(t.published_source.empty());
    const double error = (t.parameters() - t.published_parameters) / t.published_parameters;
    std::printf("%-12s %16.0f %16.0f %+7.3f%%  %s\n", name.c_str(), t.parameters(),
                t.published_parameters, 100 * error, t.published_source.c_str());
    CHECK(std::abs(error) <= 0.01);
    CHECK(w.parameters == t.parameters());
  }
  CHECK(transformers >= 8);  // GPT-2 small to XL, GPT-3 175B, Llama-2 7B and 70B, BERT-large
}

TEST_CASE("released checkpoints' exact counts are reproduced by the shape alone") {
  // Counted from the released tensors (see each catalog file's comment).
  CHECK(model::load_workload("gpt2-small").parameters == 124439808);
  CHECK(model::load_workload("gpt2-medium").parameters == 354823168);
  CHECK(model::load_workload("gpt2-large").parameters == 774030080);
  CHECK(model::load_workload("gpt2-xl").parameters == 1557611200);
  CHECK(model::load_workload("llama2-7b").parameters == 6738415616);
  CHECK(model::load_workload("llama2-70b").parameters == 68976648192);
  CHECK(model::load_workload("bert-large").parameters == 336226108);
}

TEST_CASE("GPT parameters and flop follow Narayanan et al. 2021 eq. 2 and eq. 3") {
  for (const auto& [l, h, a] :
       {std::tuple{24, 2304, 24}, std::tuple{96, 12288, 96}, std::tuple{128, 25600, 160}}) {
    const model::Transformer t = gpt(l, h, a);
    const double L = l, H = h, V = 51200, s = 2048, B = 512;
    // eq. 2 (it leaves out the final LayerNorm, 2h)
    CHECK(t.parameters() - t.norm_parameters() ==
          Approx(12 * L * H * H * (1 + 13 / (12 * H) + (V + s) / (12 * L * H))).epsilon(1e-12));
    // eq. 3: flop of one step with full recomputation
    const double full =
        L * t.layer_training_flop(B, model::Recompute::Full) + t.logits_training_flop(B);
    CHECK(full ==
          Approx(96 * B * s * L * H * H * (1 + s / (6 * H) + V / (16 * L * H))).epsilon(1e-12));
    // model flop (no recomputation), Korthikanti et al. 2022 eq. 7
    CHECK(t.model_flop(B) ==
          Approx(72 * B * L * s * H * H * (1 + s / (6 * H) + V / (12 * H * L))).epsilon(1e-12));
  }
}

TEST_CASE("activation bytes per layer are Korthikanti et al. 2022 Table 2") {
  const model::Transformer t = gpt(96, 12288, 96);  // GPT-3's layer
  const double s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
  using model::Recompute;
  for (int tp : {1, 8}) {
    const double T = tp;
    INFO("t = " << tp);
    CHECK(t.layer_activation_bytes(b, tp, false, Recompute::None) ==
          Approx(sbh * (10 + 24 / T + 5 * a * s / (h * T))));
    CHECK(t.layer_activation_bytes(b, tp, true, Recompute::None) ==
          Approx(sbh * (34 / T + 5 * a * s / (h * T))));
    CHECK(t.layer_activation_bytes(b, tp, false, Recompute::Selective) ==
          Approx(sbh * (10 + 24 / T)));
    CHECK(t.layer_activation_bytes(b, tp, true, Recompute::Selective) == Approx(sbh * 34 / T));
    CHECK(t.layer_activation_bytes(b, tp, false, Recompute::Full) == Approx(2 * sbh));
  }
  // The notes' GPT-3 layer figures (s 2048, b 1, t 8), in MiB: none 2736 (t = 1), TP 552,
  // TP+SP 342, TP+selective 312, all three 102, full 48.
  const double mib = 1024.0 * 1024.0;
  CHECK(t.layer_activation_bytes(1, 1, false, Recompute::None) / mib == Approx(2736).epsilon(1e-3));
  CHECK(t.layer_activation_bytes(1, 8, false, Recompute::None) / mib == Approx(552).epsilon(1e-3));
  CHECK(t.layer_activation_bytes(1, 8, true, Recompute::None) / mib == Approx(342).epsilon(1e-3));
  CHECK(t.layer_activation_bytes(1, 8, false, Recompute::Selective) / mib ==
        Approx(312).epsilon(1e-3));
  CHECK(t.layer_activation_bytes(1, 8, true, Recompute::Selective) / mib ==
        Approx(102).epsilon(1e-3));
  CHECK(t.layer_activation_bytes(1, 8, false, Recompute::Full) / mib == Approx(48).epsilon(1e-3));
}

TEST_CASE("a flash kernel stores the log-sum-exp instead of the s x s scores") {
  // Korthikanti et al. 2022 Table 2 (e = 2): the math path keeps 5 a s^2 b / t bytes of scores
  // (softmax output, its dropout mask, dropout output) without recomputation, none with
  // selective or full. Dao et al. 2022 Section 3.1 (and FlashAttention-2, Dao 2023 Section
  // 3.1.1): a flash kernel keeps none of them and the
  // softmax statistics instead, one fp32 per head and query row, 4 a s b / t bytes, without
  // recomputation only (selective reruns the attention core, full the whole layer).
  using model::Recompute;
  model::Transformer math = gpt(96, 12288, 96);  // GPT-3's layer
  model::Transformer flash = math;
  flash.attention = model::AttentionKernel::Flash;
  const double s = 2048, h = 12288, a = 96;
  for (double b : {1.0, 4.0}) {
    const double sbh = s * b * h;
    for (int tp : {1, 2, 8}) {
      const double T = tp;
      for (bool sp : {false, true}) {
        INFO("b = " << b << ", t = " << tp << ", sp = " << sp);
        const double scores = 5 * a * s * s * b / T;
        const double lse = 4 * a * s * b / T;
        const double replicated = 10 * sbh / (sp ? T : 1);
        // Closed forms of flash: Table 2 without the s^2 term, with the statistics.
        CHECK(flash.layer_activation_bytes(b, tp, sp, Recompute::None) ==
              Approx(replicated + 24 * sbh / T + lse).epsilon(1e-12));
        CHECK(flash.layer_activation_bytes(b, tp, sp, Recompute::Selective) ==
              Approx(replicated + 24 * sbh / T).epsilon(1e-12));
        CHECK(flash.layer_activation_bytes(b, tp, sp, Recompute::Full) ==
              Approx(2 * sbh / (sp ? T : 1)).epsilon(1e-12));
        // Math minus flash: the scores minus the statistics without recomputation, 0 else.
        CHECK(math.layer_activation_bytes(b, tp, sp, Recompute::None) -
                  flash.layer_activation_bytes(b, tp, sp, Recompute::None) ==
              Approx(scores - lse).epsilon(1e-9));
        CHECK(math.layer_activation_bytes(b, tp, sp, Recompute::Selective) ==
              flash.layer_activation_bytes(b, tp, sp, Recompute::Selective));
        CHECK(math.layer_activation_bytes(b, tp, sp, Recompute::Full) ==
              flash.layer_activation_bytes(b, tp, sp, Recompute::Full));
      }
    }
  }
  // fp32 activations (e = 4): the scores are (2e + 1) a s^2 b / t = 9 a s^2 b / t; the
  // statistics stay fp32, 4 a s b / t.
  math.element_bytes = flash.element_bytes = 4;
  CHECK(math.layer_activation_bytes(1, 8, false, Recompute::None) -
            flash.layer_activation_bytes(1, 8, false, Recompute::None) ==
        Approx(9 * a * s * s / 8 - 4 * a * s / 8).epsilon(1e-9));
}

TEST_CASE("the attention kernel is the workload key attention: flash or math") {
  const std::string shape =
      "name: x\ntransformer:\n  layers: 2\n  hidden: 64\n  heads: 4\n"
      "  sequence: 8\n  vocabulary: 10\n";
  auto parse = [](const std::string& yaml) { return model::parse_workload_yaml(yaml, "w.yaml"); };
  CHECK(parse(shape).transformer->attention == model::AttentionKernel::Math);
  CHECK(parse(shape + "  attention: math\n").transformer->attention ==
        model::AttentionKernel::Math);
  const model::Workload flash = parse(shape + "  attention: flash\n");
  CHECK(flash.transformer->attention == model::AttentionKernel::Flash);
  // The derived activation bytes per sample follow the kernel.
  CHECK(flash.activation_bytes_per_sample < parse(shape).activation_bytes_per_sample);
  CHECK_THROWS_WITH(parse(shape + "  attention: flashy\n"),
                    "w.yaml: transformer.attention: expected flash or math, got 'flashy'");
}

TEST_CASE("a shape whose sizes are each in range but whose parameters are not is refused") {
  // Found by fuzz_workload_yaml: 64 layers of hidden 16,384,096 (each key within its limit) make
  // about 2e17 parameters, above model/base/limits.hpp's 1e15.
  const std::string yaml =
      "name: x\ntransformer:\n  layers: 64\n  hidden: 16384096\n  heads: 32\n"
      "  sequence: 4096\n  vocabulary: 32000\n";
  CHECK_THROWS_AS(model::parse_workload_yaml(yaml, "w.yaml"), InputError);
  CHECK_THROWS_WITH(model::parse_workload_yaml(yaml, "w.yaml"),
                    Catch::StartsWith("w.yaml: transformer: expected a shape of at most 1e+15"));
  // The same shape 1,000 times narrower loads.
  const std::string narrow =
      "name: x\ntransformer:\n  layers: 64\n  hidden: 16384\n  heads: 32\n"
      "  sequence: 4096\n  vocabulary: 32000\n";
  CHECK(model::parse_workload_yaml(narrow, "w.yaml").parameters > 1e9);
}

TEST_CASE("a transformer workload derives the Workload's fields from its shape") {
  const model::Workload w = model::load_workload("gpt2-small");
  REQUIRE(w.transformer);
  // The hand count this catalog file held before it described a shape: 6 x MACs per sequence.
  CHECK(w.flop_per_sample == 874944921600.0);
  CHECK(w.layers.size() == 14);  // embeddings, 12 layers, final norm + output
  double params = 0, flop = 0;
  for (const auto& layer : w.layers)
    params += layer.parameters, flop += layer.flop_per_sample;
  CHECK(params == w.parameters);
  CHECK(flop == Approx(w.flop_per_sample).epsilon(1e-12));
  CHECK(w.activation_bytes_per_sample == w.transformer->activation_bytes_per_sample());
  CHECK(w.transformer->element_bytes == w.bytes_per_parameter);
  // Grouped-query attention: Llama-2 70B's K and V are 8 heads of 128 wide.
  const model::Workload llama = model::load_workload("llama2-70b");
  CHECK(llama.transformer->kv_width() == 1024);
  CHECK(llama.transformer->attention_parameters() == 2.0 * 8192 * 8192 + 2.0 * 8192 * 1024);
}

TEST_CASE("per-rank layer parameters add up to the layer over the tensor ranks") {
  for (const char* name : {"gpt2-xl", "llama2-7b", "llama2-70b", "bert-large"}) {
    const model::Transformer t = *model::load_workload(name).transformer;
    INFO(name);
    CHECK(t.layer_parameters_per_rank(1) == t.layer_parameters());
    for (int tp : {2, 4, 8}) {
      if (t.heads % tp != 0) continue;
      // Split parts add up; replicated ones (and K/V heads when t > kv_heads) repeat.
      const double kv_replicas = tp > t.kv_heads ? double(tp) / t.kv_heads : 1;
      const double kv = 2 * t.hidden * t.kv_width() + (t.linear_bias ? 2 * t.kv_width() : 0);
      const double expected = t.layer_parameters() + (tp - 1) * t.layer_replicated_parameters() +
                              (kv_replicas - 1) * kv;
      CHECK(tp * t.layer_parameters_per_rank(tp) == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("bad transformer shapes name the file and the key") {
  const std::string head = "name: x\ntransformer:\n";
  auto parse = [](const std::string& yaml) { return model::parse_workload_yaml(yaml, "w.yaml"); };
  CHECK_THROWS_WITH(parse(head + "  layers: 2\n  hidden: 100\n  heads: 3\n  sequence: 8\n"
                                 "  vocabulary: 10\n"),
                    Catch::Contains("w.yaml: transformer.heads: expected a divisor of hidden"));
  CHECK_THROWS_WITH(parse(head + "  layers: 2\n  hidden: 64\n  heads: 4\n  sequence: 8\n"
                                 "  vocabulary: 10\n  feed_forward: swiglu\n"),
                    Catch::Contains("w.yaml: transformer.ffn_hidden"));
  CHECK_THROWS_WITH(parse(head + "  layers: 2\n  hidden: 64\n  heads: 4\n  sequence: 8\n"
                                 "  vocabulary: 10\n  kv_heads: 3\n"),
                    Catch::Contains("w.yaml: transformer.kv_heads: expected a divisor of heads"));
  CHECK_THROWS_WITH(parse(head + "  layers: 2.5\n  hidden: 64\n  heads: 4\n  sequence: 8\n"
                                 "  vocabulary: 10\n"),
                    Catch::Contains("w.yaml: transformer.layers: expected a whole number > 0"));
  CHECK_THROWS_WITH(parse(head + "  layers: 2\n  hidden: 64\n  heads: 4\n  vocabulary: 10\n"),
                    Catch::Contains("w.yaml: transformer.sequence"));
  CHECK_THROWS_WITH(parse(head + "  layers: 2\n  hidden: 64\n  heads: 4\n  sequence: 8\n"
                                 "  vocabulary: 10\n  hiden: 3\n"),
                    Catch::Contains("w.yaml: transformer.hiden: expected one of the known keys"));
  CHECK_THROWS_WITH(parse("name: x\nparameters: 5\ntransformer:\n  layers: 2\n  hidden: 64\n"
                          "  heads: 4\n  sequence: 8\n  vocabulary: 10\n"),
                    Catch::Contains("w.yaml: parameters: expected no value: it is derived"));
  CHECK_THROWS_WITH(parse(head + "  layers: 2\n  hidden: 64\n  heads: 4\n  sequence: 8\n"
                                 "  vocabulary: 10\n  max_positions: 4\n"),
                    Catch::Contains("w.yaml: transformer.max_positions: expected at least"));
  CHECK_THROWS_WITH(parse(head + "  layers: 2\n  hidden: 64\n  heads: 4\n  sequence: 8\n"
                                 "  vocabulary: 10\n  published_parameters: 5\n"),
                    Catch::Contains("w.yaml: transformer.published_source"));
}

namespace {

/// A small MoE model: 4 layers of h 64, 4 heads, SwiGLU, RMSNorm, no biases, the first layer
/// dense (f 256), the others 4 routed experts of 32 (top-2) and 1 shared; V 100, s 16, untied.
model::Transformer small_moe() {
  model::Transformer t;
  t.layers = 4;
  t.hidden = 64;
  t.heads = t.kv_heads = 4;
  t.ffn_hidden = 256;
  t.feed_forward = model::FeedForward::SwiGlu;
  t.sequence = 16;
  t.vocabulary = 100;
  t.tied_embeddings = false;
  t.linear_bias = false;
  t.normalization = model::Normalization::RmsNorm;
  t.positions = model::PositionEmbedding::Rotary;
  t.moe.experts = 4;
  t.moe.experts_per_token = 2;
  t.moe.expert_ffn_hidden = 32;
  t.moe.shared_experts = 1;
  t.moe.first_dense_layers = 1;
  return t;
}

/// A small MLA model: 2 dense layers of h 64, 4 heads, q_lora_rank 16, kv_lora_rank 8, nope 8,
/// rope 4, v 8, SwiGLU f 128, RMSNorm, no biases; V 50, s 16, untied.
model::Transformer small_mla() {
  model::Transformer t = small_moe();
  t.layers = 2;
  t.ffn_hidden = 128;
  t.vocabulary = 50;
  t.moe = {};
  t.mla.q_lora_rank = 16;
  t.mla.kv_lora_rank = 8;
  t.mla.qk_nope_head_dim = 8;
  t.mla.qk_rope_head_dim = 4;
  t.mla.v_head_dim = 8;
  return t;
}

}  // namespace

TEST_CASE("Mixtral 8x7B and DeepSeek-V3: total and active parameters as published", "[moe]") {
  const model::Workload mixtral = model::load_workload("mixtral-8x7b");
  const model::Transformer& m = *mixtral.transformer;
  // Derived in the catalog file's comment.
  CHECK(m.parameters() == 46702792704.0);
  CHECK(m.active_parameters() == 12879925248.0);
  // Mistral AI's 46.7B and 12.9B: within 0.01% and 0.2%.
  CHECK(m.published_parameters == 46.7e9);
  CHECK(m.published_active_parameters == 12.9e9);
  CHECK(std::abs(m.parameters() / m.published_parameters - 1) < 0.001);
  CHECK(std::abs(m.active_parameters() / m.published_active_parameters - 1) < 0.01);
  CHECK(m.layers_of_kind(model::LayerKind::Moe, 0, m.layers) == 32);

  const model::Workload deepseek = model::load_workload("deepseek-v3");
  const model::Transformer& d = *deepseek.transformer;
  CHECK(d.parameters() == 671026404352.0);
  CHECK(d.active_parameters() == 37552282624.0);
  // DeepSeek-AI's 671B within 0.01%; its 37B active within 2% (+1.5%): the report's figure
  // leaves out the input embedding, a lookup (its README_WEIGHTS.md: 36.6B activated, the
  // output head included), which this count reproduces to 0.1%.
  CHECK(std::abs(d.parameters() / d.published_parameters - 1) < 0.001);
  CHECK(std::abs(d.active_parameters() / d.published_active_parameters - 1) < 0.02);
  CHECK(std::abs((d.active_parameters() - d.token_embedding_parameters()) / 36.6e9 - 1) < 0.001);
  CHECK(d.attention_parameters() == 187107328.0);
  CHECK(d.layer_parameters(model::LayerKind::Dense) == 583483392.0);
  CHECK(d.layer_parameters(model::LayerKind::Moe) == 11507286016.0);
  CHECK(d.layers_of_kind(model::LayerKind::Dense, 0, d.layers) == 3);
  CHECK(d.layers_of_kind(model::LayerKind::Moe, 0, d.layers) == 58);
  // The per-layer list follows the kinds.
  REQUIRE(deepseek.layers.size() == 63);
  CHECK(deepseek.layers[3].parameters == d.layer_parameters(model::LayerKind::Dense));
  CHECK(deepseek.layers[4].parameters == d.layer_parameters(model::LayerKind::Moe));
  CHECK(deepseek.layers[4].flop_per_sample ==
        d.layer_training_flop(1, model::Recompute::None, model::LayerKind::Moe));
  double flop = 0;
  for (const auto& layer : deepseek.layers)
    flop += layer.flop_per_sample;
  CHECK(flop == Approx(deepseek.flop_per_sample).epsilon(1e-12));
  CHECK(deepseek.activation_bytes_per_sample ==
        Approx(3 * d.layer_activation_bytes(1, 1, false, model::Recompute::None) +
               58 * d.layer_activation_bytes(1, 1, false, model::Recompute::None,
                                             model::LayerKind::Moe) +
               d.embedding_activation_bytes(1, 1, false) + d.output_activation_bytes(1, 1, false))
            .epsilon(1e-12));
}

TEST_CASE("a small MoE shape: parameters, per-rank parameters and flop in closed form", "[moe]") {
  using model::LayerKind;
  const model::Transformer t = small_moe();
  // Attention 2h^2 + 2h^2 = 16384; one expert 3 h 32 = 6144; dense FFN 3 h 256 = 49152; router
  // h 4 = 256; norms 2h = 128.
  CHECK(t.attention_parameters() == 16384);
  CHECK(t.expert_parameters() == 6144);
  CHECK(t.routed_expert_parameters() == 4 * 6144);
  CHECK(t.feed_forward_parameters(LayerKind::Dense) == 49152);
  CHECK(t.feed_forward_parameters(LayerKind::Moe) == 256 + 5 * 6144);
  CHECK(t.layer_parameters(LayerKind::Dense) == 65664);
  CHECK(t.layer_parameters(LayerKind::Moe) == 47488);
  // 1 dense + 3 MoE layers + 2 V h + h.
  CHECK(t.parameters() == 65664 + 3 * 47488 + 2 * 100 * 64 + 64);
  // Each token skips 2 of the 4 routed experts of each of 3 MoE layers.
  CHECK(t.active_parameters() == t.parameters() - 3 * 2 * 6144);
  // t = 2, e = 2: attention / 2, the shared expert / 2, the routed experts / 2, the norms and
  // the router whole.
  CHECK(t.layer_replicated_parameters(LayerKind::Moe) == 128 + 256);
  CHECK(t.layer_parameters_per_rank(2, LayerKind::Moe, 2) == 8192 + 3072 + 12288 + 384);
  CHECK(t.layer_parameters_per_rank(2, LayerKind::Dense, 2) == 8192 + 24576 + 128);
  CHECK(t.layer_parameters_per_rank(1, LayerKind::Moe, 1) == t.layer_parameters(LayerKind::Moe));
  // Forward flop per sequence (s 16): 2 s (attention 16384 + router 256 + (2 + 1) x 6144) MACs
  // + 4 s^2 h of attention core.
  CHECK(t.layer_forward_flop(1, LayerKind::Moe) == 2 * 16 * (16384 + 256 + 3 * 6144) + 65536);
  CHECK(t.layer_forward_flop(1, LayerKind::Dense) == 2 * 16 * (16384 + 49152) + 65536);
  CHECK(t.layer_training_flop(2, model::Recompute::Full, LayerKind::Moe) ==
        8 * t.layer_forward_flop(1, LayerKind::Moe));
  CHECK(t.model_flop(1) == 3 * (2162688 + 3 * 1187840) + 3 * 2 * 16 * 64 * 100);

  // GELU with biases: each expert 2 h 32 + 32 + h; the shared expert's down bias replicated.
  model::Transformer g = t;
  g.feed_forward = model::FeedForward::Gelu;
  g.linear_bias = true;
  g.normalization = model::Normalization::LayerNorm;
  g.moe.experts_per_token = 1;
  CHECK(g.expert_parameters() == 4192);
  CHECK(g.feed_forward_parameters(LayerKind::Moe) == 256 + 5 * 4192);
  CHECK(g.layer_replicated_parameters(LayerKind::Moe) == 256 + 64 + 256 + 64);
  // Q, O: 2h^2/2 + h/2; K, V: 2 h 32 + 2 x 32; shared: 2 h 32 / 2 + 32 / 2; routed 4 x 4192 / 2.
  CHECK(g.layer_parameters_per_rank(2, LayerKind::Moe, 2) == 4128 + 4160 + 2064 + 8384 + 640);
  for (int tp : {1, 2, 4})
    for (int ep : {1, 2, 4}) {
      CAPTURE(tp, ep);
      // The split parts add up over t ranks; the replicated ones repeat; each tensor rank holds
      // 1/e of the routed experts.
      CHECK(tp * g.layer_parameters_per_rank(tp, LayerKind::Moe, ep) ==
            Approx(g.layer_parameters(LayerKind::Moe) +
                   (tp - 1) * g.layer_replicated_parameters(LayerKind::Moe) +
                   (double(tp) / ep - 1) * g.routed_expert_parameters())
                .epsilon(1e-12));
    }
}

TEST_CASE("a small MLA shape: parameters, per-rank parameters and flop in closed form", "[mla]") {
  using model::LayerKind;
  model::Transformer t = small_mla();
  // q_a 64 x 16 + norm 16 + q_b 16 x 4 x 12 + kv_a 64 x 12 + norm 8 + kv_b 8 x 4 x 16 + o 32 x 64.
  CHECK(t.attention_parameters() == 1024 + 16 + 768 + 768 + 8 + 512 + 2048);
  CHECK(t.layer_parameters() == 5144 + 24576 + 128);
  CHECK(t.parameters() == 2 * 29848 + 2 * 50 * 64 + 64);
  // t = 2: q_b, kv_b and o split by heads; q_a, kv_a and their norms whole, with the layer norms.
  CHECK(t.layer_replicated_parameters() == 128 + 1024 + 16 + 768 + 8);
  CHECK(t.layer_parameters_per_rank(2) == (768 + 512 + 2048) / 2 + 12288 + 1944);
  CHECK(2 * t.layer_parameters_per_rank(2) ==
        t.layer_parameters() + t.layer_replicated_parameters());
  // e does nothing to a dense layer.
  CHECK(t.layer_parameters_per_rank(2, LayerKind::Dense, 2) == t.layer_parameters_per_rank(2));
  // Forward flop per sequence: 2 s x MACs (1024 + 768 + 768 + 512 + 2048 + 3 h 128) and the
  // core, 2 s^2 a (8 + 4) for the scores and 2 s^2 a 8 for the values.
  CHECK(t.attention_core_forward_flop(1) == 2 * 16 * 16 * 4 * (12 + 8));
  CHECK(t.layer_forward_flop(1) == 2 * 16 * (5120 + 24576) + 40960);
  CHECK(t.kv_values_per_token() == 4 * (8 + 4 + 8));
  // Without a query latent, q_proj h x a (nope + rope) replaces q_a, its norm and q_b.
  t.mla.q_lora_rank = 0;
  CHECK(t.attention_parameters() == 64 * 4 * 12 + 768 + 8 + 512 + 2048);
  CHECK(t.layer_forward_flop(1) == 2 * 16 * (3072 + 768 + 512 + 2048 + 24576) + 40960);
  CHECK(t.layer_replicated_parameters() == 128 + 768 + 8);
}

TEST_CASE("layer kinds, dispatch values and K/V values per token", "[moe]") {
  using model::LayerKind;
  model::Transformer t = small_moe();
  CHECK(t.layer_kind(0) == LayerKind::Dense);
  CHECK(t.layer_kind(1) == LayerKind::Moe);
  CHECK(t.layer_kind(3) == LayerKind::Moe);
  CHECK(std::string(model::to_string(LayerKind::Moe)) == "moe");
  CHECK(std::string(model::to_string(LayerKind::Dense)) == "dense");
  CHECK(t.layers_of_kind(LayerKind::Dense, 0, 4) == 1);
  CHECK(t.layers_of_kind(LayerKind::Moe, 0, 4) == 3);
  CHECK(t.layers_of_kind(LayerKind::Dense, 0, 1) == 1);
  CHECK(t.layers_of_kind(LayerKind::Moe, 0, 1) == 0);
  CHECK(t.layers_of_kind(LayerKind::Dense, 1, 3) == 0);
  CHECK(t.layers_of_kind(LayerKind::Moe, 1, 2) == 2);
  CHECK(t.layers_of_kind(LayerKind::Moe, 2, 0) == 0);
  // tokens x k x h, x the capacity factor when one is set.
  CHECK(t.moe_dispatch_values(10) == 10 * 2 * 64);
  t.moe.capacity_factor = 1.25;
  CHECK(t.moe_dispatch_values(10) == 10 * 2 * 64 * 1.25);
  // Dense models: every layer dense, nothing routed, every parameter active.
  const model::Transformer llama = *model::load_workload("llama2-70b").transformer;
  CHECK(llama.layer_kind(5) == LayerKind::Dense);
  CHECK(llama.layers_of_kind(LayerKind::Dense, 2, 5) == 5);
  CHECK(llama.layers_of_kind(LayerKind::Moe, 2, 5) == 0);
  CHECK(llama.active_parameters() == llama.parameters());
  CHECK(llama.routed_expert_parameters() == 0);
  CHECK(llama.layer_parameters(LayerKind::Moe) == llama.layer_parameters());
  // 2 kv_heads head_dim: 2 x 8 x 128; MLA: heads (nope + rope + v) = 128 x 320.
  CHECK(llama.kv_values_per_token() == 2 * 8 * 128);
  CHECK(model::load_workload("deepseek-v3").transformer->kv_values_per_token() == 128 * 320);
}

TEST_CASE("a MoE layer's activation bytes extend Korthikanti's term by term", "[moe]") {
  using model::LayerKind;
  using model::Recompute;
  model::Transformer t = small_moe();
  t.element_bytes = 2;
  const double s = 16, h = 64, a = 4, E = 4, f = 32, e = 2;
  for (double cf : {0.0, 1.5}) {
    t.moe.capacity_factor = cf;
    const double copies = 2 * (cf > 0 ? cf : 1);
    for (double b : {1.0, 2.0})
      for (int tp : {1, 2})
        for (bool sp : {false, true}) {
          CAPTURE(cf, b, tp, sp);
          const double T = tp, sb = s * b, split = sp ? T : 1;
          // Norm and block inputs, masks (Korthikanti), the router's fp32 probabilities, the
          // permuted inputs and the experts' outputs, the routed experts' SwiGLU activations:
          // whole per rank unless sequence parallelism splits them.
          const double whole =
              (4 * e + 2) * sb * h + 4 * sb * E + 2 * e * copies * sb * h + copies * sb * 4 * e * f;
          // Q, K, V, the output projection's input and the shared expert's SwiGLU, split by t.
          const double by_t = e * sb * 4 * h / T + sb * 4 * e * f / T;
          const double scores = (2 * e + 1) * a * s * sb / T;
          CHECK(t.layer_activation_bytes(b, tp, sp, Recompute::None, LayerKind::Moe) ==
                Approx(whole / split + by_t + scores).epsilon(1e-12));
          CHECK(t.layer_activation_bytes(b, tp, sp, Recompute::Selective, LayerKind::Moe) ==
                Approx(whole / split + by_t).epsilon(1e-12));
          CHECK(t.layer_activation_bytes(b, tp, sp, Recompute::Full, LayerKind::Moe) ==
                Approx(e * sb * h / split).epsilon(1e-12));
        }
  }
  // An MLA layer: Q, K (a (nope + rope)), V and the output's input (a v) split by t; the latents
  // (2 q_lora_rank + 2 kv_lora_rank + rope) whole unless sequence parallelism splits them.
  model::Transformer m = small_mla();
  m.element_bytes = 2;
  for (int tp : {1, 2})
    for (bool sp : {false, true}) {
      CAPTURE(tp, sp);
      const double T = tp, split = sp ? T : 1;
      const double whole = 10 * s * h + e * s * (2 * 16 + 2 * 8 + 4);
      const double by_t = e * s * a * (2 * 12 + 2 * 8) / T + s * 4 * e * 128 / T;
      CHECK(m.layer_activation_bytes(1, tp, sp, Recompute::Selective) ==
            Approx(whole / split + by_t).epsilon(1e-12));
    }
}

TEST_CASE("bad moe and mla maps name the file and the key, in one line", "[moe]") {
  const std::string shape =
      "name: x\ntransformer:\n  layers: 4\n  hidden: 64\n  heads: 4\n  sequence: 8\n"
      "  vocabulary: 10\n  feed_forward: swiglu\n  linear_bias: false\n";
  const std::string moe =
      "  moe:\n    experts: 4\n    experts_per_token: 2\n    expert_ffn_hidden: 32\n";
  const std::string mla =
      "  mla:\n    kv_lora_rank: 8\n    qk_nope_head_dim: 8\n    qk_rope_head_dim: 4\n"
      "    v_head_dim: 8\n";
  auto parse = [](const std::string& yaml) { return model::parse_workload_yaml(yaml, "w.yaml"); };
  auto error_of = [&](const std::string& yaml) {
    try {
      parse(yaml);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // The good ones: a MoE model without ffn_hidden (no dense layer) and an MLA model.
  const model::Workload good = parse(shape + moe + "    capacity_factor: 1.25\n");
  CHECK(good.transformer->moe.experts == 4);
  CHECK(good.transformer->moe.capacity_factor == 1.25);
  CHECK(good.transformer->ffn_hidden == 32);
  CHECK(good.parameters == good.transformer->parameters());
  CHECK(parse(shape + "  ffn_hidden: 128\n" + mla).transformer->mla.enabled());
  const std::string with_ffn = shape + "  ffn_hidden: 128\n";
  struct Case {
    std::string yaml, expected;
  };
  const Case cases[] = {
      {shape + "  moe: 4\n", "w.yaml: transformer.moe: expected a map of the mixture of experts"},
      {shape + "  moe:\n    experts_per_token: 2\n    expert_ffn_hidden: 32\n",
       "w.yaml: transformer.moe.experts: expected a whole number > 0 (required)"},
      {shape + "  moe:\n    experts: 0\n    experts_per_token: 2\n    expert_ffn_hidden: 32\n",
       "w.yaml: transformer.moe.experts: expected a number > 0, got '0'"},
      {shape + "  moe:\n    experts: 4\n    experts_per_token: 5\n    expert_ffn_hidden: 32\n",
       "w.yaml: transformer.moe.experts_per_token: expected at most the experts (4), got 5"},
      {shape + "  moe:\n    experts: 4\n    expert_ffn_hidden: 32\n",
       "w.yaml: transformer.moe.experts_per_token: expected a whole number > 0 (required)"},
      {shape + "  moe:\n    experts: 4\n    experts_per_token: 2\n",
       "w.yaml: transformer.moe.expert_ffn_hidden: expected a whole number > 0 (required)"},
      {shape + "  moe:\n    experts: 4\n    experts_per_token: 2\n    expert_ffn_hidden: 2.5\n",
       "w.yaml: transformer.moe.expert_ffn_hidden: expected a whole number > 0, got '2.5'"},
      {shape + moe + "    shared_experts: -1\n",
       "w.yaml: transformer.moe.shared_experts: expected a number >= 0, got '-1'"},
      {shape + moe + "    first_dense_layers: 4\n",
       "w.yaml: transformer.moe.first_dense_layers: expected fewer than the layers (4), got 4"},
      {shape + moe + "    first_dense_layers: 1\n",
       "w.yaml: transformer.ffn_hidden: expected the SwiGLU inner width"},
      {shape + moe + "    capacity_factor: -1\n",
       "w.yaml: transformer.moe.capacity_factor: expected a number >= 0, got '-1'"},
      {shape + moe + "    experts_per_tok: 2\n",
       "w.yaml: transformer.moe.experts_per_tok: expected one of the known keys"},
      {with_ffn + "  mla: [1]\n",
       "w.yaml: transformer.mla: expected a map of the latent attention"},
      {with_ffn + "  mla:\n    qk_nope_head_dim: 8\n    qk_rope_head_dim: 4\n    v_head_dim: 8\n",
       "w.yaml: transformer.mla.kv_lora_rank: expected a whole number > 0 (required)"},
      {with_ffn + "  mla:\n    kv_lora_rank: 8\n    qk_rope_head_dim: 4\n    v_head_dim: 8\n",
       "w.yaml: transformer.mla.qk_nope_head_dim: expected a whole number > 0 (required)"},
      {with_ffn + "  mla:\n    kv_lora_rank: 8\n    qk_nope_head_dim: 8\n    v_head_dim: 8\n",
       "w.yaml: transformer.mla.qk_rope_head_dim: expected a whole number >= 0 (required)"},
      {with_ffn + "  mla:\n    kv_lora_rank: 8\n    qk_nope_head_dim: 8\n    qk_rope_head_dim: 4\n",
       "w.yaml: transformer.mla.v_head_dim: expected a whole number > 0 (required)"},
      {with_ffn + mla + "    q_lora_rank: 1.5\n",
       "w.yaml: transformer.mla.q_lora_rank: expected a whole number >= 0, got '1.5'"},
      {with_ffn + mla + "    kv_rank: 8\n",
       "w.yaml: transformer.mla.kv_rank: expected one of the known keys"},
      {with_ffn + mla + "  kv_heads: 2\n",
       "w.yaml: transformer.kv_heads: expected no value with transformer.mla"},
      {"name: x\ntransformer:\n  layers: 4\n  hidden: 64\n  heads: 4\n  sequence: 8\n"
       "  vocabulary: 10\n" +
           mla,
       "w.yaml: transformer.linear_bias: expected false with transformer.mla (its projections "
       "have no biases), got true (the default)"},
      {with_ffn + "  published_parameters: 5\n  published_source: s\n"
                  "  published_active_parameters: 2\n",
       "w.yaml: transformer.published_active_parameters: expected no value without "
       "transformer.moe"},
      {shape + moe + "  published_active_parameters: 2\n",
       "w.yaml: transformer.published_active_parameters: expected published_parameters"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    const std::string message = error_of(c.yaml);
    CHECK_THAT(message, Catch::Contains(c.expected));
    CHECK(message.find('\n') == std::string::npos);
  }
}
