// layout_cost_test.cpp: a layout's traffic and time equal their closed forms on fixture
// platforms (two nodes of four GPUs; a crossbar), and a layout of size 1 in every dimension
// takes the single-worker time of the analytic engine.
#include <catch2/catch.hpp>

#include <set>

#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"
#include "model/convergence/convergence.hpp"
#include "model/inputs/node_fabric.hpp"
#include "model/ir/layout_cost.hpp"
#include "model/ir/layout_memory.hpp"
#include "model/ir/strategy.hpp"
#include "tests/model/test_support.hpp"

using namespace tauplan;
using test::layout;

namespace {

constexpr double kIntraLatency = 2e-6, kIntraBandwidth = 100e9;  // per route, fixture values
constexpr double kInterLatency = 10e-6, kInterBandwidth = 10e9;
constexpr double kSpeed = 1e14;

/// Two (or more) nodes of four GPUs: 2 us and 100 GB/s inside a node, 10 us and 10 GB/s across.
model::Platform fixture(int nodes = 2) {
  model::NodeFabric fabric;
  fabric.source_file = "<fixture>";
  fabric.gpus_per_node = 4;
  fabric.gpu.speed_flops = kSpeed;
  fabric.intra_node.latency_s = kIntraLatency;
  fabric.intra_node.bandwidth_Bps = kIntraBandwidth;
  fabric.inter_node.latency_s = kInterLatency;
  fabric.inter_node.bandwidth_Bps = kInterBandwidth;
  return model::make_node_fabric_platform(fabric, nodes);
}

/// Ring all-reduce of `bytes` over n ranks whose slowest hop has (alpha, beta).
double ring_allreduce(double bytes, int n, double alpha, double beta) {
  return n < 2 ? 0 : 2.0 * (n - 1) * (alpha + bytes / (n * beta));
}

}  // namespace

TEST_CASE("tensor parallelism: 2 + 2 all-reduces of b s h per layer, 2 (t-1)/t of them per rank") {
  CHECK(model::tensor_allreduces_per_layer(model::Recompute::None) == 4);
  CHECK(model::tensor_allreduces_per_layer(model::Recompute::Selective) == 4);
  CHECK(model::tensor_allreduces_per_layer(model::Recompute::Full) == 6);
  const model::Workload w = model::load_workload("gpt3-175b");  // 2 bytes per value
  const model::Transformer& t = *w.transformer;
  CHECK(model::tensor_allreduce_values(t, 2) == 2.0 * 2048 * 12288);
  CHECK(model::ring_allreduce_bytes_per_rank(800, 8) == 1400);
  CHECK(model::ring_allreduce_bytes_per_rank(800, 1) == 0);

  // Traffic of a step: d2 t4 p2 m4, micro-batch of 2 on 16 workers.
  const model::Layout l = layout(2, 4, 2, 4);
  const model::LayoutTraffic traffic = model::layout_traffic(w, l, 16);
  const double payload = 2.0 * 2048 * 12288 * 2;
  CHECK(traffic.tensor_allreduce_bytes == payload);
  // 48 layers per stage x 4, plus the embedding's (stage 0) or the output's (last), per
  // micro-batch.
  CHECK(traffic.tensor_allreduces == 4 * (48 * 4 + 1));
  CHECK(traffic.tensor_bytes_per_rank == Approx(4 * (48 * 4 + 1) * 2.0 * 3 / 4 * payload));
  CHECK(traffic.pipeline_messages == 2 * 4);
  CHECK(traffic.pipeline_message_bytes == payload);

  // On the fixture, a layer's tensor all-reduces run inside a node: ring time over NVLink-like
  // routes, 4 per layer (6 with full recomputation).
  const model::Platform platform = fixture(4);
  const model::MeshPlacement placement = model::place_mesh(l, platform, {}, "<test>");
  CHECK(model::dimension_span(placement, platform, "tensor") == "inside a node");
  for (auto rc : {model::Recompute::None, model::Recompute::Full}) {
    model::Layout with = l;
    with.recompute = rc;
    const model::StageTime layer = model::layer_time(w, with, 16, platform, placement);
    CHECK(layer.tensor_s == Approx(model::tensor_allreduces_per_layer(rc) *
                                   ring_allreduce(payload, 4, kIntraLatency, kIntraBandwidth)));
    CHECK(layer.compute_s == Approx(t.layer_training_flop(2, rc) / 4 / kSpeed));
    CHECK(layer.elementwise_s == 0);  // the fixture's hosts give no elementwise_passes
  }
}

TEST_CASE("the pipeline bubble is (p - 1)/(m + p - 1) of the step, (p - 1)/v slots interleaved") {
  CHECK(model::pipeline_bubble_fraction(4, 8) == Approx(3.0 / 11));
  CHECK(model::pipeline_bubble_fraction(1, 8) == 0);
  CHECK(model::pipeline_bubble_fraction(8, 64, 3) == Approx((7.0 / 3) / (64 + 7.0 / 3)));
  const model::Workload w = model::load_workload("gpt2-medium");  // 24 layers, fp32
  const model::Platform platform = fixture();
  for (auto schedule : {model::PipelineSchedule::GPipe, model::PipelineSchedule::OneFOneB})
    for (int m : {1, 4, 8}) {
      model::Layout l = layout(1, 1, 4, m);
      l.schedule = schedule;
      const model::LayoutTime time =
          model::layout_time(w, l, 8, platform, model::place_mesh(l, platform, {}, "<t>"));
      INFO("m = " << m);
      CHECK(time.pipeline_s == Approx((m + 3) * time.slot_s));
      CHECK(time.bubble_s / time.pipeline_s == Approx(model::pipeline_bubble_fraction(4, m)));
      // Narayanan eq. 1: (p - 1)/m of the ideal time m (t_f + t_b).
      CHECK(time.bubble_s / (m * time.slot_s) == Approx(3.0 / m));
      // Stages 0-3 sit on one node: each send is one intra-node message of b s h e bytes.
      const double message = model::pipeline_message_values(*w.transformer, 8.0 / m) * 4;
      CHECK(time.pipeline_send_s == Approx(2 * (kIntraLatency + message / kIntraBandwidth)));
    }
  // Across nodes with t = 4: t slices of b s h e / t on the inter-node routes, then an
  // all-gather of the slices inside the receiving node's tensor group.
  const model::Workload gpt3 = model::load_workload("gpt3-175b");
  model::Layout l = layout(1, 4, 2, 8);
  const model::LayoutTime across =
      model::layout_time(gpt3, l, 8, platform, model::place_mesh(l, platform, {}, "<t>"));
  const double message = 2048.0 * 12288 * 2;  // micro-batch of 1
  const double gather = 3 * (kIntraLatency + message / (4 * kIntraBandwidth));
  CHECK(across.pipeline_send_s ==
        Approx(2 * (kInterLatency + message / 4 / kInterBandwidth + gather)));
  // With sequence parallelism the activations arrive split: no all-gather.
  l.sequence_parallel = true;
  const model::LayoutTime split =
      model::layout_time(gpt3, l, 8, platform, model::place_mesh(l, platform, {}, "<t>"));
  CHECK(split.pipeline_send_s == Approx(2 * (kInterLatency + message / 4 / kInterBandwidth)));
  // Interleaving: v messages each way per micro-batch, (p - 1)/v slots of bubble.
  l.sequence_parallel = false;
  l.virtual_stages = 3;
  const model::LayoutTime interleaved =
      model::layout_time(gpt3, l, 8, platform, model::place_mesh(l, platform, {}, "<t>"));
  CHECK(interleaved.pipeline_send_s == Approx(3 * across.pipeline_send_s));
  CHECK(interleaved.bubble_s == Approx(interleaved.slot_s / 3));
}

TEST_CASE("the data dimension moves 2 Psi (ZeRO 0-2) or 3 Psi (ZeRO 3) per step") {
  CHECK(model::data_parallel_values(10, 0) == 20);
  CHECK(model::data_parallel_values(10, 2) == 20);
  CHECK(model::data_parallel_values(10, 3) == 30);
  const model::Workload w = model::load_workload("gpt2-xl");  // fp32 gradients
  const model::Platform platform = fixture();
  for (int zero = 0; zero <= 3; ++zero) {
    model::Layout l = layout(8, 1, 1);  // eight replicas over both nodes
    l.zero_stage = zero;
    const model::MeshPlacement placement = model::place_mesh(l, platform, {}, "<t>");
    CHECK(model::dimension_span(placement, platform, "data") == "across nodes");
    const model::LayoutTraffic traffic = model::layout_traffic(w, l, 8);
    const double psi = w.parameters;
    CHECK(traffic.data_parameters == Approx(psi));
    CHECK(traffic.data_values == (zero == 3 ? 3 : 2) * psi);
    CHECK(traffic.data_bytes_per_rank == Approx(traffic.data_values * 4 * 7 / 8));
    const model::LayoutTime time = model::layout_time(w, l, 8, platform, placement);
    // Four channels (one per GPU of a node, each leaving through its own inter-node link), a
    // quarter of the bytes each; a GPU's inter-node link carries one chunk per step, its
    // intra-node link three at ten times the bandwidth: the crossing decides.
    const double allreduce = ring_allreduce(psi * 4 / 4, 8, kInterLatency, kInterBandwidth);
    CHECK(time.data_s == Approx((zero == 3 ? 1.5 : 1.0) * allreduce));
  }
}

TEST_CASE("placement: tensor ranks fill a node first, then data, then pipeline") {
  const model::Platform platform = fixture(4);
  const model::Layout l = layout(2, 4, 2);
  const model::MeshPlacement placement = model::place_mesh(l, platform, {}, "<t>");
  CHECK(placement.worker(1, 2, 1) == 2 + 4 * (1 + 2 * 1));
  CHECK(model::dimension_span(placement, platform, "tensor") == "inside a node");
  CHECK(model::dimension_span(placement, platform, "data") == "across nodes");
  CHECK(model::dimension_span(placement, platform, "pipeline") == "across nodes");
  CHECK(model::dimension_span(model::place_mesh(layout(8, 1, 1), platform, {}, "<t>"), platform,
                              "tensor") == "-");
  // t = 2, d = 4: a node of 4 holds two replicas, so each data group spans two nodes; with
  // d = 2 a data group is inside one node.
  CHECK(model::dimension_span(model::place_mesh(layout(4, 2, 2), platform, {}, "<t>"), platform,
                              "data") == "across nodes");
  CHECK(model::dimension_span(model::place_mesh(layout(2, 2, 1), fixture(1), {}, "<t>"), fixture(1),
                              "data") == "inside a node");
  CHECK_THROWS_WITH(model::place_mesh(layout(32, 1, 1), platform, {}, "job.yaml"),
                    Catch::Contains("job.yaml: workers: expected at most the 16 worker hosts"));
}

TEST_CASE("placement: rank order tp-pp-dp puts a replica's stages on adjacent ranks") {
  const model::Platform platform = fixture(4);
  model::Layout l = layout(2, 4, 2);
  l.rank_order = model::RankOrder::TensorPipelineData;
  const model::MeshPlacement placement = model::place_mesh(l, platform, {}, "<t>");
  // Worker t_i + t (p_i + p d_i): replica 1's stage 1, tensor rank 2, on node 3.
  CHECK(placement.worker(1, 2, 1) == 2 + 4 * (1 + 2 * 1));
  CHECK(placement.worker(1, 2, 0) == 2 + 4 * (0 + 2 * 1));
  CHECK(placement.worker(0, 2, 1) == 2 + 4 * (1 + 2 * 0));
  // Every worker once.
  std::set<int> workers;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      for (int r = 0; r < 2; ++r)
        workers.insert(placement.worker(i, k, r));
  CHECK(workers.size() == 16);
  CHECK(*workers.rbegin() == 15);
  // A pipeline of replica 0 is nodes n0, n1; a data group is nodes n0, n2 (stride p).
  const std::vector<int> chain = placement.pipeline_chain(0, 0);
  CHECK(platform.hosts[static_cast<size_t>(chain[1])].node == "n1");
  const std::vector<int> data = placement.data_group(0, 0);
  CHECK(platform.hosts[static_cast<size_t>(data[1])].node == "n2");
  CHECK(l.label() == "d2 t4 p2 1f1b tp-pp-dp");
  // The closed form does not see where the groups are beyond node boundaries: on this fabric
  // (every inter-node route alike) both orders take the same time.
  model::Layout default_order = layout(2, 4, 2);
  const model::Workload w = model::load_workload("gpt2-small");
  CHECK(model::layout_time(w, l, 8, platform, placement).iteration_s ==
        Approx(model::layout_time(w, default_order, 8, platform,
                                  model::place_mesh(default_order, platform, {}, "<t>"))
                   .iteration_s)
            .epsilon(1e-12));
}

TEST_CASE("a layout of size 1 in every dimension takes the analytic engine's single time") {
  // Both sum the same terms; this checks the layout evaluator sums them all and only them:
  // step overhead, a step's flop over the host speed, and the update.
  for (const char* name : {"gpt2-small", "bert-large", "llama2-7b"}) {
    INFO(name);
    model::Workload w = model::load_workload(name);
    w.update_flop_per_parameter = 10;
    const double batch = 4;
    const model::Platform platform =
        model::make_crossbar_platform({kSpeed, kSpeed}, kInterBandwidth, kInterLatency);
    model::StrategyOptions options = test::options(1, batch);
    options.step_overhead_s = 1e-3;
    model::FixedCounts convergence(100, -1);
    const model::ResultRow single =
        model::analyze(model::make_plan("single", options, w, platform, convergence), platform);
    model::LayoutTimeOptions time_options;
    time_options.step_overhead_s = options.step_overhead_s;
    const model::Layout one = layout(1, 1, 1);
    const model::LayoutTime time = model::layout_time(
        w, one, batch, platform, model::place_mesh(one, platform, {}, "<t>"), time_options);
    CHECK(time.iteration_s == Approx(single.round_s).epsilon(1e-12));
    CHECK(time.bubble_s == 0);
    CHECK(time.data_s == 0);
  }
}

TEST_CASE("memory-bound element-wise time follows the host's elementwise_passes prop") {
  const model::Workload w = model::load_workload("gpt3-175b");
  model::NodeFabric fabric;
  fabric.source_file = "<fixture>";
  fabric.gpus_per_node = 8;
  fabric.gpu.speed_flops = kSpeed;
  // 8e12 B/s in the GPU catalog, and no compute profile (a profiled GPU, as the A100 is since
  // issue 23, is timed by its profile: no element-wise passes).
  fabric.gpu.gpu_model = "B200-SXM-180GB";
  fabric.gpu.properties["elementwise_passes"] = "2.5";
  fabric.intra_node = {{}, kIntraLatency, kIntraBandwidth};
  fabric.inter_node = {{}, kInterLatency, kInterBandwidth};
  const model::Platform platform = model::make_node_fabric_platform(fabric, 1);
  model::Layout l = layout(1, 8, 1);
  l.recompute = model::Recompute::Full;
  const model::MeshPlacement placement = model::place_mesh(l, platform, {}, "<t>");
  const model::StageTime layer = model::layer_time(w, l, 1, platform, placement);
  const double stored = w.transformer->layer_activation_bytes(1, 8, false, model::Recompute::None);
  CHECK(layer.elementwise_s == Approx(2.5 * stored * 4 / 3 / 8e12));
  fabric.gpu.properties["elementwise_passes"] = "-1";
  const model::Platform bad = model::make_node_fabric_platform(fabric, 1);
  CHECK_THROWS_WITH(model::layer_time(w, l, 1, bad, placement),
                    Catch::Contains("prop elementwise_passes: expected a number >= 0"));
}

TEST_CASE("a node fabric is read off a platform's routes and rebuilt at any size") {
  const model::Platform small = fixture(2);
  const model::NodeFabric fabric = model::node_fabric_of(small);
  CHECK(fabric.gpus_per_node == 4);
  CHECK(fabric.intra_node.latency_s == Approx(kIntraLatency));
  CHECK(fabric.inter_node.bandwidth_Bps == kInterBandwidth);
  const model::Platform large = model::make_node_fabric_platform(fabric, 100);
  CHECK(large.worker_hosts().size() == 400);
  const model::Route& inside = large.route(397, 399);
  const model::Route& across = large.route(3, 398);
  CHECK(inside.latency_s == Approx(small.route(1, 3).latency_s));
  CHECK(inside.bandwidth_Bps == small.route(1, 3).bandwidth_Bps);
  CHECK(across.latency_s == Approx(small.route(3, 6).latency_s));
  CHECK(across.bandwidth_Bps == small.route(3, 6).bandwidth_Bps);
  CHECK(large.hosts[398].node == "n99");
  // One node, or unequal GPUs, cannot describe a fabric.
  CHECK_THROWS_WITH(model::node_fabric_of(fixture(1)),
                    Catch::Contains("node: expected at least two nodes"));
  const model::Platform mixed = model::make_crossbar_platform({1e12, 2e12}, 1e9, 1e-6);
  CHECK_THROWS_WITH(model::node_fabric_of(mixed), Catch::Contains("node: expected identical GPUs"));
}

TEST_CASE(
    "context parallelism: (c-1) K/V blocks forward, 2(c-1) backward per layer, of b s/c "
    "tokens, hidden behind the attention where it can be") {
  CHECK(model::context_messages_per_layer(1, model::Recompute::None) == 0);
  CHECK(model::context_messages_per_layer(4, model::Recompute::None) == 9);
  CHECK(model::context_messages_per_layer(4, model::Recompute::Selective) == 12);
  CHECK(model::context_messages_per_layer(4, model::Recompute::Full) == 12);
  const model::Workload w = model::load_workload("gpt2-small");  // 12 layers, h 768, s 1024, fp32
  const model::Transformer& shape = *w.transformer;
  // b 2, t 2, c 4: 2 x 256 tokens x (K and V: 2 x 768 values) / 2 tensor ranks.
  CHECK(model::context_message_values(shape, 2, 2, 4) == 2.0 * 256 * 768);
  model::Layout l = layout(1, 1, 1);
  l.context = 4;  // the four GPUs of the first node
  const double batch = 2;
  const model::LayoutTraffic traffic = model::layout_traffic(w, l, batch);
  const double block = 2.0 * 256 * 1536 * 4;
  CHECK(traffic.context_messages == 12 * 9);
  CHECK(traffic.context_message_bytes == block);
  CHECK(traffic.context_bytes_per_rank == 12 * 9 * block);
  CHECK(traffic.data_values == 2 * w.parameters);  // gradients reduced over d x c = 4
  CHECK(traffic.data_bytes_per_rank == Approx(2 * w.parameters * 4 * 3 / 4));
  const model::Platform platform = fixture();
  const model::MeshPlacement placement = model::place_mesh(l, platform, {}, "<t>");
  CHECK(model::dimension_span(placement, platform, "context") == "inside a node");
  const model::LayoutTime time = model::layout_time(w, l, batch, platform, placement);
  // Every rank does a quarter of the flop; the attention core (3 x forward) hides the ring.
  const double flop = (12 * shape.layer_training_flop(batch, model::Recompute::None) +
                       shape.logits_training_flop(batch)) /
                      4;
  CHECK(time.stages[0].compute_s == Approx(flop / kSpeed));
  const double attention_s = 12 * 3 * shape.attention_core_forward_flop(batch) / 4 / kSpeed;
  const double ring_s = 12 * 9 * (kIntraLatency + block / kIntraBandwidth);
  REQUIRE(ring_s > attention_s);  // the case exposes part of the ring
  CHECK(time.stages[0].context_s == Approx(ring_s - attention_s));
  CHECK(time.stages[0].busy_s == Approx(time.stages[0].compute_s + ring_s - attention_s));
  // Without context parallelism the same batch on one GPU: four times the compute, no ring.
  const model::Layout one = layout(1, 1, 1);
  const model::LayoutTime alone =
      model::layout_time(w, one, batch, platform, model::place_mesh(one, platform, {}, "<t>"));
  CHECK(alone.stages[0].compute_s == Approx(4 * time.stages[0].compute_s));
  CHECK(alone.stages[0].context_s == 0);
}

TEST_CASE(
    "an all-to-all is a pairwise exchange: n-1 steps of one share, each as slow as its "
    "slowest route") {
  const model::Platform platform = fixture();
  const double bytes = 8e6;
  // Inside a node: 3 steps of 2 MB at 100 GB/s.
  CHECK(model::alltoall_s(bytes, {0, 1, 2, 3}, platform) ==
        Approx(3 * (kIntraLatency + bytes / 4 / kIntraBandwidth)));
  // Two ranks per node: step 1 and 3 cross nodes for some pair, step 2 (q -> q+2) always does.
  CHECK(model::alltoall_s(bytes, {0, 1, 4, 5}, platform) ==
        Approx(3 * (kInterLatency + bytes / 4 / kInterBandwidth)));
  CHECK(model::alltoall_s(bytes, {0}, platform) == 0);
  CHECK(model::alltoall_bytes_per_rank(bytes, 4) == 6e6);
  CHECK(model::expert_alltoalls_per_layer(model::Recompute::None) == 4);
  CHECK(model::expert_alltoalls_per_layer(model::Recompute::Selective) == 4);
  CHECK(model::expert_alltoalls_per_layer(model::Recompute::Full) == 6);
}

TEST_CASE(
    "expert parallelism: 4 all-to-alls per MoE layer of b s k h values, (e-1)/e sent, "
    "expert gradients over t c d / e ranks") {
  const model::Workload w = model::load_workload("mixtral-8x7b");  // 32 MoE layers, bf16
  const model::Transformer& shape = *w.transformer;
  const double e = w.bytes_per_parameter, s = shape.sequence, h = shape.hidden;
  model::Layout l = layout(8, 1, 1);
  l.expert = 8;
  const double batch = 8;                                          // one sequence per replica
  CHECK(model::expert_alltoall_values(shape, 1, l) == s * 2 * h);  // top-2
  const model::LayoutTraffic traffic = model::layout_traffic(w, l, batch);
  CHECK(traffic.expert_alltoalls == 32 * 4);
  CHECK(traffic.expert_alltoall_bytes == s * 2 * h * e);
  CHECK(traffic.expert_bytes_per_rank == Approx(32 * 4 * s * 2 * h * e * 7 / 8));
  // Every rank holds one expert of each layer: no other rank shares its experts' gradients.
  CHECK(traffic.expert_data_parameters == Approx(32 * shape.routed_expert_parameters() / 8));
  CHECK(traffic.expert_data_bytes_per_rank == 0);
  // The dense part (attention, norms, router, embeddings) is reduced over the 8 replicas.
  const double dense = model::stage_parameters(shape, l, 0) - traffic.expert_data_parameters;
  CHECK(traffic.data_parameters == Approx(dense));
  CHECK(traffic.data_bytes_per_rank == Approx(2 * dense * e * 7 / 8));
  // 16 replicas, experts over 8: each expert's gradients over 2 ranks.
  model::Layout wide = layout(16, 1, 1);
  wide.expert = 8;
  const model::LayoutTraffic twice = model::layout_traffic(w, wide, 16);
  CHECK(model::expert_data_size(wide) == 2);
  CHECK(twice.expert_data_bytes_per_rank == Approx(2 * twice.expert_data_parameters * e * 1 / 2));
  // Capacity factor 1.25 pads the dispatched buffers.
  model::Transformer padded = shape;
  padded.moe.capacity_factor = 1.25;
  CHECK(model::expert_alltoall_values(padded, 1, l) == Approx(1.25 * s * 2 * h));
  // With tensor parallelism (sequence parallel), each tensor rank dispatches its own shard.
  model::Layout folded = layout(4, 2, 1);
  folded.sequence_parallel = true;
  folded.expert = 8;
  CHECK(model::expert_alltoall_values(shape, 1, folded) == s / 2 * 2 * h);

  // The time: the eight ranks span both fixture nodes, and every step of the pairwise exchange
  // has a pair that crosses them.
  const model::Platform platform = fixture();
  const model::MeshPlacement placement = model::place_mesh(l, platform, {}, "<t>");
  CHECK(model::dimension_span(placement, platform, "expert") == "across nodes");
  const model::LayoutTime time = model::layout_time(w, l, batch, platform, placement);
  const double share = s * 2 * h * e / 8;
  CHECK(time.stages[0].expert_s == Approx(32 * 4 * 7 * (kInterLatency + share / kInterBandwidth)));
  // Per-rank compute does not depend on e (balanced routing: each rank's tokens x k).
  model::Layout no_experts = layout(8, 1, 1);
  const model::LayoutTime plain = model::layout_time(
      w, no_experts, batch, platform, model::place_mesh(no_experts, platform, {}, "<t>"));
  CHECK(time.stages[0].compute_s == Approx(plain.stages[0].compute_s));
  CHECK(plain.stages[0].expert_s == 0);
}
