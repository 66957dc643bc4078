// layer_dropout_test.cpp: the memory traffic layer_ops counts for dropout (LayerShape::dropout,
// the workload key `dropout`): exactly the passes model/compute/layer_ops.hpp describes, none
// when off, no flop, repeated with the forward that recomputation repeats.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "model/compute/layer_ops.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/compute_shapes.hpp"

using namespace tauplan;
using model::ComputeOp;
using model::Recompute;

namespace {

/// One layer of Korthikanti's 22B model (64 heads, hidden 6144) on one of 8 tensor ranks,
/// micro-batch 4, sequence 2048: Table 4's layer.
model::LayerShape shape_22b(bool dropout, bool sequence_parallel = false,
                            model::AttentionKernel attention = model::AttentionKernel::Math) {
  model::LayerShape s;
  s.hidden = 6144;
  s.heads = s.kv_heads = 64;
  s.ffn_hidden = 4 * 6144;
  s.sequence = 2048;
  s.micro_batch = 4;
  s.tensor = 8;
  s.sequence_parallel = sequence_parallel;
  s.attention = attention;
  s.element_bytes = 2;
  s.dropout = dropout;
  return s;
}

double dropout_memory_bytes(const std::vector<ComputeOp>& ops) {
  double bytes = 0;
  for (const ComputeOp& op : ops)
    if (op.kind == model::ComputeOpKind::Memory) bytes += op.bytes;
  return bytes;
}

int named(const std::vector<ComputeOp>& ops, const std::string& name) {
  int n = 0;
  for (const ComputeOp& op : ops)
    n += op.name == name ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("layer_ops: dropout adds the passes of attention and hidden dropout, and no flop") {
  const double e = 2, s = 2048, b = 4, t = 8, h = 6144, a = 64;
  const double scores = b * a / t * s * s;  // the rank's s x s probabilities
  for (const bool sp : {false, true}) {
    CAPTURE(sp);
    const double values = b * s * h / (sp ? t : 1);  // the residual stream's values on a rank
    // Per forward: the attention dropout (2e + 1 a score) and two masks (1 a value); backward:
    // the attention dropout's (2e + 1) and the two blocks' dropout gradients (2e + 1 a value).
    const double forward = (2 * e + 1) * scores + 2 * values;
    const double backward = (2 * e + 1) * scores + 2 * (2 * e + 1) * values;
    const double attention_forward = (2 * e + 1) * scores;
    struct Case {
      Recompute recompute;
      double extra;
    };
    for (const Case& c : {Case{Recompute::None, forward + backward},
                          Case{Recompute::Selective, forward + attention_forward + backward},
                          Case{Recompute::Full, 2 * forward + backward}}) {
      CAPTURE(model::to_string(c.recompute));
      const auto off = model::layer_ops(shape_22b(false, sp), c.recompute);
      const auto on = model::layer_ops(shape_22b(true, sp), c.recompute);
      CHECK(model::total_flop(on) == model::total_flop(off));
      CHECK(dropout_memory_bytes(on) - dropout_memory_bytes(off) == Approx(c.extra).epsilon(1e-12));
      CHECK(named(off, "attention.dropout") == 0);
      CHECK(named(off, "residual1.dropout.backward") == 0);
      CHECK(named(on, "attention.dropout") ==
            (c.recompute == Recompute::None ? 1 : 2));  // recomputation repeats it
      CHECK(named(on, "attention.dropout.backward") == 1);
      CHECK(named(on, "residual1.dropout.backward") == 1);
      CHECK(named(on, "residual2.dropout.backward") == 1);
      CHECK(on.size() - off.size() ==
            (c.recompute == Recompute::None ? 4u : 5u));  // the masks ride on the residual ops
    }
  }
}

TEST_CASE("layer_ops: a flash kernel applies attention dropout inside, the masks stay") {
  const auto off =
      model::layer_ops(shape_22b(false, false, model::AttentionKernel::Flash), Recompute::None);
  const auto on =
      model::layer_ops(shape_22b(true, false, model::AttentionKernel::Flash), Recompute::None);
  CHECK(named(on, "attention.dropout") == 0);
  CHECK(named(on, "attention.dropout.backward") == 0);
  const double values = 4.0 * 2048 * 6144;
  CHECK(dropout_memory_bytes(on) - dropout_memory_bytes(off) ==
        Approx(2 * values + 2 * 5 * values));
}

TEST_CASE("the workload key dropout reaches the compute model's layer shape") {
  const std::string shape =
      "name: x\ntransformer:\n  layers: 2\n  hidden: 64\n  heads: 4\n"
      "  sequence: 8\n  vocabulary: 10\n";
  auto parse = [](const std::string& yaml) { return model::parse_workload_yaml(yaml, "w.yaml"); };
  CHECK_FALSE(parse(shape).transformer->dropout);
  CHECK_FALSE(parse(shape + "  dropout: false\n").transformer->dropout);
  const model::Workload with = parse(shape + "  dropout: true\n");
  CHECK(with.transformer->dropout);
  CHECK(model::layer_shape(*with.transformer, 1, 1, false).dropout);
  CHECK_FALSE(model::layer_shape(*parse(shape).transformer, 1, 1, false).dropout);
  // The activation bytes count the masks either way (Korthikanti's accounting).
  CHECK(with.activation_bytes_per_sample == parse(shape).activation_bytes_per_sample);
  CHECK_THROWS_WITH(parse(shape + "  dropout: 0.1\n"),
                    "w.yaml: transformer.dropout: expected true or false, got '0.1'");
}
