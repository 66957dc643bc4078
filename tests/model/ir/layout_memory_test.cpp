// layout_memory_test.cpp: memory per worker per layout against ZeRO's and Korthikanti's closed
// forms, and the search for the smallest layouts that fit.
#include <catch2/catch.hpp>

#include <algorithm>

#include "model/inputs/workload.hpp"
#include "model/ir/layout_memory.hpp"
#include "tests/model/test_support.hpp"

using namespace tauplan;
using test::layout;

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0) out.push_back(k);
  return out;
}

}  // namespace

TEST_CASE("model state per worker is ZeRO's Table: 16 Psi sharded stage by stage") {
  // Rajbhandari et al. 2019 Figure 1 / Section 5: Psi = 7.5B, N_d = 64, K = 12:
  // 120 GB, 31.4 GB, 16.6 GB, 1.9 GB.
  const double psi = 7.5e9;
  const double gb = 1e9;
  CHECK(model::model_state_bytes(psi, 2, 12, 0, 64).total() / gb == Approx(120));
  CHECK(model::model_state_bytes(psi, 2, 12, 1, 64).total() / gb == Approx(31.4).margin(0.05));
  CHECK(model::model_state_bytes(psi, 2, 12, 2, 64).total() / gb == Approx(16.6).margin(0.05));
  CHECK(model::model_state_bytes(psi, 2, 12, 3, 64).total() / gb == Approx(1.875));
  // With one replica nothing is sharded.
  CHECK(model::model_state_bytes(psi, 2, 12, 3, 1).total() == 16 * psi);
}

TEST_CASE("a layout of one worker needs what the workload says a batch needs") {
  // Identity: both add parameters x (2 bytes_per_parameter + optimizer) and samples x the
  // activation bytes of one sample; the check is that the stage split adds nothing or loses
  // nothing when there is one stage.
  for (const auto& name : model::catalog_workload_names()) {
    const model::Workload w = model::load_workload(name);
    if (!w.transformer) continue;
    INFO(name);
    for (double batch : {1.0, 4.0}) {
      const model::LayoutMemory memory = model::layout_memory(w, layout(1, 1, 1), batch);
      REQUIRE(memory.stages.size() == 1);
      CHECK(memory.stages[0].tensor_bytes() == Approx(w.memory_bytes(batch)).epsilon(1e-12));
      CHECK(memory.peak_bytes - memory.reserve_bytes ==
            Approx(w.memory_bytes(batch)).epsilon(1e-12));
    }
  }
}

TEST_CASE("stages hold all the parameters, and Megatron's tied-embedding copy on the last") {
  const model::Transformer gpt3 = *model::load_workload("gpt3-175b").transformer;
  const model::Transformer llama = *model::load_workload("llama2-7b").transformer;
  for (int p : {1, 2, 8}) {
    double tied = 0, untied = 0;
    for (int r = 0; r < p; ++r) {
      tied += model::stage_parameters(gpt3, layout(1, 1, p), r);
      untied += model::stage_parameters(llama, layout(1, 1, p), r);
    }
    CHECK(tied == Approx(gpt3.parameters() + (p > 1 ? gpt3.token_embedding_parameters() : 0)));
    CHECK(untied == Approx(llama.parameters()));
  }
  // Tensor ranks split all but the replicated parts.
  const double one = model::stage_parameters(gpt3, layout(1, 1, 1), 0);
  const double eighth = model::stage_parameters(gpt3, layout(1, 8, 1), 0);
  const double replicated = gpt3.layers * gpt3.layer_replicated_parameters() +
                            gpt3.other_embedding_parameters() + gpt3.norm_parameters();
  CHECK(8 * eighth == Approx(one + 7 * replicated));
}

TEST_CASE("1F1B holds min(p - r, m) micro-batches on stage r, GPipe all m") {
  const model::Workload w = model::load_workload("gpt3-175b");
  const model::Transformer& t = *w.transformer;
  model::Layout l = layout(1, 8, 8, 16);
  const double batch = 16;  // micro-batch of 1 sequence
  const model::LayoutMemory one_f_one_b = model::layout_memory(w, l, batch);
  l.schedule = model::PipelineSchedule::GPipe;
  const model::LayoutMemory gpipe = model::layout_memory(w, l, batch);
  const double per_layer = t.layer_activation_bytes(1, 8, false, model::Recompute::None);
  for (int r = 0; r < 8; ++r) {
    INFO("stage " << r);
    const auto& a = one_f_one_b.stages[static_cast<size_t>(r)];
    const auto& g = gpipe.stages[static_cast<size_t>(r)];
    CHECK(a.in_flight == std::min(8 - r, 16));
    CHECK(g.in_flight == 16);
    double extra = 0;
    if (r == 0) extra += t.embedding_activation_bytes(1, 8, false);
    if (r == 7) extra += t.output_activation_bytes(1, 8, false);
    CHECK(a.activation_bytes == Approx(a.in_flight * (12 * per_layer + extra)));
  }
  // Korthikanti Section 4.2.3: stage 0 of 1F1B holds all L layers' activations of one
  // micro-batch, whatever p: s b h L (10 + 24/t + 5as/(ht)) with tensor parallelism, and
  // eq. 5's (s b h L / t)(34 + 5as/h) with sequence parallelism too.
  const double s = 2048, h = 12288, a = 96, L = 96;
  CHECK(one_f_one_b.stages[0].activation_bytes - t.embedding_activation_bytes(1, 8, false) * 8 ==
        Approx(s * h * L * (10 + 24.0 / 8 + 5 * a * s / (h * 8))));
  model::Layout with_sp = layout(1, 8, 8, 16);
  with_sp.sequence_parallel = true;
  CHECK(model::layout_memory(w, with_sp, batch).stages[0].activation_bytes -
            t.embedding_activation_bytes(1, 8, true) * 8 ==
        Approx(s * h * L / 8 * (34 + 5 * a * s / h)));
  // Full recomputation keeps each layer's input per micro-batch and one layer whole.
  l.schedule = model::PipelineSchedule::OneFOneB;
  l.recompute = model::Recompute::Full;
  const model::LayoutMemory full = model::layout_memory(w, l, batch);
  CHECK(full.stages[3].activation_bytes ==
        Approx(5 * 12 * 2 * s * h + t.layer_activation_bytes(1, 8, false, model::Recompute::None)));
}

TEST_CASE("the smallest layouts that fit: nothing with a smaller split fits, whatever options") {
  const model::Workload w = model::load_workload("gpt3-175b");
  const double gib = 1024.0 * 1024.0 * 1024.0;
  int cases_with_a_split = 0;
  for (double memory : {48 * gib, 64 * gib, 80 * gib}) {
    model::FitSearch search;
    search.workers = 64;
    search.batch = 64;
    search.memory_bytes = memory;
    search.max_tensor = 8;
    const auto found = model::smallest_fitting_layouts(w, search, 5);
    INFO("memory " << memory / gib << " GiB");
    REQUIRE_FALSE(found.empty());
    for (const auto& f : found) {
      INFO(f.layout.label());
      CHECK(f.memory.peak_bytes <= search.memory_bytes);
      CHECK(f.layout.workers() == 64);
    }
    for (size_t i = 1; i < found.size(); ++i)
      CHECK(found[i - 1].layout.tensor * found[i - 1].layout.pipeline <=
            found[i].layout.tensor * found[i].layout.pipeline);
    // Exhaustively: no smaller split fits with any option.
    const int smallest = found.front().layout.tensor * found.front().layout.pipeline;
    if (smallest > 1) ++cases_with_a_split;
    for (int t : divisors(8))
      for (int p : divisors(64 / t)) {
        if (t * p >= smallest) continue;
        model::Layout l = layout(64 / (t * p), t, p);
        for (int m : divisors(static_cast<int>(search.batch) / l.data))
          for (int zero = 0; zero <= 3; ++zero)
            for (auto rc :
                 {model::Recompute::None, model::Recompute::Selective, model::Recompute::Full})
              for (bool sp : {false, true}) {
                l.micro_batches = m;
                l.zero_stage = zero;
                l.recompute = rc;
                l.sequence_parallel = sp;
                CHECK(model::layout_memory(w, l, search.batch).peak_bytes > search.memory_bytes);
              }
      }
  }
  CHECK(cases_with_a_split >= 1);
  // 175B x 16 bytes of model state (2.8 TB) exceed 8 GPUs of 80 GiB in any layout.
  model::FitSearch node;
  node.workers = 8;
  node.batch = 8;
  node.memory_bytes = 80 * gib;
  CHECK(model::smallest_fitting_layouts(w, node, 5).empty());
}

TEST_CASE("every stage reserves the CUDA context, NCCL buffers and fragmentation") {
  // The reserve: 0.75 GiB of CUDA context, 4 MiB x 32 channels x 2 peers of NCCL buffers and
  // 10% of the activations (model/ir/layout_memory.hpp, each an estimate with its source).
  const double gib = 1024.0 * 1024.0 * 1024.0, mib = 1024.0 * 1024.0;
  const double fixed = 0.75 * gib + 4 * mib * 32 * 2;
  CHECK(model::memory_reserve_bytes(0) == Approx(1.0 * gib));
  CHECK(model::memory_reserve_bytes(10 * gib) == Approx(fixed + 1 * gib));
  const model::Workload w = model::load_workload("gpt3-175b");
  const model::LayoutMemory memory = model::layout_memory(w, layout(1, 8, 8, 16), 16);
  for (const auto& stage : memory.stages) {
    INFO("stage " << stage.stage);
    CHECK(stage.reserve_bytes == Approx(fixed + 0.1 * stage.activation_bytes));
    CHECK(stage.total_bytes() == Approx(stage.state.total() + stage.activation_bytes + fixed +
                                        0.1 * stage.activation_bytes));
  }
  const auto& peak = memory.stages[static_cast<size_t>(memory.peak_stage)];
  CHECK(memory.peak_bytes == peak.total_bytes());
  CHECK(memory.reserve_bytes == peak.reserve_bytes);
}

TEST_CASE("a layout that fits without the reserve but not with it is refused") {
  const model::Workload w = model::load_workload("gpt3-175b");
  const model::Layout l = layout(1, 8, 8, 16);
  const model::LayoutMemory memory = model::layout_memory(w, l, 16);
  const auto& peak = memory.stages[static_cast<size_t>(memory.peak_stage)];
  // A GPU of exactly the tensors' bytes plus half the reserve.
  const double capacity = peak.tensor_bytes() + memory.reserve_bytes / 2;
  CHECK_FALSE(memory.fits(capacity));
  CHECK(memory.fits(memory.peak_bytes));
  // The search does not offer it: every layout it returns fits with its reserve, and the
  // layout above (the same split and options) is not among them.
  model::FitSearch search;
  search.workers = 64;
  search.batch = 16;
  search.memory_bytes = capacity;
  search.max_tensor = 8;
  for (const auto& f : model::smallest_fitting_layouts(w, search, 20)) {
    INFO(f.layout.label());
    CHECK(f.layout.label() != l.label());
    CHECK(f.memory.stages[static_cast<size_t>(f.memory.peak_stage)].tensor_bytes() +
              f.memory.reserve_bytes <=
          capacity);
  }
}

TEST_CASE("the MFU's peak is the GPU catalog's at the training precision") {
  const std::string h100 = "H100-SXM5-80GB";
  const model::GpuSpec& spec = model::gpu_spec(h100);
  CHECK(model::training_peak(h100, "", 2).flops == spec.peak_bf16_flops);
  CHECK(model::training_peak(h100, "", 2).precision == "bf16");
  CHECK(model::training_peak(h100, "", 4).flops == spec.peak_fp32_flops);
  CHECK(model::training_peak(h100, "fp16", 2).flops == spec.peak_fp16_flops);
  // V100 has no bf16: 2-byte training runs in fp16. K80 has neither: no peak, and why.
  CHECK(model::training_peak("V100-SXM2-16GB", "", 2).precision == "fp16");
  CHECK(model::training_peak("V100-SXM2-16GB", "", 2).flops > 0);
  CHECK(model::training_peak("K80", "", 2).flops == 0);
  CHECK_THAT(model::training_peak("K80", "", 2).missing, Catch::Contains("K80"));
  CHECK(model::training_peak("", "", 2).flops == 0);
  CHECK_FALSE(model::training_peak("", "", 2).missing.empty());
}

TEST_CASE("context parallelism divides a rank's activations by c, ZeRO shards over d x c") {
  const model::Workload w = model::load_workload("llama3-8b");
  model::Layout base;
  base.data = 4;
  base.micro_batches = 2;
  base.zero_stage = 1;
  model::Layout context = base;
  context.context = 4;  // 16 workers, each sequence over four of them
  const model::LayoutMemory one = model::layout_memory(w, base, 8);
  const model::LayoutMemory four = model::layout_memory(w, context, 8);
  // Identity of the accounting: every stored value is split by sequence.
  CHECK(four.stages[0].activation_bytes == Approx(one.stages[0].activation_bytes / 4));
  CHECK(four.stages[0].state.weights == Approx(one.stages[0].state.weights));
  CHECK(four.stages[0].state.optimizer == Approx(one.stages[0].state.optimizer / 4));
}

TEST_CASE(
    "expert parallelism: a rank holds experts / e of every MoE layer, sharded by ZeRO over "
    "the t c d / e ranks that hold the same ones") {
  const model::Workload w = model::load_workload("mixtral-8x7b");
  const model::Transformer& shape = *w.transformer;
  model::Layout l;
  l.data = 16;
  l.micro_batches = 1;
  l.zero_stage = 1;
  model::Layout split = l;
  split.expert = 8;
  const double routed = shape.routed_expert_parameters();
  CHECK(model::stage_expert_parameters(shape, l, 0) == Approx(32 * routed));
  CHECK(model::stage_expert_parameters(shape, split, 0) == Approx(32 * routed / 8));
  CHECK(model::stage_parameters(shape, split, 0) ==
        Approx(model::stage_parameters(shape, l, 0) - 32 * routed * 7 / 8));
  const model::LayoutMemory memory = model::layout_memory(w, split, 16);
  const double dense = model::stage_parameters(shape, split, 0) - 32 * routed / 8;
  // Optimizer state: the dense part over 16 ranks, the experts over 16 / 8 = 2.
  CHECK(memory.stages[0].state.optimizer == Approx(12 * (dense / 16 + 32 * routed / 8 / 2)));
  CHECK(memory.stages[0].state.weights == Approx(2 * (dense + 32 * routed / 8)));
  // Identity of the sharding: under ZeRO 3 a rank holds 1/16 of every expert either way (all
  // experts over 16 ranks, or one of eight over the 2 that share it), so expert parallelism
  // saves memory against ZeRO 0-2 only; its gain under ZeRO 3 is the gathers it avoids.
  model::Layout zero3 = l, zero3_split = split;
  zero3.zero_stage = zero3_split.zero_stage = 3;
  CHECK(model::layout_memory(w, zero3, 16).stages[0].state.total() ==
        Approx(model::layout_memory(w, zero3_split, 16).stages[0].state.total()));
  CHECK(model::layout_memory(w, split, 16).stages[0].state.total() <
        model::layout_memory(w, l, 16).stages[0].state.total() / 2);
}
