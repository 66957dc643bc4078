// strategy_extension_test.cpp: a strategy defined here, outside the tree, runs in all three
// engines with no change to model/, sim/ or exec/ (issue 25: "a new strategy that only lowers to
// existing op kinds runs in all three engines").
//
// grid-sync-test is synchronous data parallelism whose gradient all-reduce runs in two stages
// over a grid of workers (rows of two, then columns), as 2-D/torus all-reduces do: every worker
// computes its share of the global batch, each row all-reduces (rows in parallel), then each
// column (columns in parallel), then every worker updates. It lowers to Compute, Collective
// (over subgroups of the workers) and Update ops only. With an even split the mean of the rows'
// means is the global mean, so it trains the same model as sync: the exec engine's losses and
// accuracies must equal sync's to float rounding. The analytic engine's round must be sync's
// compute and update plus two 2-worker ring all-reduces (the rows', then the columns', on a
// platform of identical hosts on one switch), and SimGrid must agree with it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/strategy.hpp"
#include "study/common/engines.hpp"

using namespace tauplan;

namespace {

class GridSyncStrategy : public model::Strategy {
 public:
  const char* name() const override { return "grid-sync-test"; }
  const char* description() const override {
    return "test: sync whose all-reduce runs over rows of two workers, then over columns";
  }
  std::vector<std::string> keys() const override { return {"workers", "hosts", "collective"}; }
  bool listed_by_default() const override { return false; }
  bool splits_batch() const override { return true; }
  model::StrategyOptions normalise(model::StrategyOptions options) const override {
    options.tau = 1;
    options.split = model::BatchSplit::Even;
    options.overlap = false;
    options.micro_batches = 1;
    options.single_host.clear();
    return options;
  }
  void recost(model::Plan& plan, const model::StrategyOptions& options,
              const model::Workload& workload, const model::Platform& platform) const override {
    plan.batch = options.batch;
    plan.worker_samples =
        model::split_batch(options.batch, plan.worker_hosts, platform, model::BatchSplit::Even);
    for (auto v : plan.op_ids()) {
      model::Op& op = plan.op(v);
      if (op.kind != model::OpKind::Compute) continue;
      op.samples = plan.worker_samples[static_cast<std::size_t>(op.worker)];
      op.flop = op.samples * workload.flop_per_sample;
    }
  }

 protected:
  model::Plan generate(const model::StrategyOptions& options, const model::Workload& workload,
                       const model::Platform& platform) const override {
    if (options.workers < 4 || options.workers % 2 != 0)
      throw InputError(options.file, "workers", "an even number >= 4 (rows of two)",
                       std::to_string(options.workers));
    model::Plan plan;
    plan.strategy = name();
    plan.workers = options.workers;
    plan.batch = options.batch;
    plan.collective = options.collective;
    plan.worker_hosts = model::choose_worker_hosts(options, platform);
    plan.worker_samples =
        model::split_batch(options.batch, plan.worker_hosts, platform, model::BatchSplit::Even);
    std::vector<model::OpId> compute;
    for (int w = 0; w < plan.workers; ++w) {
      model::Op op;
      op.kind = model::OpKind::Compute;
      op.label = fmt::format("w{} forward+backward", w);
      op.worker = w;
      op.samples = plan.worker_samples[static_cast<std::size_t>(w)];
      op.flop = op.samples * workload.flop_per_sample;
      op.overhead_s = model::step_overhead_on(options, platform,
                                              plan.worker_hosts[static_cast<std::size_t>(w)]);
      compute.push_back(plan.add(op));
    }
    const auto all_reduce = [&](const std::string& label, std::vector<int> group) {
      model::Op op;
      op.kind = model::OpKind::Collective;
      op.label = label;
      op.algorithm = options.collective;
      op.payload = model::CollectivePayload::Gradients;
      op.bytes = workload.gradient_bytes();
      op.group = std::move(group);
      return plan.add(op);
    };
    const int rows = plan.workers / 2;
    std::vector<model::OpId> row_ops;
    for (int r = 0; r < rows; ++r) {
      row_ops.push_back(all_reduce(fmt::format("row {} all-reduce", r), {2 * r, 2 * r + 1}));
      plan.depend(compute[static_cast<std::size_t>(2 * r)], row_ops.back());
      plan.depend(compute[static_cast<std::size_t>(2 * r + 1)], row_ops.back());
    }
    for (int c = 0; c < 2; ++c) {
      std::vector<int> column;
      for (int r = 0; r < rows; ++r)
        column.push_back(2 * r + c);
      const model::OpId column_op = all_reduce(fmt::format("column {} all-reduce", c), column);
      for (model::OpId row_op : row_ops)
        plan.depend(row_op, column_op);  // a column holds one member of every row
      for (int w : column) {
        model::Op update;
        update.kind = model::OpKind::Update;
        update.label = fmt::format("w{} update", w);
        update.worker = w;
        update.flop = workload.parameters * workload.update_flop_per_parameter;
        plan.depend(column_op, plan.add(update));
      }
    }
    return plan;
  }
};

void register_grid_sync() {
  if (!model::find_strategy("grid-sync-test"))
    model::register_strategy(std::make_unique<GridSyncStrategy>());
}

/// One GPU of each of the first `workers` nodes of sparknet-ec2: identical hosts behind one
/// non-blocking switch, full-duplex NICs, so that no two flows of a stage share a link.
std::string one_gpu_per_node(int workers) {
  std::string hosts;
  for (int n = 0; n < workers; ++n)
    hosts += fmt::format("{}n{}-gpu0", n == 0 ? "" : ", ", n);
  return hosts;
}

/// A job training a small MLP on synthetic data for 12 steps.
std::string write_job(const std::string& strategies, int workers, const std::string& hosts) {
  const std::string path = "/tmp/tauplan-strategy-extension-" + std::to_string(::getpid()) + "-" +
                           std::to_string(workers) + ".yaml";
  std::ofstream(path) << "workload: fashion-mlp\nplatform: sparknet-ec2\nstrategies: ["
                      << strategies << "]\nworkers: " << workers << "\nhosts: [" << hosts
                      << "]\nbatch: 64\ncollective: ring\nhidden: [16]\n"
                         "max_steps: 12\neval_every: 4\ndata_dir: /nonexistent/fashion\n"
                         "allow_synthetic: true\ntrain_samples: 400\neval_samples: 200\n"
                         "target_accuracy: 0.99\nseed: 3\n";
  return path;
}

const model::ResultRow& row_of(const study::EngineOutput& out, const std::string& strategy) {
  for (const auto& row : out.rows)
    if (row.strategy == strategy) return row;
  FAIL("no row for " << strategy);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("a strategy registered in a test runs in the analytic engine as its closed form",
          "[extension]") {
  register_grid_sync();
  const std::string job4 = write_job("sync, grid-sync-test", 4, one_gpu_per_node(4));
  const std::string job2 = write_job("sync", 2, one_gpu_per_node(2));
  const study::EngineOutput four = study::run_engine("analytic", job4, {});
  const study::EngineOutput two = study::run_engine("analytic", job2, {});
  std::remove(job4.c_str());
  std::remove(job2.c_str());
  const model::ResultRow& grid = row_of(four, "grid-sync-test");
  const model::ResultRow& sync4 = row_of(four, "sync");
  const model::ResultRow& sync2 = row_of(two, "sync");
  REQUIRE(sync2.comm_s > 0);
  // Closed form: sync's compute and update at K = 4, with its one 4-worker all-reduce replaced
  // by two 2-worker ones (rows, then columns) on identical hosts of one switch.
  CHECK(grid.round_s == Approx(sync4.round_s - sync4.comm_s + 2 * sync2.comm_s).epsilon(1e-9));
  CHECK(grid.comm_s == Approx(2 * sync2.comm_s).epsilon(1e-9));
  CHECK(grid.rounds == sync4.rounds);  // the same global batch: the same steps to the target
}

TEST_CASE("a strategy registered in a test runs in SimGrid, agreeing with the analytic engine",
          "[extension]") {
  register_grid_sync();
  const std::string job = write_job("grid-sync-test", 4, one_gpu_per_node(4));
  const study::EngineOutput analytic = study::run_engine("analytic", job, {});
  const study::EngineOutput simgrid = study::run_engine("simgrid", job, {});
  std::remove(job.c_str());
  const model::ResultRow& predicted = row_of(analytic, "grid-sync-test");
  const model::ResultRow& simulated = row_of(simgrid, "grid-sync-test");
  CHECK(simulated.engine == "simgrid");
  CHECK(simulated.rounds == predicted.rounds);
  CHECK(simulated.round_s == Approx(predicted.round_s).epsilon(0.01));
  CHECK(simulated.comm_s > 0);
}

TEST_CASE("a registered strategy's subgroup collectives contend in SimGrid where links are shared",
          "[extension]") {
  // The four GPUs of node n0: the rows (gpu0-gpu1, gpu2-gpu3) stay on their PCIe boards, but
  // both columns (gpu0-gpu2, gpu1-gpu3) cross the two boards' uplinks at once. The analytic
  // engine charges no contention; SimGrid shares the uplinks between the columns.
  register_grid_sync();
  const std::string job = write_job("grid-sync-test", 4, "n0-gpu0, n0-gpu1, n0-gpu2, n0-gpu3");
  const study::EngineOutput analytic = study::run_engine("analytic", job, {});
  const study::EngineOutput simgrid = study::run_engine("simgrid", job, {});
  std::remove(job.c_str());
  CHECK(row_of(simgrid, "grid-sync-test").comm_s > 1.1 * row_of(analytic, "grid-sync-test").comm_s);
}

TEST_CASE("a strategy registered in a test trains for real in the exec engine, as sync does",
          "[extension]") {
  register_grid_sync();
  const std::string job = write_job("sync, grid-sync-test", 4, one_gpu_per_node(4));
  const study::EngineOutput measured = study::run_engine("exec", job, {});
  std::remove(job.c_str());
  const model::ResultRow& grid = row_of(measured, "grid-sync-test");
  const model::ResultRow& sync = row_of(measured, "sync");
  CHECK(grid.engine == "exec-cpu");
  CHECK(grid.rounds == 12);
  CHECK(grid.comm_s > 0);
  // The mean of the rows' means is the global mean: the same model, step for step.
  const auto& grid_curve = grid.extra.at("accuracy_curve");
  const auto& sync_curve = sync.extra.at("accuracy_curve");
  REQUIRE(grid_curve.size() == 3);
  REQUIRE(grid_curve.size() == sync_curve.size());
  for (std::size_t i = 0; i < grid_curve.size(); ++i) {
    CHECK(grid_curve[i].at("train_loss").get<double>() ==
          Approx(sync_curve[i].at("train_loss").get<double>()).epsilon(1e-5));
    CHECK(grid_curve[i].at("accuracy").get<double>() ==
          Approx(sync_curve[i].at("accuracy").get<double>()).margin(1e-9));
  }
}

TEST_CASE("a registered strategy's name may not be taken twice", "[extension]") {
  register_grid_sync();
  CHECK_THROWS_AS(model::register_strategy(std::make_unique<GridSyncStrategy>()),
                  std::invalid_argument);
  const std::string job = write_job("grid-sync-test", 3, one_gpu_per_node(3));
  const std::map<std::string, std::string> three_workers{{"workers", "3"}};
  CHECK_THROWS_AS(study::run_engine("analytic", job, three_workers), InputError);
  std::remove(job.c_str());
}
