// async_cycle_test.cpp: asynchronous training runs the Plan's ops, not a fixed loop: a worker's
// cycle is its pulls, compute, pushes and applies in dependency order (worker_cycle), a cycle
// edited in the plan trains as edited, and cycles exec cannot run are refused.
#include <catch2/catch.hpp>

#include <numeric>

#include "exec/async_ranks.hpp"
#include "exec_support.hpp"
#include "model/base/error.hpp"

using namespace tauplan;
using namespace tauplan::exec;

namespace {

// Four workers and two servers, all at 1e9 flop/s.
model::Platform two_server_platform() {
  std::vector<model::HostRole> roles(4, model::HostRole::Worker);
  roles.resize(6, model::HostRole::Server);
  return model::make_crossbar_platform(std::vector<double>(6, 1e9), 1e9, 1e-5, 0, roles);
}

model::Plan async_plan(const model::Platform& platform) {
  model::StrategyOptions o;
  o.file = "<test>";
  o.workers = 4;
  o.batch = 16;
  o.servers = 2;
  o.check_memory = false;
  return model::make_plan("async-ps", o, test::tiny_workload(), platform, model::FixedCounts(1));
}

/// Removes worker `w`'s push to server `s` and that server's apply of it from the plan.
void drop_push(model::Plan& plan, int w, int s) {
  for (bool removed = true; removed;) {
    removed = false;
    for (auto v : plan.op_ids()) {
      const model::Op& op = plan.op(v);
      const bool push = op.kind == model::OpKind::Transfer && op.worker == w &&
                        op.destination.role == model::Endpoint::Role::Server &&
                        op.destination.index == s;
      const bool apply = op.kind == model::OpKind::Apply && op.worker == w && op.server == s;
      if (push || apply) {
        plan.remove(v);
        removed = true;
        break;
      }
    }
  }
}

}  // namespace

TEST_CASE("an async-ps worker's cycle: pulls, compute, pushes, then the applies", "[exec][async]") {
  const model::Plan plan = async_plan(two_server_platform());
  using Kind = CycleOp::Kind;
  for (int w = 0; w < 4; ++w) {
    const std::vector<CycleOp> cycle = worker_cycle(plan, w, "<test>");
    REQUIRE(cycle.size() == 7);
    std::vector<Kind> kinds;
    for (const CycleOp& op : cycle)
      kinds.push_back(op.kind);
    CHECK(kinds == std::vector<Kind>{Kind::Pull, Kind::Pull, Kind::Compute, Kind::Push, Kind::Push,
                                     Kind::Apply, Kind::Apply});
  }
}

TEST_CASE("asynchronous training runs the cycle the plan gives, as edited", "[exec][async]") {
  // Worker 3 no longer pushes to server 1: its gradients reach shard 0 only. Every apply is
  // counted in the staleness histogram, so it holds 2 applies per update of workers 0-2 and
  // one per update of worker 3 (plus at most one cycle per worker cut short by the stop).
  const model::Platform platform = two_server_platform();
  model::Plan plan = async_plan(platform);
  drop_push(plan, 3, 1);
  TrainOptions o = test::quick_options(1000);
  o.timing = Timing::Concurrent;
  o.eval_every_steps = 100;
  // Four threads on a loaded 2-core machine: the scheduler may starve worker 3 (7 of 400
  // updates once, in CI); run again, at most three times, until it took enough steps that the
  // difference shows (the counts below hold for any run; only their power needs its steps).
  Measurement m = train_async_threads(plan, platform, test::tiny_data(), test::tiny_shape(), o);
  for (int retry = 0; retry < 2 && m.per_worker.at(3).steps <= 20; ++retry)
    m = train_async_threads(plan, platform, test::tiny_data(), test::tiny_shape(), o);
  long long expected = 0;
  for (const WorkerReport& w : m.per_worker)
    expected += (w.worker == 3 ? 1 : 2) * w.steps;
  const auto histogram = m.extra.at("staleness_histogram").get<std::vector<long long>>();
  const long long applies = std::accumulate(histogram.begin(), histogram.end(), 0LL);
  CHECK(m.per_worker.at(3).steps > 20);  // enough updates that the difference shows
  CHECK(applies >= expected);
  CHECK(applies <= expected + 2 * 4);
}

TEST_CASE("cycles exec cannot run asynchronously are InputErrors naming strategies",
          "[exec][async]") {
  const model::Platform platform = two_server_platform();
  {
    model::Plan plan = async_plan(platform);  // a push without its apply
    for (auto v : plan.op_ids())
      if (plan.op(v).kind == model::OpKind::Apply && plan.op(v).worker == 2) {
        plan.remove(v);
        break;
      }
    CHECK_THROWS_AS(worker_cycle(plan, 2, "job.yaml"), InputError);
    CHECK_NOTHROW(worker_cycle(plan, 1, "job.yaml"));
  }
  {
    model::Plan plan = async_plan(platform);  // no push to the lead server, which counts updates
    drop_push(plan, 1, 0);
    CHECK_THROWS_AS(worker_cycle(plan, 1, "job.yaml"), InputError);
    drop_push(plan, 2, 1);  // another server may be left out, but not under a staleness bound
    CHECK_NOTHROW(worker_cycle(plan, 2, "job.yaml"));
    plan.staleness_bound = 2;
    CHECK_THROWS_AS(worker_cycle(plan, 2, "job.yaml"), InputError);
  }
  {
    model::Plan plan = async_plan(platform);  // a pull from a server after the push to it
    model::OpId push{}, pull{};
    for (auto v : plan.op_ids()) {
      const model::Op& op = plan.op(v);
      if (op.worker != 0 || op.kind != model::OpKind::Transfer) continue;
      if (op.destination.role == model::Endpoint::Role::Server && op.destination.index == 1)
        push = v;
      if (op.source.role == model::Endpoint::Role::Server && op.source.index == 1) pull = v;
    }
    model::Op late = plan.op(pull);
    late.label = "w0 pull again";
    plan.depend(push, plan.add(late));
    CHECK_THROWS_AS(worker_cycle(plan, 0, "job.yaml"), InputError);
  }
  {
    model::Plan plan = async_plan(platform);  // an op kind asynchronous cycles do not have
    model::Op update;
    update.kind = model::OpKind::Update;
    update.label = "w0 update";
    update.worker = 0;
    plan.add(update);
    try {
      worker_cycle(plan, 0, "job.yaml");
      FAIL("an update op was accepted");
    } catch (const InputError& e) {
      CHECK(e.key() == "strategies");
      CHECK(std::string(e.what()).find("w0 update") != std::string::npos);
    }
  }
}
