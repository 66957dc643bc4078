// thread_messages_test.cpp: the `thread-messages` communicator
// (exec/thread_message_communicator.hpp) trains as the shared-memory one does: the same model from
// every collective algorithm (bit for bit through the servers and for Adasum, to float rounding
// around a ring or a tree), the messages each algorithm is charged, subgroups, and a plan it cannot
// run refused; the transformer's sync through it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "exec/cpu_replica.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/thread_message_communicator.hpp"
#include "exec/trainer.hpp"
#include "exec/transformer_reference.hpp"
#include "exec/transformer_trainer.hpp"
#include "exec_support.hpp"
#include "model/base/error.hpp"

using namespace tauplan;
using namespace tauplan::exec;

namespace {

/// Eight hosts of one speed, two per node (hierarchical's shape at K = 4: 2 nodes of 2), the
/// last two parameter servers.
model::Platform two_per_node() {
  model::Platform platform = model::make_crossbar_platform(std::vector<double>(8, 1e9), 1e9, 1e-5);
  for (std::size_t h = 0; h < platform.hosts.size(); ++h) {
    platform.hosts[h].node = "node" + std::to_string(h / 2);
    if (h >= 6) platform.hosts[h].role = model::HostRole::Server;
  }
  return platform;
}

model::Plan plan_with(const std::string& strategy, const std::string& collective, int workers,
                      const model::Platform& platform) {
  model::StrategyOptions o;
  o.file = "<test>";
  o.workers = workers;
  o.batch = 32;
  o.collective = collective;
  o.servers = collective == "ps" ? 2 : 1;
  o.check_memory = false;
  return model::make_plan(strategy, o, test::tiny_workload(), platform, model::FixedCounts(1));
}

/// The messages one combine of `name` sends at K workers on nodes of 2 (2 servers for ps, 1 for
/// sparknet), and the stop messages finish() sends: the engines' flows
/// (model/ir/collective_<name>.cpp).
struct CombineMessages {
  long long per_call = 0, stops = 0;
};
CombineMessages messages_of(const std::string& name, long long k) {
  if (name == "tree") return {2 * (k - 1), 0};
  if (name == "hierarchical") return {2 * k * (2 - 1) + 2 * k * (k / 2 - 1), 0};
  if (name == "ps") return {2 * k * 2, k * 2};
  if (name == "sparknet") return {2 * k, k};
  return {2 * k * (k - 1), 0};  // ring
}

/// sync of the transformer tests' decoder block, cut to 2 layers.
TransformerTrainOptions transformer_sync(int workers) {
  TransformerTrainOptions o;
  o.block = test::small_block();
  o.block.layers = 2;
  o.data = workers;
  o.batch = 8;
  o.seed = 7;
  o.reduction = DataReduction::Communicator;
  return o;
}

}  // namespace

TEST_CASE("thread-messages trains the same model as the shared-memory threads, every algorithm",
          "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  const TrainOptions o = test::quick_options(8);
  const model::Platform platform = two_per_node();
  const int k = 4;
  for (const std::string& name : p2p_collective_names()) {
    INFO(name);
    const model::Plan plan = plan_with("sync", name, k, platform);
    REQUIRE(plan.collective == name);
    ThreadCommunicator shared(k);
    const Measurement reference =
        train(plan, platform, data, test::tiny_shape(), shared, cpu_replica_factory(), o);
    ThreadMessageCommunicator messages(plan, platform, "<test>");
    const Measurement measured =
        train(plan, platform, data, test::tiny_shape(), messages, cpu_replica_factory(), o);
    CHECK(measured.communicator == "thread-messages");
    REQUIRE(measured.final_parameters.size() == reference.final_parameters.size());
    if (name == "ps" || name == "sparknet")
      CHECK(measured.final_parameters == reference.final_parameters);
    else
      CHECK(test::max_abs_diff(measured.final_parameters, reference.final_parameters) < 1e-5);
    const CombineMessages expected = messages_of(name, k);  // one combine per step
    CHECK(messages.messages_sent() == 8 * expected.per_call + expected.stops);
  }
}

TEST_CASE(
    "a transformer's sync through thread-messages takes the shared-memory combine's "
    "gradient, every algorithm",
    "[exec][transformer]") {
  const model::Platform platform = two_per_node();
  const int k = 4;
  TransformerTrainOptions o = transformer_sync(k);
  const std::vector<float> parameters = init_block_parameters(o.block, 3);
  const TransformerStepGradients shared = transformer_step_gradients_threads(o, parameters, 2);
  for (const std::string& name : p2p_collective_names()) {
    INFO(name);
    ThreadMessageCommunicator messages(plan_with("sync", name, k, platform), platform, "<test>");
    o.communicator = &messages;
    const TransformerStepGradients measured = transformer_step_gradients_threads(o, parameters, 2);
    CHECK(measured.loss == Approx(shared.loss).epsilon(1e-12));  // summed in thread order
    REQUIRE(measured.gradients.size() == shared.gradients.size());
    if (name == "ps" || name == "sparknet")  // the servers sum in worker order, as threads do
      CHECK(measured.gradients == shared.gradients);
    else
      CHECK(test::max_abs_diff(measured.gradients, shared.gradients) < 1e-6);
    messages.finish();
    const CombineMessages expected = messages_of(name, k);
    CHECK(messages.messages_sent() == expected.per_call + expected.stops);
  }
  // Three steps: every worker's mean enters the next step's gradients, so a worker left with
  // the wrong mean (a broadcast that missed it) moves replica 0's final parameters.
  o.communicator = nullptr;
  o.steps = 3;
  const TransformerReport reference = train_transformer_threads(o);
  for (const std::string& name : p2p_collective_names()) {
    INFO(name << ", 3 steps");
    ThreadMessageCommunicator messages(plan_with("sync", name, k, platform), platform, "<test>");
    o.communicator = &messages;
    const TransformerReport trained = train_transformer_threads(o);
    CHECK(test::max_abs_diff(trained.final_parameters, reference.final_parameters) < 1e-5);
  }
  // The comparison can fail: another step's tokens give another gradient.
  o.communicator = nullptr;
  CHECK(test::max_abs_diff(transformer_step_gradients_threads(o, parameters, 3).gradients,
                           shared.gradients) > 1e-3);
}

TEST_CASE("a transformer's sync refuses a communicator that does not hold its workers") {
  const model::Platform platform = two_per_node();
  TransformerTrainOptions o = transformer_sync(4);
  o.steps = 1;
  ThreadMessageCommunicator three(plan_with("sync", "ring", 3, platform), platform, "<test>");
  o.communicator = &three;
  CHECK_THROWS_WITH(train_transformer_threads(o), Catch::Contains("3 workers"));
  // Across processes (a PeerGroup of one process per rank) sync needs its communicator.
  o.communicator = nullptr;
  ThreadPeerHub hub(4);
  CHECK_THROWS_WITH(train_transformer(o, hub.peer(0)), Catch::Contains("needs a communicator"));
}

TEST_CASE("thread-messages runs Adasum and subgroups as the shared-memory threads do",
          "[exec][trainer]") {
  const Dataset data = test::tiny_data();
  const model::Platform platform = two_per_node();
  TrainOptions o = test::quick_options(6);
  o.combine = CombineRule::Adasum;
  const model::Plan plan = plan_with("sync", "ring", 3, platform);
  ThreadCommunicator shared(3);
  ThreadMessageCommunicator messages(plan, platform, "<test>");
  CHECK(train(plan, platform, data, test::tiny_shape(), messages, cpu_replica_factory(), o)
            .final_parameters ==
        train(plan, platform, data, test::tiny_shape(), shared, cpu_replica_factory(), o)
            .final_parameters);

  // sync at K = 4 with its all-reduce narrowed to workers 2 and 0 (a hub of their own).
  o.combine = CombineRule::Mean;
  model::Plan narrowed = plan_with("sync", "ring", 4, platform);
  for (auto v : narrowed.op_ids())
    if (narrowed.op(v).kind == model::OpKind::Collective) narrowed.op(v).group = {2, 0};
  ThreadCommunicator shared4(4);
  ThreadMessageCommunicator messages4(narrowed, platform, "<test>");
  const Measurement a =
      train(narrowed, platform, data, test::tiny_shape(), messages4, cpu_replica_factory(), o);
  const Measurement b =
      train(narrowed, platform, data, test::tiny_shape(), shared4, cpu_replica_factory(), o);
  CHECK(test::max_abs_diff(a.final_parameters, b.final_parameters) < 1e-6);
  CHECK(messages4.messages_sent() == 6 * 4);  // a ring of 2: 2 (K - 1) messages per member
}

TEST_CASE("thread-messages refuses what its algorithm cannot run, naming the key") {
  const model::Platform platform = two_per_node();
  model::Plan narrowed = plan_with("sync", "ps", 4, platform);
  for (auto v : narrowed.op_ids())
    if (narrowed.op(v).kind == model::OpKind::Collective) narrowed.op(v).group = {2, 0};
  CHECK_THROWS_WITH(ThreadMessageCommunicator(narrowed, platform, "job.yaml"),
                    Catch::Contains("job.yaml") && Catch::Contains("collective"));
  // hierarchical with unequal nodes: 3 workers on nodes of 2.
  CHECK_THROWS_AS(ThreadMessageCommunicator(plan_with("sync", "hierarchical", 3, platform),
                                            platform, "job.yaml"),
                  InputError);
}

TEST_CASE("thread-messages with servers ends without finish() and after a finish()") {
  const model::Platform platform = two_per_node();
  const model::Plan plan = plan_with("sync", "ps", 2, platform);
  {
    // Destroyed unused: its server threads are waiting for pushes that will not come.
    ThreadMessageCommunicator unused(plan, platform, "<test>");
    CHECK(unused.messages_sent() == 0);
  }
  ThreadMessageCommunicator used(plan, platform, "<test>");
  std::vector<float> a{1, 2, 3}, b{3, 4, 5};
  used.combine({a.data(), b.data()}, {1.0, 3.0}, 3, CombineRule::Mean);
  CHECK(a == std::vector<float>{2.5f, 3.5f, 4.5f});
  CHECK(b == a);
  used.finish();
  used.finish();                                     // once is enough; a second call does nothing
  CHECK(used.messages_sent() == 2 * 2 * 2 + 2 * 2);  // K s pushes, K s replies, K s stops
}
