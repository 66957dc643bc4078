// layout_program_test.cpp: exec's layout trainer takes its schedule from the Plan
// (exec/layout_program.hpp). Each rank's program, read out of strategy mesh's Plan, is checked
// against closed forms written here: its stage's passes in the schedule's order (GPipe: every
// forward, then every backward; 1F1B: min(p - r - 1, m) warm-up forwards, then one forward and
// one backward in turn, then the remaining backwards), its neighbours and groups in exec's rank
// order (tensor, data, pipeline), the tensor all-reduces of each pass (one per split pair of
// layers forward; backward, one fewer on the stage that starts the network), one reduction over
// the data group and one update. A Plan exec cannot run is refused naming the op, a Plan of
// another layout is refused on every rank before any message (one with as many workers
// included), and a Plan whose order differs from the options' runs in its own order, to the same
// gradients.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <utility>
#include <vector>

#include "exec/layout_program.hpp"
#include "exec/pipeline_parallel.hpp"
#include "model/convergence/convergence.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/layout.hpp"
#include "model/ir/strategy.hpp"
#include "tests/exec/exec_support.hpp"

using namespace tauplan;
using Catch::Matchers::Contains;
using model::PipelineSchedule;

namespace {

exec::ModelParallelOptions mesh(int d, int t, int p, int m, PipelineSchedule schedule,
                                long long batch = 32) {
  exec::ModelParallelOptions o;
  o.shape.widths = {784, 256, 128, 10};  // fashion-mlp
  o.data = d, o.tensor = t, o.pipeline = p, o.micro_batches = m;
  o.schedule = schedule;
  o.batch = batch;
  return o;
}

/// (forward?, micro-batch) of stage r, written out from the schedules' definitions.
std::vector<std::pair<bool, int>> expected_passes(PipelineSchedule schedule, int p, int r, int m) {
  std::vector<std::pair<bool, int>> passes;
  const int warmup = schedule == PipelineSchedule::GPipe ? m : std::min(p - r - 1, m);
  int forwards = 0, backwards = 0;
  for (; forwards < warmup; ++forwards)
    passes.emplace_back(true, forwards);
  for (; forwards < m; ++forwards, ++backwards) {
    passes.emplace_back(true, forwards);
    passes.emplace_back(false, backwards);
  }
  for (; backwards < m; ++backwards)
    passes.emplace_back(false, backwards);
  return passes;
}

/// Split pairs of a stage's layers [first, end) (consecutive layers paired, columns then rows;
/// an odd one left whole).
long long pairs(int first, int end) {
  return (end - first) / 2;
}

}  // namespace

TEST_CASE("each rank's program is its stage's schedule, neighbours and groups (closed forms)") {
  const struct {
    int d, t, p;
  } meshes[] = {{1, 1, 2}, {1, 1, 3}, {2, 1, 2}, {1, 2, 2}, {2, 2, 1}, {2, 2, 3}, {1, 4, 1}};
  for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB})
    for (const auto& shape : meshes)
      for (int m : {1, 2, 3, 4}) {
        const exec::ModelParallelOptions o = mesh(shape.d, shape.t, shape.p, m, schedule, 48);
        INFO(o.label());
        const model::Plan plan = exec::mlp_layout_plan(o);
        const int d = o.data, t = o.tensor, p = o.pipeline;
        const std::vector<int> layers = model::stage_layers(o.shape.layers(), p);
        for (int w = 0; w < o.workers(); ++w) {
          INFO("worker " << w);
          const exec::RankProgram program = exec::rank_program(plan, w);
          const int k = w % t, di = (w / t) % d, r = w / (t * d);
          int first = 0;
          for (int q = 0; q < r; ++q)
            first += layers[static_cast<std::size_t>(q)];
          const int end = first + layers[static_cast<std::size_t>(r)];
          CHECK(program.stage == r);
          CHECK(program.updates == 1);
          std::vector<std::pair<bool, int>> order;
          for (const exec::ProgramPass& pass : program.passes)
            order.emplace_back(pass.forward, pass.micro_batch);
          CHECK(order == expected_passes(schedule, p, r, m));
          // The transformer block's trainer orders its passes with this function.
          CHECK(order == exec::pipeline_schedule_ops(schedule, p, r, m));
          std::vector<int> tensor_group;
          for (int i = 0; i < t; ++i)
            tensor_group.push_back(w - k + i);
          for (const exec::ProgramPass& pass : program.passes) {
            const int from = pass.forward ? r - 1 : r + 1, to = pass.forward ? r + 1 : r - 1;
            const bool has_from = from >= 0 && from < p, has_to = to >= 0 && to < p;
            CHECK(pass.receive_from == (has_from ? k + t * (di + d * from) : -1));
            CHECK(pass.send_to ==
                  (has_to ? std::vector<int>{k + t * (di + d * to)} : std::vector<int>{}));
            const long long split_pairs = t > 1 ? pairs(first, end) : 0;
            const bool starts_network = r == 0 && split_pairs > 0;
            CHECK(pass.tensor_allreduces ==
                  (pass.forward ? split_pairs : split_pairs - (starts_network ? 1 : 0)));
            if (pass.tensor_allreduces > 0) CHECK(pass.tensor_group == tensor_group);
          }
          std::vector<std::vector<int>> reductions;
          if (d > 1) {
            reductions.emplace_back();
            for (int i = 0; i < d; ++i)
              reductions.back().push_back(k + t * (i + d * r));
          }
          CHECK(program.reductions == reductions);
        }
      }
}

TEST_CASE("a Plan exec's layout trainer cannot run is refused, naming the op") {
  // ZeRO-3 gathers the parameters with transfers no pass sends.
  exec::ModelParallelOptions o = mesh(2, 1, 1, 1, PipelineSchedule::OneFOneB);
  model::StrategyOptions zero;
  zero.file = "<test>";
  zero.workers = 2;
  zero.batch = 32;
  zero.check_memory = false;
  zero.layout.data = 2;
  zero.layout.zero_stage = 3;
  model::Workload mlp;
  mlp.name = "fashion-mlp";
  mlp.mlp_widths = o.shape.widths;
  mlp.parameters = static_cast<double>(o.shape.parameters());
  mlp.flop_per_sample = 6.0 * (784 * 256 + 256 * 128 + 128 * 10);
  const model::Platform platform =
      model::make_crossbar_platform(std::vector<double>(2, 1e9), 1e9, 1e-6);
  const model::Plan zero3 = model::make_plan("mesh", zero, mlp, platform, model::FixedCounts(1));
  CHECK_THROWS_WITH(exec::rank_program(zero3, 0),
                    Contains("all-gather") && Contains("a transfer that no pass sends"));
  // Data parallelism's Plan has computes that are no layout pass.
  const model::Plan sync = test::make_plan("sync", 2, 16);
  CHECK_THROWS_WITH(exec::rank_program(sync, 0), Contains("a compute op that is no layout pass"));
}

TEST_CASE("a Plan of another layout is refused on every rank before any message") {
  exec::ModelParallelOptions o = mesh(1, 1, 2, 2, PipelineSchedule::OneFOneB);
  const model::Plan one_worker = exec::mlp_layout_plan(mesh(1, 1, 1, 2, PipelineSchedule::GPipe));
  o.plan = &one_worker;
  const test::PixelBatch batch = test::pixel_batch();
  std::vector<float> parameters(o.shape.parameters());
  exec::init_parameters(o.shape, 3, parameters.data());
  CHECK_THROWS_WITH(exec::step_gradients_threads(o, parameters, batch.x.data(), batch.y.data()),
                    Contains("the Plan is for 1 workers"));
  // The same four workers, neighbours and senders as d2 t1 p2's, but stage 0's pair of layers is
  // split (one tensor all-reduce forward) and the data group is one rank: every rank refuses.
  exec::ModelParallelOptions tensor = mesh(1, 2, 2, 2, PipelineSchedule::OneFOneB);
  const model::Plan data_plan = exec::mlp_layout_plan(mesh(2, 1, 2, 2, PipelineSchedule::OneFOneB));
  tensor.plan = &data_plan;
  CHECK_THROWS_WITH(
      exec::step_gradients_threads(tensor, parameters, batch.x.data(), batch.y.data()),
      Contains("charged 0 tensor all-reduces, where the shard runs 1"));
}

TEST_CASE("a step runs the Plan's order, not the options' schedule") {
  // The options say 1F1B; the Plan is GPipe's. Every stage runs all its forwards first (stage 0
  // of p = 2 would otherwise interleave), and the gradients are those of the options' own Plan.
  exec::ModelParallelOptions own = mesh(1, 1, 2, 4, PipelineSchedule::OneFOneB);
  exec::ModelParallelOptions other = own;
  const model::Plan gpipe = exec::mlp_layout_plan(mesh(1, 1, 2, 4, PipelineSchedule::GPipe));
  other.plan = &gpipe;
  CHECK(exec::rank_program(gpipe, 0).passes[2].forward);
  CHECK_FALSE(exec::rank_program(exec::mlp_layout_plan(own), 0).passes[2].forward);
  const test::PixelBatch batch = test::pixel_batch();
  std::vector<float> parameters(own.shape.parameters());
  exec::init_parameters(own.shape, 3, parameters.data());
  const exec::StepGradients a =
      exec::step_gradients_threads(own, parameters, batch.x.data(), batch.y.data());
  const exec::StepGradients b =
      exec::step_gradients_threads(other, parameters, batch.x.data(), batch.y.data());
  CHECK(b.loss == Approx(a.loss).epsilon(1e-6));
  REQUIRE(a.gradients.size() == b.gradients.size());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.gradients.size(); ++i) {
    const double delta = static_cast<double>(a.gradients[i]) - static_cast<double>(b.gradients[i]);
    diff += delta * delta;
    norm += static_cast<double>(a.gradients[i]) * static_cast<double>(a.gradients[i]);
  }
  CHECK(diff <= 1e-12 * norm);
  CHECK(b.messages == a.messages);
  // Rank 0 (stage 0) ran each Plan's order.
  CHECK(a.passes == expected_passes(PipelineSchedule::OneFOneB, 2, 0, 4));
  CHECK(b.passes == expected_passes(PipelineSchedule::GPipe, 2, 0, 4));
  CHECK(a.passes != b.passes);
}
