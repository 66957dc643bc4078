// layout_plan_test.cpp: strategy mesh's Plan (model/ir/strategy_mesh.cpp) in the analytic and
// SimGrid engines against the closed forms of model/ir/layout_cost.hpp on the two_nodes fixture
// (every route 2 us and 25 GB/s, no shared link between distinct pairs): the tensor all-reduces
// per layer and micro-batch, the pipeline bubble (p - 1)/(m + p - 1), the data dimension's
// 2 Psi or 3 Psi under ZeRO, and a layout of size 1 in every dimension against single.
// The round times are identities of the lowering where it follows the closed form op by op
// (p = 1: a chain of passes, then the data dimension); the pipeline's (m + p - 1)(f + b) +
// 2 (p - 1) c is an identity of the GPipe and 1F1B schedules with uniform stages. What they
// check is that the Plan, the longest path and the simulator implement them.
#include <catch2/catch.hpp>

#include <array>
#include <set>

#include "model/analytic/analytic.hpp"
#include "model/inputs/transformer.hpp"
#include "model/ir/layout_cost.hpp"
#include "model/ir/layout_memory.hpp"
#include "sim/platform_loader.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

model::StrategyOptions layout_options(int d, int t, int p, int m, double batch) {
  model::StrategyOptions o = test::options(d * t * p, batch);
  o.layout.data = d;
  o.layout.tensor = t;
  o.layout.pipeline = p;
  o.layout.micro_batches = m;
  return o;
}

model::Plan layout_plan(const model::StrategyOptions& o, const model::Workload& w,
                        const model::Platform& platform) {
  return model::make_plan("mesh", o, w, platform, model::FixedCounts(1));
}

/// Building the layout's Plan is an InputError naming `key`.
void expect_input_error(const model::StrategyOptions& o, const model::Workload& w,
                        const model::Platform& platform, const std::string& key) {
  try {
    layout_plan(o, w, platform);
    FAIL("no InputError for " << key);
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(e.key() == key);
  }
}

/// A transformer without vocabulary (no logits flop), so that every stage of a pipeline over
/// its 8 layers does the same work; fp32, no optimizer flop; a pass takes longer than a send.
model::Workload uniform_transformer() {
  model::Workload w;
  w.name = "uniform";
  w.source = "<test>";
  w.bytes_per_parameter = 4;
  w.update_flop_per_parameter = 0;
  model::Transformer t;
  t.layers = 8;
  t.hidden = 1024;
  t.heads = 16;
  t.kv_heads = 16;
  t.ffn_hidden = 4096;
  t.sequence = 512;
  t.vocabulary = 0;
  t.max_positions = 512;
  t.element_bytes = 4;
  w.transformer = t;
  model::derive_workload_fields(w);
  return w;
}

/// The uniform transformer with values of 0 bytes: every stage-to-stage send is free (a
/// Transfer of nothing takes no time in either engine).
model::Workload free_sends() {
  model::Workload w = uniform_transformer();
  w.bytes_per_parameter = 0;
  return w;
}

/// d1 t1 p2 and p4 with 1, 4 and 8 micro-batches of a batch of 8, GPipe then 1F1B.
std::vector<model::StrategyOptions> pipeline_cases() {
  std::vector<model::StrategyOptions> cases;
  for (auto schedule : {model::PipelineSchedule::GPipe, model::PipelineSchedule::OneFOneB})
    for (int m : {1, 4, 8})
      for (int p : {2, 4}) {
        cases.push_back(layout_options(1, 1, p, m, 8));
        cases.back().layout.schedule = schedule;
      }
  return cases;
}

/// Analytic and simulated round times of each layout, in a child (one SimGrid engine).
nlohmann::json both_engines(const std::vector<model::StrategyOptions>& cases,
                            const std::function<model::Workload()>& workload) {
  const auto result = test::in_child([&] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
    const model::Workload w = workload();
    nlohmann::json out = nlohmann::json::array();
    for (const auto& o : cases) {
      const model::Plan plan = layout_plan(o, w, platform);
      const model::LayoutTime closed = model::layout_time(
          w, o.layout, o.batch, platform, model::place_mesh(o.layout, platform, {}, "<test>"));
      out.push_back({{"label", o.layout.label()},
                     {"analytic", model::analyze(plan, platform).round_s},
                     {"simgrid", sim::simulate(plan, platform, sim::SimOptions{}).round_s},
                     {"closed_form", closed.iteration_s},
                     {"pipeline_s", closed.pipeline_s}});
    }
    return out.dump();
  });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  return result.json();
}

/// gpt2-small with an optimizer step that costs something (12 flop per parameter).
model::Workload gpt2_with_optimizer_step() {
  model::Workload w = model::load_workload("gpt2-small");
  w.update_flop_per_parameter = 12;
  return w;
}

/// Every row's analytic round equals its closed form, and SimGrid's round the analytic one.
void check_closed_forms(const nlohmann::json& rows) {
  for (const auto& row : rows) {
    INFO(row.dump());
    CHECK(row["analytic"].get<double>() == Approx(row["closed_form"].get<double>()).epsilon(1e-9));
    CHECK(row["simgrid"].get<double>() == Approx(row["analytic"].get<double>()).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE(
    "layout plans: tensor all-reduces per stage and micro-batch are 4 per layer (6 with "
    "full recomputation) + the embedding's and the output's, of b s h values each, and the "
    "vocabulary-parallel loss's two, of b s and 2 b s fp32 values") {
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const model::Workload w = model::load_workload("gpt2-small");  // 12 layers, fp32
  const double tokens = 4.0 * 1024;                              // micro-batch 4 x sequence
  for (auto recompute : {model::Recompute::None, model::Recompute::Full})
    for (int p : {1, 2}) {
      auto o = layout_options(1, 4, p, 2, 8);
      o.layout.recompute = recompute;
      const model::Plan plan = layout_plan(o, w, platform);
      long long calls = 0, maxima = 0, sums = 0;
      for (auto v : plan.op_ids()) {
        const model::Op& op = plan.op(v);
        if (op.kind != model::OpKind::Collective) continue;
        CHECK(op.group.size() == 4);
        INFO(op.label);
        if (op.bytes == tokens * 768 * 4) {  // x hidden x fp32
          calls += op.repeat;
        } else {  // the loss's: on the last stage, forward, once each
          CHECK(op.pass.stage == p - 1);
          CHECK(op.pass.forward);
          CHECK(op.repeat == 1);
          (op.bytes == tokens * 4 ? maxima : sums) += 1;
          CHECK((op.bytes == tokens * 4 || op.bytes == tokens * 8));
        }
      }
      const int per_layer = recompute == model::Recompute::Full ? 6 : 4;
      INFO("p = " << p << ", recompute " << model::to_string(recompute));
      // 12 layers over the stages, + 1 embedding (first stage) + 1 output (last), per
      // micro-batch (2).
      CHECK(calls == 2 * (12 * per_layer + 2));
      CHECK(maxima == 2);
      CHECK(sums == 2);
      CHECK(plan.count(model::OpKind::Compute) == 4 * p * 2 * 2);  // ranks x passes
    }
}

TEST_CASE(
    "layout plans: ranks sharing a K/V head (t > kv_heads) sum its gradients before the data "
    "group's reduction, in both engines and the closed form") {
  const auto gqa = [] {  // gpt2-small with 2 K/V heads: 4 tensor ranks share each in pairs
    model::Workload w = gpt2_with_optimizer_step();
    w.transformer->kv_heads = 2;
    model::derive_workload_fields(w);
    return w;
  };
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const model::Plan plan = layout_plan(layout_options(1, 4, 2, 2, 8), gqa(), platform);
  long long shared = 0;
  for (auto v : plan.op_ids()) {
    const model::Op& op = plan.op(v);
    if (op.kind != model::OpKind::Collective || op.group.size() != 2 || op.pass.stage >= 0)
      continue;
    if (op.label.find("shared K/V") == std::string::npos) continue;
    INFO(op.label);
    ++shared;
    // 6 layers per stage x K and V (768 x 64 each) x fp32.
    CHECK(op.bytes == 6.0 * 2 * 768 * 64 * 4);
    CHECK(op.group[1] == op.group[0] + 1);  // neighbouring tensor ranks
  }
  CHECK(shared == 2 * 2);  // stages x pairs
  std::vector<model::StrategyOptions> cases = {layout_options(1, 4, 1, 2, 8),
                                               layout_options(2, 4, 1, 1, 8)};
  check_closed_forms(both_engines(cases, gqa));
}

TEST_CASE(
    "layout plans: without a pipeline, analytic and SimGrid rounds equal the closed form "
    "(tensor inside a node, data across nodes, ZeRO 0-3, recomputation)") {
  std::vector<model::StrategyOptions> cases;
  cases.push_back(layout_options(1, 4, 1, 2, 8));
  cases.push_back(layout_options(2, 4, 1, 2, 8));
  cases.push_back(layout_options(2, 4, 1, 4, 8));
  cases.back().layout.recompute = model::Recompute::Full;
  for (int zero : {0, 1, 2, 3}) {
    cases.push_back(layout_options(8, 1, 1, 1, 8));
    cases.back().layout.zero_stage = zero;
  }
  cases.push_back(layout_options(4, 2, 1, 1, 8));
  cases.back().layout.zero_stage = 3;
  cases.back().layout.sequence_parallel = true;
  const auto rows = both_engines(cases, gpt2_with_optimizer_step);
  check_closed_forms(rows);
  // ZeRO 3 costs one more ring all-gather of the parameters than ZeRO 0-2: 3 Psi against
  // 2 Psi; ZeRO 1-2 update a 1/d shard (gpt2-small's optimizer step costs flop).
  const double zero0 = rows[3]["analytic"], zero1 = rows[4]["analytic"];
  const double zero2 = rows[5]["analytic"], zero3 = rows[6]["analytic"];
  CHECK(zero1 < zero0);
  CHECK(zero2 == Approx(zero1).epsilon(1e-12));
  CHECK(zero3 > zero2);
}

TEST_CASE(
    "layout plans: context parallelism's K/V ring beside the attention, in both engines, equals "
    "the closed form (ring inside a node, across nodes, with tensor ranks, with ZeRO 1)") {
  std::vector<model::StrategyOptions> cases;
  const auto context = [&](int d, int t, int c, int m, double batch) {
    model::StrategyOptions o = layout_options(d, t, 1, m, batch);
    o.layout.context = c;
    o.workers = d * t * c;
    cases.push_back(o);
  };
  context(1, 1, 4, 1, 2);  // four ranks of one node
  context(1, 1, 8, 2, 4);  // both nodes: the ring crosses them
  context(2, 2, 2, 1, 4);  // tensor pairs, two context ranks, two replicas
  context(2, 1, 2, 2, 4);
  cases.back().layout.zero_stage = 1;
  cases.back().layout.recompute = model::Recompute::Selective;
  const auto rows = both_engines(cases, gpt2_with_optimizer_step);
  check_closed_forms(rows);
}

namespace {

/// A small mixture of experts: 4 layers, the first dense, 8 experts of which each token takes 2,
/// one shared expert; bf16.
model::Workload small_moe() {
  model::Workload w;
  w.name = "small-moe";
  w.source = "<test>";
  w.bytes_per_parameter = 2;
  w.update_flop_per_parameter = 12;
  model::Transformer t;
  t.layers = 4;
  t.hidden = 512;
  t.heads = 8;
  t.kv_heads = 8;
  t.ffn_hidden = 2048;
  t.feed_forward = model::FeedForward::SwiGlu;
  t.linear_bias = false;
  t.normalization = model::Normalization::RmsNorm;
  t.positions = model::PositionEmbedding::Rotary;
  t.sequence = 256;
  t.vocabulary = 1000;
  t.tied_embeddings = false;
  t.element_bytes = 2;
  t.moe.experts = 8;
  t.moe.experts_per_token = 2;
  t.moe.expert_ffn_hidden = 512;
  t.moe.shared_experts = 1;
  t.moe.first_dense_layers = 1;
  w.transformer = t;
  model::derive_workload_fields(w);
  return w;
}

}  // namespace

TEST_CASE(
    "layout plans: expert parallelism's all-to-alls (a pairwise exchange per MoE layer) and "
    "expert gradients, in both engines, equal the closed form") {
  std::vector<model::StrategyOptions> cases;
  const auto experts = [&](int d, int t, int p, int e, int m) {
    model::StrategyOptions o = layout_options(d, t, p, m, 8);
    o.layout.expert = e;
    o.layout.sequence_parallel = t > 1;
    cases.push_back(o);
  };
  experts(4, 1, 1, 4, 1);  // one node
  experts(8, 1, 1, 8, 1);  // both nodes
  experts(4, 2, 1, 8, 1);  // folded over the tensor ranks
  experts(4, 1, 2, 2, 2);  // two stages: the dense layer's stage has no all-to-all
  experts(8, 1, 1, 4, 1);  // each expert on two ranks: their gradients reduced
  cases.back().layout.zero_stage = 3;
  const auto rows = both_engines(cases, small_moe);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    INFO(row.dump());
    const double analytic = row["analytic"], closed = row["closed_form"];
    if (cases[i].layout.pipeline == 1) {
      CHECK(analytic == Approx(closed).epsilon(1e-9));
      CHECK(row["simgrid"].get<double>() == Approx(analytic).epsilon(1e-6));
    } else {
      // Two unequal stages (the dense layer's and two MoE layers'): the closed form charges
      // every slot the slowest stage and its sends, an upper bound of the Plan's; SimGrid shares
      // the links between one stage's all-to-alls and the other's sends.
      CHECK(analytic <= closed * (1 + 1e-12));
      CHECK(analytic > 0.9 * closed);
      CHECK(row["simgrid"].get<double>() == Approx(analytic).epsilon(0.03));
    }
  }
  // Without expert parallelism every rank holds every expert, and the gradient all-reduce
  // carries them all: here that costs more than the all-to-alls do.
  auto plain = cases[1];
  plain.layout.expert = 1;
  const auto without = both_engines({plain}, small_moe);
  CHECK(without[0]["analytic"].get<double>() > rows[1]["analytic"].get<double>());
}

TEST_CASE("layout plans: the data dimension moves 2 Psi per rank's shard (3 Psi with ZeRO 3)") {
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const model::Workload w = model::load_workload("gpt2-small");
  for (int zero : {0, 3}) {
    auto o = layout_options(4, 1, 2, 2, 8);
    o.layout.zero_stage = zero;
    const model::Plan plan = layout_plan(o, w, platform);
    // Values each stage's data group moves in all, counting a ring all-reduce of N bytes as
    // 2 N (reduce-scatter + all-gather) and the ZeRO-3 all-gather's transfers as they are.
    std::vector<double> moved(2, 0.0);
    for (auto v : plan.op_ids()) {
      const model::Op& op = plan.op(v);
      const bool data = op.label.find("gradient all-reduce") != std::string::npos ||
                        op.label.find("ZeRO-3") != std::string::npos;
      if (!data) continue;
      const int stage = op.label.find("stage 0") == 0 ? 0 : 1;
      if (op.kind == model::OpKind::Collective) moved[static_cast<size_t>(stage)] += 2 * op.bytes;
      if (op.kind == model::OpKind::Transfer)
        moved[static_cast<size_t>(stage)] += op.bytes / 3;  // d - 1 = 3 steps of N / d each
    }
    for (int r = 0; r < 2; ++r) {
      INFO("ZeRO " << zero << " stage " << r);
      const double psi = model::stage_parameters(*w.transformer, o.layout, r);
      CHECK(moved[static_cast<size_t>(r)] ==
            Approx(model::data_parallel_values(psi, zero) * 4).epsilon(1e-12));
    }
  }
}

TEST_CASE(
    "layout plans: the pipeline bubble is (p - 1)/(m + p - 1) of the step with uniform "
    "stages and free sends, GPipe and 1F1B, in both engines") {
  const std::vector<model::StrategyOptions> cases = pipeline_cases();
  // Free sends: the step is the schedule's compute alone.
  const auto rows = both_engines(cases, free_sends);
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const double speed = platform.hosts[static_cast<size_t>(platform.worker_hosts()[0])].speed_flops;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& o = cases[i];
    const int m = o.layout.micro_batches, p = o.layout.pipeline;
    const model::StageWork work = model::stage_work(free_sends(), o.layout, o.batch, 0);
    const double pass = (work.forward_flop + work.backward_flop) / speed;  // f + b
    const double ideal = m * pass;
    INFO(rows[i].dump() << " m " << m << " p " << p);
    const double round = rows[i]["analytic"].get<double>();
    CHECK(round == Approx((m + p - 1) * pass).epsilon(1e-9));
    CHECK((round - ideal) / round == Approx(model::pipeline_bubble_fraction(p, m)).epsilon(1e-9));
    CHECK(rows[i]["simgrid"].get<double>() == Approx(round).epsilon(1e-9));
  }
}

TEST_CASE(
    "layout plans: GPipe's sends add 2 (p - 1) of them to the step, 1F1B's steady state "
    "waits on its neighbours' sends too") {
  const std::vector<model::StrategyOptions> cases = pipeline_cases();
  const auto rows = both_engines(cases, uniform_transformer);
  // Every GPU of two_nodes.xml has one speed and every route one latency and bandwidth: a
  // stage's neighbour is reached like stage 0's.
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const std::vector<int> gpus = platform.worker_hosts();
  const double speed = platform.hosts[static_cast<size_t>(gpus[0])].speed_flops;
  const model::Route& route = platform.route(gpus[0], gpus[1]);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& o = cases[i];
    const int m = o.layout.micro_batches, p = o.layout.pipeline;
    const model::StageWork work = model::stage_work(uniform_transformer(), o.layout, o.batch, 0);
    const double pass = (work.forward_flop + work.backward_flop) / speed;
    const double send =
        route.latency_s + 8.0 / m * 512 * 1024 * 4 / route.bandwidth_Bps;  // b s h e
    REQUIRE(send < pass / 2);  // the premise: a send is shorter than a pass
    const double fill_and_drain = (m + p - 1) * pass + 2 * (p - 1) * send;
    const double round = rows[i]["analytic"].get<double>();
    INFO(rows[i].dump() << " m " << m << " p " << p);
    if (o.layout.schedule == model::PipelineSchedule::GPipe)
      CHECK(round == Approx(fill_and_drain).epsilon(1e-9));
    else
      CHECK(round >= fill_and_drain * (1 - 1e-12));
    // The closed form charges every slot its sends (blocking point-to-point, as Megatron's
    // schedule runs them): an upper bound of the Plan's.
    CHECK(round <= rows[i]["pipeline_s"].get<double>() * (1 + 1e-12));
    // SimGrid: a 1F1B stage may send forward and backward at once from one host, sharing its
    // up-link for the microseconds the messages take.
    CHECK(rows[i]["simgrid"].get<double>() == Approx(round).epsilon(1e-4));
  }
}

TEST_CASE(
    "layout plans: interleaved 1F1B takes (m + (p - 1)/v) passes with uniform chunks and free "
    "sends, in both engines, with sends, at most the closed form") {
  std::vector<model::StrategyOptions> cases;
  for (const auto& [p, v, m] :
       std::vector<std::array<int, 3>>{{2, 2, 4}, {2, 4, 4}, {4, 2, 4}, {4, 2, 8}, {2, 2, 8}}) {
    cases.push_back(layout_options(1, 1, p, m, 8));
    cases.back().layout.virtual_stages = v;
  }
  const auto rows = both_engines(cases, free_sends);
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const double speed = platform.hosts[static_cast<size_t>(platform.worker_hosts()[0])].speed_flops;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& l = cases[i].layout;
    const model::StageWork work = model::stage_work(free_sends(), l, cases[i].batch, 0);
    const double pass = (work.forward_flop + work.backward_flop) / speed;  // a stage's v chunks
    INFO(rows[i].dump() << " p " << l.pipeline << " v " << l.virtual_stages << " m "
                        << l.micro_batches);
    const double round = rows[i]["analytic"].get<double>();
    CHECK(round ==
          Approx((l.micro_batches + (l.pipeline - 1.0) / l.virtual_stages) * pass).epsilon(1e-9));
    CHECK(rows[i]["simgrid"].get<double>() == Approx(round).epsilon(1e-9));
    // The closed form charges each slot its 2 v sends even when they carry no bytes: a route's
    // latency each (an identity of layout_cost.cpp's slot). The Plan sends nothing there.
    const model::Route& route =
        platform.route(platform.worker_hosts()[0], platform.worker_hosts()[1]);
    const double slots = l.micro_batches + (l.pipeline - 1.0) / l.virtual_stages;
    CHECK(rows[i]["closed_form"].get<double>() ==
          Approx(slots * (pass + 2.0 * l.virtual_stages * route.latency_s)).epsilon(1e-9));
  }
  // With real sends (2 v per micro-batch slot), the Plan overlaps them with other chunks'
  // compute: at most the closed form, which charges every slot its sends.
  const auto with_sends = both_engines(cases, uniform_transformer);
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(with_sends[i].dump());
    const double round = with_sends[i]["analytic"].get<double>();
    CHECK(round > rows[i]["analytic"].get<double>());
    CHECK(round <= with_sends[i]["pipeline_s"].get<double>() * (1 + 1e-12));
    CHECK(with_sends[i]["simgrid"].get<double>() == Approx(round).epsilon(1e-3));
  }
}

TEST_CASE("layout plans: a layout of size 1 in every dimension is single") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
    const model::Workload w = model::load_workload("gpt2-small");
    auto o = layout_options(1, 1, 1, 1, 4);
    const model::Plan layout = layout_plan(o, w, platform);
    const model::Plan single = model::make_plan("single", o, w, platform, model::FixedCounts(1));
    const nlohmann::json out = {
        {"layout_analytic", model::analyze(layout, platform).round_s},
        {"single_analytic", model::analyze(single, platform).round_s},
        {"layout_simgrid", sim::simulate(layout, platform, sim::SimOptions{}).round_s},
        {"single_simgrid", sim::simulate(single, platform, sim::SimOptions{}).round_s}};
    return out.dump();
  });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto j = result.json();
  CHECK(j["layout_analytic"].get<double>() ==
        Approx(j["single_analytic"].get<double>()).epsilon(1e-12));
  CHECK(j["layout_simgrid"].get<double>() ==
        Approx(j["single_simgrid"].get<double>()).epsilon(1e-9));
}

TEST_CASE("layout plans: bad layouts and workloads are one InputError naming the key") {
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const model::Workload gpt2 = model::load_workload("gpt2-small");
  auto expect = [&](const model::StrategyOptions& o, const model::Workload& w,
                    const std::string& key) { expect_input_error(o, w, platform, key); };
  auto interleaved = layout_options(1, 1, 2, 4, 8);
  interleaved.layout.virtual_stages = 5;  // 12 layers in 10 chunks
  expect(interleaved, gpt2, "virtual_stages");
  expect(layout_options(1, 5, 1, 1, 8), gpt2, "tensor_parallel");     // 12 heads over 5
  expect(layout_options(1, 1, 13, 1, 8), gpt2, "pipeline_parallel");  // 13 stages, 12 layers
  expect(layout_options(2, 1, 1, 3, 8), gpt2, "micro_batches");       // 4 sequences in 3
  auto mismatch = layout_options(2, 2, 1, 1, 8);
  mismatch.workers = 8;
  expect(mismatch, gpt2, "data_parallel");
  expect(layout_options(2, 1, 1, 1, 8), test::round_workload(), "workload");
  // A Plan too large to hold: 1e7 micro-batches of one sequence (about 1.2e8 ops).
  expect(layout_options(1, 1, 1, 10000000, 1e7), gpt2, "micro_batches");
  auto what_if = layout_options(2, 1, 1, 1, 8);
  what_if.comm_s = 0.1;
  expect(what_if, gpt2, "comm_s");
}

namespace {

/// A 4-layer MLP 784-256-128-64-10 (two tensor pairs), fp32, no optimizer flop.
model::Workload four_layer_mlp() {
  return model::parse_workload_yaml(
      "name: mlp4\nparameters: 242762\nflop_per_sample: 1453824\nwidths: [784, 256, 128, 64, 10]\n",
      "<test>");
}

}  // namespace

TEST_CASE(
    "layout plans of an MLP: one all-reduce per split pair forward (its output) and backward "
    "(its input, unless the pair starts the network), as exec/tensor_parallel.hpp runs them") {
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const model::Workload w = four_layer_mlp();
  // t = 2, p = 1, m = 2 of a batch of 8: pairs (0, 1) and (2, 3).
  const model::Plan plan = layout_plan(layout_options(1, 2, 1, 2, 8), w, platform);
  std::multiset<double> forward, backward;
  for (auto v : plan.op_ids()) {
    const model::Op& op = plan.op(v);
    if (op.kind != model::OpKind::Collective) continue;
    CHECK(op.group.size() == 2);
    CHECK(op.repeat == 1);
    (op.label.find("forward") != std::string::npos ? forward : backward).insert(op.bytes);
  }
  // Per micro-batch of 4 samples, fp32: forward 4 x 128 and 4 x 10 values; backward only the
  // second pair's input, 4 x 128 (the first pair's input is the data: no gradient needed).
  CHECK(forward == std::multiset<double>{2048, 2048, 160, 160});
  CHECK(backward == std::multiset<double>{2048, 2048});
  // p = 2 puts two layers on each stage: each stage one pair; stage 1's backward all-reduces.
  const model::Plan piped = layout_plan(layout_options(1, 2, 2, 2, 8), w, platform);
  CHECK(piped.count(model::OpKind::Collective) == 2 * (1 + 2));  // m x (stage 0 fwd, stage 1 both)
  // Whole-width sends, one per tensor rank and micro-batch each way: 4 x 128 x 4 bytes.
  long long sends = 0;
  for (auto v : piped.op_ids()) {
    const model::Op& op = piped.op(v);
    if (op.kind != model::OpKind::Transfer) continue;
    CHECK(op.bytes == 4.0 * 128 * 4);
    ++sends;
  }
  CHECK(sends == 2 * 2 * 2);  // ranks x micro-batches x directions
}

TEST_CASE(
    "layout plans of an MLP: analytic and SimGrid rounds equal the closed form of its passes "
    "and all-reduces (t = 2, d = 2 across nodes), and size 1 everywhere is single") {
  const auto result = test::in_child([] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
    model::Workload w = four_layer_mlp();
    w.update_flop_per_parameter = 2;
    auto o = layout_options(2, 2, 1, 2, 16);
    const model::Plan plan = layout_plan(o, w, platform);
    auto one = layout_options(1, 1, 1, 1, 16);
    const model::Plan whole = layout_plan(one, w, platform);
    const model::Plan single = model::make_plan("single", one, w, platform, model::FixedCounts(1));
    const nlohmann::json out = {
        {"analytic", model::analyze(plan, platform).round_s},
        {"simgrid", sim::simulate(plan, platform, sim::SimOptions{}).round_s},
        {"whole", model::analyze(whole, platform).round_s},
        {"single", model::analyze(single, platform).round_s}};
    return out.dump();
  });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto j = result.json();
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const std::vector<int> gpus = platform.worker_hosts();
  const double speed = platform.hosts[static_cast<size_t>(gpus[0])].speed_flops;
  // Placement: tensor first, so ranks 0-1 (replica 0) and 2-3 (replica 1); the fixture's routes
  // all have one latency and bandwidth, so every ring costs the same per hop.
  const model::Route& route = platform.route(gpus[0], gpus[1]);
  auto allreduce = [&](double bytes, int n) {  // ring: 2 (n - 1) steps of bytes / n
    return 2 * (n - 1) * (route.latency_s + bytes / n / route.bandwidth_Bps);
  };
  const double n = 4;  // samples per micro-batch: 16 / (d 2 x m 2)
  // Per micro-batch and rank: forward 2 n i o / 2 per layer, backward 4 n i o / 2 (2 for layer 0),
  // scaled so that the whole network's count is the workload's 6 sum i o per sample.
  const double scale = 1453824.0 / (1453824.0 - 2 * 784 * 256);
  const double forward = scale * (2 * n * (784 * 256 + 256 * 128 + 128 * 64 + 64 * 10)) / 2 / speed;
  const double backward =
      scale * (2 * n * 784 * 256 + 4 * n * (256 * 128 + 128 * 64 + 64 * 10)) / 2 / speed;
  const double pass = forward + allreduce(n * 128 * 4, 2) + allreduce(n * 10 * 4, 2) + backward +
                      allreduce(n * 128 * 4, 2);
  // Each rank's shard: pair (0, 1): (784 x 256 + 256) / 2 + 256 x 128 / 2 + 128; pair (2, 3) alike.
  const double shard =
      (784.0 * 256 + 256) / 2 + 256.0 * 128 / 2 + 128 + (128.0 * 64 + 64) / 2 + 64.0 * 10 / 2 + 10;
  const double round = 2 * pass + allreduce(shard * 4, 2) + shard * 2 / speed;
  CHECK(j["analytic"].get<double>() == Approx(round).epsilon(1e-9));
  CHECK(j["simgrid"].get<double>() == Approx(j["analytic"].get<double>()).epsilon(1e-6));
  CHECK(j["whole"].get<double>() == Approx(j["single"].get<double>()).epsilon(1e-12));
}

TEST_CASE("layout plans of an MLP: bad layouts are one InputError naming the key") {
  const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
  const model::Workload w = model::load_workload("fashion-mlp");  // 784-256-128-10
  REQUIRE(w.mlp_widths == std::vector<int>{784, 256, 128, 10});
  auto expect = [&](const model::StrategyOptions& o, const std::string& key) {
    expect_input_error(o, w, platform, key);
  };
  expect(layout_options(1, 1, 4, 1, 8), "pipeline_parallel");  // 4 stages, 3 layers
  expect(layout_options(1, 3, 1, 1, 9), "tensor_parallel");    // 256 outputs over 3
  expect(layout_options(2, 1, 1, 3, 8), "micro_batches");      // 4 samples in 3
  auto recompute = layout_options(1, 2, 1, 1, 8);
  recompute.layout.recompute = model::Recompute::Full;
  expect(recompute, "recompute");
  // A 3-layer MLP at t = 3 whose stage 1 holds the output layer alone (replicated): only the
  // first stage's pair is split, so 3 must divide 256 there.
  expect(layout_options(1, 3, 2, 1, 8), "tensor_parallel");
}

TEST_CASE(
    "layout plans: the step overhead is paid once a step, on the update, whatever the "
    "micro-batches and stages, in both engines and the closed form") {
  // A calibrated C(b)'s intercept holds the update, which exec's layout trainer does once a
  // step; charged per micro-batch (as before 2026-12-01) it came (m + p - 1) times into a
  // pipeline's round.
  const double overhead = 1e-3;
  const auto result = test::in_child([&] {
    const auto platform = sim::load_platform(test::fixture("two_nodes.xml"));
    const model::Workload w = gpt2_with_optimizer_step();
    nlohmann::json out = nlohmann::json::array();
    for (int p : {1, 2})
      for (int m : {1, 4}) {
        nlohmann::json row = {{"p", p}, {"m", m}};
        for (double fixed : {0.0, overhead}) {
          model::StrategyOptions o = layout_options(1, 2, p, m, 8);
          o.step_overhead_s = fixed;
          const model::Plan plan = layout_plan(o, w, platform);
          const std::string at = fixed > 0 ? "with" : "without";
          row[at]["analytic"] = model::analyze(plan, platform).round_s;
          row[at]["simgrid"] = sim::simulate(plan, platform, sim::SimOptions{}).round_s;
          row[at]["closed_form"] =
              model::layout_time(w, o.layout, o.batch, platform,
                                 model::place_mesh(o.layout, platform, {}, "<test>"),
                                 model::LayoutTimeOptions{fixed})
                  .iteration_s;
        }
        out.push_back(row);
      }
    return out.dump();
  });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  for (const auto& row : result.json()) {
    INFO(row.dump());
    for (const char* engine : {"analytic", "simgrid", "closed_form"}) {
      INFO(engine);
      const double added = row["with"][engine].get<double>() - row["without"][engine].get<double>();
      CHECK(added == Approx(overhead).epsilon(1e-6));
    }
  }
}

TEST_CASE(
    "layout plans: a host's pass_overhead_s is paid on every micro-batch's pass, in both "
    "engines, in the rank's share of the parameters") {
  // The prop a calibration of steps of several passes writes (of a pass of the whole model): m
  // passes a step on each rank of a one-stage layout, so m times the cost a round for data
  // parallelism (every rank holds every parameter), and less for tensor parallelism (a rank holds
  // about half: the embeddings and norms whole, the rest split).
  const double pass = 2e-4;
  const auto result = test::in_child([&] {
    model::Platform platform = sim::load_platform(test::fixture("two_nodes.xml"));
    const model::Workload w = gpt2_with_optimizer_step();
    nlohmann::json out = nlohmann::json::array();
    for (int t : {1, 2})
      for (int m : {1, 4}) {
        nlohmann::json row = {{"t", t}, {"m", m}};
        for (double fixed : {0.0, pass}) {
          for (model::Host& h : platform.hosts)
            h.properties["pass_overhead_s"] = fmt::format("{}", fixed);
          const model::Plan plan = layout_plan(layout_options(2 / t, t, 1, m, 8), w, platform);
          const std::string at = fixed > 0 ? "with" : "without";
          row[at]["analytic"] = model::analyze(plan, platform).round_s;
          row[at]["simgrid"] = sim::simulate(plan, platform, sim::SimOptions{}).round_s;
        }
        out.push_back(row);
      }
    platform.hosts[0].properties["pass_overhead_s"] = "-1";
    try {
      layout_plan(layout_options(2, 1, 1, 1, 8), w, platform);
      out.push_back("accepted");
    } catch (const InputError& e) {
      out.push_back(e.what());
    }
    return out.dump();
  });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto v = result.json();
  for (size_t i = 0; i < 4; ++i) {
    const auto& row = v[i];
    INFO(row.dump());
    const double whole = row["m"].get<int>() * pass;
    for (const char* engine : {"analytic", "simgrid"}) {
      INFO(engine);
      const double added = row["with"][engine].get<double>() - row["without"][engine].get<double>();
      if (row["t"] == 1) {
        CHECK(added == Approx(whole).epsilon(1e-6));
      } else {
        CHECK(added > 0.3 * whole);
        CHECK(added < 0.8 * whole);
      }
    }
  }
  CHECK(v[4].get<std::string>().find("pass_overhead_s") != std::string::npos);
}
