// transformer_test.cpp: transformer workloads: parameter counts against the published ones,
// flop and activation counts against the papers' closed forms, and bad shapes refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "model/error.hpp"
#include "model/workload.hpp"

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
