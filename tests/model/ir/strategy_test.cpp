// strategy_test.cpp: plan shapes, host choice, batch split and the impossible-job errors.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "model/base/error.hpp"
#include "model/ir/strategy.hpp"
#include "tests/model/test_support.hpp"

using namespace tauplan;

TEST_CASE("plans have the documented ops") {
  const auto platform = model::make_crossbar_platform({1e12, 1e12, 1e12, 1e12}, 1e9, 1e-5);
  const auto workload = test::round_workload();
  const model::FixedCounts c(10);
  const auto single = model::make_plan("single", test::options(4, 8), workload, platform, c);
  CHECK(single.count(model::OpKind::Compute) == 1);
  CHECK(single.count(model::OpKind::Collective) == 0);
  const auto sync = model::make_plan("sync", test::options(4, 8), workload, platform, c);
  CHECK(sync.count(model::OpKind::Compute) == 4);
  CHECK(sync.count(model::OpKind::Collective) == 1);
  CHECK(sync.count(model::OpKind::Update) == 4);
  const auto local = model::make_plan("local-sgd", test::options(4, 8, 5), workload, platform, c);
  CHECK(local.count(model::OpKind::Compute) == 4);
  CHECK(local.steps_per_round == 5);
  CHECK(local.rounds == 2);
  CHECK(local.topological_order().size() == 5);
}

TEST_CASE("single runs on the fastest worker unless a host is named") {
  const auto platform = model::make_crossbar_platform({1e12, 3e12, 2e12}, 1e9, 1e-5);
  const auto workload = test::round_workload();
  auto options = test::options(1, 8);
  CHECK(
      model::make_plan("single", options, workload, platform, model::FixedCounts(1)).worker_hosts ==
      std::vector<int>{1});
  options.single_host = "h2";
  CHECK(
      model::make_plan("single", options, workload, platform, model::FixedCounts(1)).worker_hosts ==
      std::vector<int>{2});
  options.single_host = "h9";
  CHECK_THROWS_WITH(model::make_plan("single", options, workload, platform, model::FixedCounts(1)),
                    Catch::Contains("<test>: single_host"));
}

TEST_CASE("even split spreads the remainder over the first workers") {
  const auto platform = model::make_crossbar_platform({1, 1, 1}, 1, 1);
  CHECK(model::split_batch(10, {0, 1, 2}, platform, model::BatchSplit::Even) ==
        std::vector<double>{4, 3, 3});
}

TEST_CASE("impossible jobs are input errors naming the key") {
  const auto platform = model::make_crossbar_platform({1e12, 1e12}, 1e9, 1e-5, 16e9);
  auto workload = test::round_workload();
  const model::FixedCounts c(10);
  CHECK_THROWS_WITH(model::make_plan("sync", test::options(3, 8), workload, platform, c),
                    Catch::Contains("<test>: workers: expected at most 2"));
  CHECK_THROWS_WITH(model::make_plan("sync", test::options(2, 1), workload, platform, c),
                    Catch::Contains("<test>: batch: expected at least workers=2"));
  CHECK_THROWS_WITH(model::make_plan("sync", test::options(2, 8, 1, "ps"), workload, platform, c),
                    Catch::Contains("<test>: collective: expected a platform with 1 server"));
  auto overlap = test::options(2, 8);
  overlap.overlap = true;
  CHECK_THROWS_WITH(model::make_plan("sync", overlap, workload, platform, c),
                    Catch::Contains("<test>: overlap: expected a workload with a `layers` list"));
  // 1 GB of activations per sample: 32 samples need ~32 GB on a 16 GB GPU.
  workload.activation_bytes_per_sample = 1e9;
  try {
    model::make_plan("local-sgd", test::options(2, 32), workload, platform, c);
    FAIL("no memory error");
  } catch (const InputError& e) {
    const std::string m = e.what();
    CHECK(m.find(
              "<test>: batch: expected a per-worker batch that fits in the 14.90 GiB of host h0") !=
          std::string::npos);
    CHECK(m.find("GiB over") != std::string::npos);
  }
  // sync splits the batch: 16 samples per worker still do not fit; 8 per worker do.
  CHECK_THROWS_AS(model::make_plan("sync", test::options(2, 32), workload, platform, c),
                  InputError);
  CHECK_NOTHROW(model::make_plan("sync", test::options(2, 16), workload, platform, c));
  auto no_check = test::options(2, 32);
  no_check.check_memory = false;
  CHECK_NOTHROW(model::make_plan("sync", no_check, workload, platform, c));
  CHECK_THROWS_WITH(model::strategy("async", "job.yaml"), Catch::Contains("job.yaml: strategies"));
}

TEST_CASE(
    "a plan's ops: by id in the order added, edges both ways, deep copies, empty when moved") {
  model::Plan plan;
  model::Op compute;
  compute.kind = model::OpKind::Compute;
  compute.label = "compute";
  model::Op update = compute;
  update.kind = model::OpKind::Update;
  update.label = "update";
  model::Op barrier = compute;
  barrier.kind = model::OpKind::Barrier;
  barrier.label = "barrier";
  const model::OpId c = plan.add(compute), u = plan.add(update), b = plan.add(barrier);
  plan.depend(c, u);
  plan.depend(c, b);
  plan.depend(u, b);
  CHECK(plan.op_count() == 3);
  CHECK(plan.dependency_count() == 3);
  std::vector<std::string> labels;
  for (model::OpId id : plan.op_ids())
    labels.push_back(plan.op(id).label);
  CHECK(labels == std::vector<std::string>{"compute", "update", "barrier"});
  CHECK(plan.successors(c) == std::vector<model::OpId>{u, b});
  CHECK(plan.predecessors(b) == std::vector<model::OpId>{c, u});
  CHECK(plan.predecessors(c).empty());
  CHECK(plan.topological_order() == std::vector<model::OpId>{c, u, b});

  // A copy is its own graph: changing it leaves the original as it was.
  model::Plan copy = plan;
  copy.op(c).label = "changed";
  copy.remove(u);  // the barrier becomes op 1, waiting on the compute only
  CHECK(plan.op(c).label == "compute");
  CHECK(plan.op_count() == 3);
  CHECK(copy.op_count() == 2);
  CHECK(copy.op(1).label == "barrier");
  CHECK(copy.predecessors(1) == std::vector<model::OpId>{0});
  CHECK(copy.dependency_count() == 1);
  model::Plan assigned;
  assigned = plan;
  assigned.op(b).label = "assigned";
  CHECK(plan.op(b).label == "barrier");

  // A moved-from plan is an empty plan, and may be built again.
  model::Plan moved = std::move(copy);
  CHECK(moved.op_count() == 2);
  CHECK(copy.op_count() == 0);  // NOLINT(bugprone-use-after-move): what is checked
  CHECK(copy.add(compute) == 0);
  assigned = std::move(moved);
  CHECK(assigned.op_count() == 2);
  CHECK(moved.op_count() == 0);  // NOLINT(bugprone-use-after-move)
}
