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
// gradients. The same for exec's decoder block (exec/transformer_trainer.hpp): its programs'
// sliced sends, the receivers' ring all-gathers and Megatron's tensor all-reduces per pass as
// closed forms, each rank's counted all-reduces and sends per step equal to its Plan's, a Plan
// of another layout refused before any rank starts, and GPipe's order run under 1F1B options.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "exec/layout_program.hpp"
#include "exec/peer_group.hpp"
#include "exec/pipeline_parallel.hpp"
#include "exec/transformer_reference.hpp"
#include "exec/transformer_trainer.hpp"
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

struct Mesh {
  int d, t, p;
};

/// Worker w's program in rank order (tensor, data, pipeline) on `mesh`: its stage's passes in
/// the schedule's order, each receiving from and sending to the same tensor and data index of
/// the neighbouring stages, one update, and its reductions: over the `kv_share` consecutive
/// tensor ranks that share its K/V head (when more than one), then over its data group.
void check_place(const exec::RankProgram& program, int w, Mesh mesh, int m,
                 PipelineSchedule schedule, int kv_share = 1) {
  const int d = mesh.d, t = mesh.t, p = mesh.p;
  const int k = w % t, di = (w / t) % d, r = w / (t * d);
  CHECK(program.stage == r);
  CHECK(program.updates == 1);
  std::vector<std::pair<bool, int>> order;
  for (const exec::ProgramPass& pass : program.passes) {
    order.emplace_back(pass.forward, pass.micro_batch);
    const int from = pass.forward ? r - 1 : r + 1, to = pass.forward ? r + 1 : r - 1;
    const bool has_from = from >= 0 && from < p, has_to = to >= 0 && to < p;
    CHECK(pass.receive_from == (has_from ? k + t * (di + d * from) : -1));
    CHECK(pass.send_to == (has_to ? std::vector<int>{k + t * (di + d * to)} : std::vector<int>{}));
  }
  CHECK(order == expected_passes(schedule, p, r, m));
  std::vector<std::vector<int>> reductions;
  if (kv_share > 1) {
    reductions.emplace_back();
    for (int i = k / kv_share * kv_share; i < (k / kv_share + 1) * kv_share; ++i)
      reductions.back().push_back(w - k + i);
  }
  if (d > 1) {
    reductions.emplace_back();
    for (int i = 0; i < d; ++i)
      reductions.back().push_back(k + t * (i + d * r));
  }
  CHECK(program.reductions == reductions);
}

/// exec's decoder block of 3 layers (2 stages split them 2 + 1), 4 heads sharing 2 K/V heads.
exec::TransformerTrainOptions block_mesh(int d, int t, int p, int m, PipelineSchedule schedule) {
  exec::TransformerTrainOptions o;
  o.block = test::small_block();
  o.data = d, o.tensor = t, o.pipeline = p, o.micro_batches = m;
  o.schedule = schedule;
  o.batch = 12;
  o.seed = 7;
  o.steps = 1;
  return o;
}

/// sum (a_i - b_i)^2; REQUIREs equal sizes.
double squared_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double delta = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    sum += delta * delta;
  }
  return sum;
}

double squared_norm(const std::vector<float>& a) {
  return squared_difference(a, std::vector<float>(a.size(), 0.0f));
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
          const int k = w % t, r = w / (t * d);
          int first = 0;
          for (int q = 0; q < r; ++q)
            first += layers[static_cast<std::size_t>(q)];
          const int end = first + layers[static_cast<std::size_t>(r)];
          check_place(program, w, {d, t, p}, m, schedule);
          std::vector<int> tensor_group;
          for (int i = 0; i < t; ++i)
            tensor_group.push_back(w - k + i);
          for (const exec::ProgramPass& pass : program.passes) {
            const long long split_pairs = t > 1 ? pairs(first, end) : 0;
            const bool starts_network = r == 0 && split_pairs > 0;
            CHECK(pass.tensor_allreduces ==
                  (pass.forward ? split_pairs : split_pairs - (starts_network ? 1 : 0)));
            if (pass.tensor_allreduces > 0) CHECK(pass.tensor_group == tensor_group);
          }
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
      Contains("gradient reductions are over other groups"));
  // A transformer's Plan of the same layout: its sends are slices the receivers all-gather.
  const model::Plan block_plan =
      exec::transformer_layout_plan(block_mesh(1, 2, 2, 2, PipelineSchedule::OneFOneB));
  tensor.plan = &block_plan;
  CHECK_THROWS_WITH(
      exec::step_gradients_threads(tensor, parameters, batch.x.data(), batch.y.data()),
      Contains("cannot run the Plan"));
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
  CHECK(squared_difference(a.gradients, b.gradients) <= 1e-12 * squared_norm(a.gradients));
  CHECK(b.messages == a.messages);
  // Rank 0 (stage 0) ran each Plan's order.
  CHECK(a.passes == expected_passes(PipelineSchedule::OneFOneB, 2, 0, 4));
  CHECK(b.passes == expected_passes(PipelineSchedule::GPipe, 2, 0, 4));
  CHECK(a.passes != b.passes);
}

TEST_CASE(
    "a transformer layout's program: its schedule, 1/t slices sent, the receivers' ring "
    "all-gather, Megatron's tensor all-reduces (closed forms)") {
  const struct {
    int d, t, p;
  } meshes[] = {{1, 2, 2}, {2, 2, 2}, {1, 4, 1}, {1, 1, 3}, {2, 1, 2}, {1, 4, 3}};
  for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB})
    for (const auto& shape : meshes)
      for (int m : {1, 2, 3}) {
        const int d = shape.d, t = shape.t, p = shape.p;
        if (12 % (d * m) != 0) continue;
        const exec::TransformerTrainOptions o = block_mesh(d, t, p, m, schedule);
        INFO(o.label());
        const model::Plan plan = exec::transformer_layout_plan(o);
        // Layers per stage: 3 layers over p stages, the first ones one more.
        const std::vector<int> layers = p == 1   ? std::vector<int>{3}
                                        : p == 2 ? std::vector<int>{2, 1}
                                                 : std::vector<int>{1, 1, 1};
        for (int w = 0; w < d * t * p; ++w) {
          INFO("worker " << w);
          const exec::RankProgram program = exec::rank_program(plan, w);
          const int k = w % t, r = w / (t * d);
          // 2 K/V heads: with 4 tensor ranks, two share each.
          check_place(program, w, {d, t, p}, m, schedule, t > 2 ? t / 2 : 1);
          std::vector<int> tensor_group, ring;
          for (int i = 0; i < t; ++i)
            tensor_group.push_back(w - k + i);
          if (t > 1) ring = {w - k + (k + t - 1) % t, w - k + (k + 1) % t};
          std::sort(ring.begin(), ring.end());
          ring.erase(std::unique(ring.begin(), ring.end()), ring.end());
          const int stage_layers = layers[static_cast<std::size_t>(r)];
          for (const exec::ProgramPass& pass : program.passes) {
            const int from = pass.forward ? r - 1 : r + 1, to = pass.forward ? r + 1 : r - 1;
            const bool has_from = from >= 0 && from < p, has_to = to >= 0 && to < p;
            CHECK(pass.send_slice == (has_to && t > 1));
            CHECK(pass.gather_sends == (has_from && t > 1 ? t - 1 : 0));
            CHECK(pass.gather_peers == (has_from ? ring : std::vector<int>{}));
            // Per layer g (forward) or f (backward) after each sublayer; the embedding's on the
            // first stage forward; the loss's maximum and sums forward and the output
            // projection's input gradient backward on the last.
            const long long expected =
                t == 1 ? 0
                       : 2 * stage_layers + (pass.forward ? (r == 0 ? 1 : 0) + (r == p - 1 ? 2 : 0)
                                                          : (r == p - 1 ? 1 : 0));
            CHECK(pass.tensor_allreduces == expected);
            if (expected > 0) CHECK(pass.tensor_group == tensor_group);
          }
        }
      }
}

TEST_CASE(
    "the transformer trainer runs what its Plan charges: each rank's counted tensor all-reduces "
    "and sends per step are the Plan's") {
  for (const exec::TransformerTrainOptions& o : {block_mesh(1, 2, 2, 2, PipelineSchedule::OneFOneB),
                                                 block_mesh(2, 2, 1, 1, PipelineSchedule::OneFOneB),
                                                 block_mesh(1, 4, 1, 1, PipelineSchedule::OneFOneB),
                                                 block_mesh(1, 2, 3, 3, PipelineSchedule::GPipe)}) {
    INFO(o.label());
    const model::Plan plan = exec::transformer_layout_plan(o);
    const exec::TransformerReport report = exec::train_transformer_threads(o);
    REQUIRE(report.ranks.size() == static_cast<std::size_t>(o.workers()));
    for (const exec::RankTimes& rank : report.ranks) {
      INFO("rank " << rank.rank);
      long long allreduces = 0, sends = 0;
      for (const exec::ProgramPass& pass : exec::rank_program(plan, rank.rank).passes) {
        allreduces += pass.tensor_allreduces;
        sends += static_cast<long long>(pass.send_to.size()) + pass.gather_sends;
      }
      CHECK(rank.tensor_allreduces == allreduces);
      CHECK(rank.messages == sends);
      CHECK(allreduces > 0);
    }
  }
}

TEST_CASE("the transformer trainer's step parts: each rank times what its stage runs") {
  for (const exec::TransformerTrainOptions& o : {block_mesh(1, 1, 1, 1, PipelineSchedule::OneFOneB),
                                                 block_mesh(1, 2, 3, 3, PipelineSchedule::GPipe)}) {
    INFO(o.label());
    const exec::TransformerReport report = exec::train_transformer_threads(o);
    double mean_step = 0;  // the slowest rank's, per step: at least any rank's own
    for (double s : report.step_s)
      mean_step += s / static_cast<double>(report.step_s.size());
    const int last = o.pipeline - 1;
    for (const exec::RankTimes& rank : report.ranks) {
      INFO("rank " << rank.rank << ", stage " << rank.stage);
      CHECK(rank.layers_s > 0);
      CHECK(rank.update_s > 0);
      // The embedding runs on the first stage only, the head and loss on the last only.
      CHECK((rank.stage == 0 ? rank.embedding_s > 0 : rank.embedding_s == 0));
      CHECK((rank.stage == last ? rank.head_s > 0 : rank.head_s == 0));
      // Means over the same steps add up: the parts are at most the step.
      CHECK(rank.embedding_s + rank.layers_s + rank.head_s + rank.update_s <= mean_step);
    }
  }
}

TEST_CASE("the transformer trainer refuses a Plan of another layout before any rank starts") {
  // The same four workers as d2 t1 p2, whose stage sends are whole and whose passes charge no
  // tensor all-reduce: refused naming what differs.
  exec::TransformerTrainOptions tensor = block_mesh(1, 2, 2, 2, PipelineSchedule::OneFOneB);
  const model::Plan data_plan =
      exec::transformer_layout_plan(block_mesh(2, 1, 2, 2, PipelineSchedule::OneFOneB));
  tensor.plan = &data_plan;
  CHECK_THROWS_WITH(exec::train_transformer_threads(tensor),
                    Contains("cannot run the Plan") && Contains("gradient reductions"));
  // An MLP's Plan of the same layout: the same places, but its passes charge the MLP's
  // all-reduces.
  const model::Plan mlp = exec::mlp_layout_plan(mesh(1, 2, 2, 2, PipelineSchedule::OneFOneB));
  tensor.plan = &mlp;
  CHECK_THROWS_WITH(exec::transformer_rank_programs(tensor),
                    Contains("cannot run the Plan") && Contains("tensor all-reduces"));
  // A backward before its forward (a hand-made order) is refused before any rank starts.
  exec::RankProgram swapped = exec::rank_program(data_plan, 0);
  std::swap(swapped.passes.front(), swapped.passes.back());
  CHECK_THROWS_WITH(
      exec::check_place("test", data_plan, swapped, {2, 1, 2, 2, 0}, swapped.reductions),
      Contains("before its forward"));
}

TEST_CASE("the transformer trainer runs its Plan's order: GPipe's Plan under 1F1B options") {
  // Stage 0 of p = 2 then holds all m micro-batches in flight, one block each.
  exec::TransformerTrainOptions own = block_mesh(1, 2, 2, 3, PipelineSchedule::OneFOneB);
  exec::TransformerTrainOptions other = own;
  const model::Plan gpipe =
      exec::transformer_layout_plan(block_mesh(1, 2, 2, 3, PipelineSchedule::GPipe));
  other.plan = &gpipe;
  CHECK(exec::rank_program(gpipe, 0).passes[2].forward);
  CHECK_FALSE(exec::rank_program(exec::transformer_layout_plan(own), 0).passes[2].forward);
  const std::vector<float> parameters = exec::init_block_parameters(own.block, 3);
  const exec::TransformerStepGradients a =
      exec::transformer_step_gradients_threads(own, parameters, 1);
  const exec::TransformerStepGradients b =
      exec::transformer_step_gradients_threads(other, parameters, 1);
  CHECK(b.loss == Approx(a.loss).epsilon(1e-6));
  CHECK(squared_difference(a.gradients, b.gradients) <= 1e-12 * squared_norm(a.gradients));
}

TEST_CASE("ring all-gather: every member ends with every member's slice, g must divide n") {
  exec::ThreadPeerHub hub(3);
  std::vector<std::vector<float>> buffers(3, std::vector<float>(6, -1.0f));
  for (int r = 0; r < 3; ++r)
    for (int e = 0; e < 2; ++e)
      buffers[static_cast<std::size_t>(r)][static_cast<std::size_t>(2 * r + e)] =
          static_cast<float>(10 * r + e);
  const std::vector<int> members = {0, 1, 2};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      exec::ring_allgather(hub.peer(r), members, buffers[static_cast<std::size_t>(r)].data(), 6, 9);
    });
  for (std::thread& thread : threads)
    thread.join();
  for (const std::vector<float>& buffer : buffers)
    CHECK(buffer == std::vector<float>{0, 1, 10, 11, 20, 21});
  std::vector<float> odd(7, 0.0f);
  CHECK_THROWS_WITH(exec::ring_allgather(hub.peer(0), members, odd.data(), 7, 9),
                    Contains("do not split into 3 slices"));
}

TEST_CASE(
    "a transformer rank's data reduction moves what its Plan charges: the stage's parameters, "
    "vocabulary-parallel rows and head columns included") {
  for (const exec::TransformerTrainOptions& o : {block_mesh(2, 2, 2, 2, PipelineSchedule::OneFOneB),
                                                 block_mesh(2, 4, 1, 1, PipelineSchedule::OneFOneB),
                                                 block_mesh(2, 1, 3, 1, PipelineSchedule::GPipe)}) {
    INFO(o.label());
    const model::Plan plan = exec::transformer_layout_plan(o);
    const std::vector<int> layers = model::stage_layers(o.block.layers, o.pipeline);
    for (int w = 0; w < o.workers(); ++w) {
      INFO("worker " << w);
      const int k = w % o.tensor, r = w / (o.tensor * o.data);
      int first = 0;
      for (int q = 0; q < r; ++q)
        first += layers[static_cast<std::size_t>(q)];
      const exec::BlockShard shard(o.block, first, layers[static_cast<std::size_t>(r)], k,
                                   o.tensor);
      double floats = 0;
      for (const auto& range : shard.stage_ranges())
        floats += static_cast<double>(range.second);
      const std::vector<int> data_group = {k + o.tensor * (o.data * r),
                                           k + o.tensor * (1 + o.data * r)};
      int found = 0;
      for (auto v : plan.op_ids()) {
        const model::Op& op = plan.op(v);
        if (op.kind != model::OpKind::Collective || op.group != data_group) continue;
        ++found;
        CHECK(op.bytes == 4 * floats);  // fp32
      }
      CHECK(found == 1);
    }
  }
}
