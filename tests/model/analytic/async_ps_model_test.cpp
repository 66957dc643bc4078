// async_ps_model_test.cpp: asynchronous parameter servers and time-budget local SGD in the analytic
// engine against closed forms computed by hand here (a worker's replies arriving in turn under a
// rendezvous, and model::replies_arrive_in_turn's cases, included), their convergence models and
// fits, and the impossible jobs.
#include <catch2/catch.hpp>

#include <cmath>

#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"
#include "model/convergence/convergence.hpp"
#include "model/convergence/validation.hpp"
#include "model/ir/plan_timing.hpp"
#include "model/ir/strategy.hpp"
#include "tests/model/test_support.hpp"

using namespace tauplan;

namespace {

// Workers h0..h{n-1} at the given speeds on 1e10 B/s links, then servers, each on its own link
// (`server_bandwidth`); every link 10 us, split duplex, into a crossbar.
model::Platform star(const std::vector<double>& worker_speeds,
                     const std::vector<double>& server_speeds, double server_bandwidth,
                     double worker_bandwidth = 1e10, double link_latency = 10e-6) {
  std::vector<double> speeds = worker_speeds;
  std::vector<model::HostRole> roles(worker_speeds.size(), model::HostRole::Worker);
  for (double s : server_speeds) {
    speeds.push_back(s);
    roles.push_back(model::HostRole::Server);
  }
  model::Platform p =
      model::make_crossbar_platform(speeds, worker_bandwidth, link_latency, 0, roles);
  std::vector<int> up, down;
  for (size_t h = 0; h < speeds.size(); ++h) {
    up.push_back(static_cast<int>(2 * h));
    down.push_back(static_cast<int>(2 * h + 1));
    if (h >= worker_speeds.size())
      for (int l : {up.back(), down.back()})
        p.links[static_cast<size_t>(l)].bandwidth_Bps = server_bandwidth;
  }
  p.routes = std::make_shared<model::CrossbarRoutes>(p.links, up, down);
  return p;
}

model::StrategyOptions async_options(int workers, double batch, int servers = 1,
                                     int staleness = 0) {
  model::StrategyOptions o = test::options(workers, batch);
  o.collective.clear();
  o.servers = servers;
  o.staleness_bound = staleness;
  return o;
}

// Transfer of `bytes` between a worker (1e10 B/s link) and a server link of `server_bw`.
double transfer(double bytes, double server_bw) {
  return 20e-6 + bytes / std::min(1e10, server_bw);
}

model::ResultRow predict(const model::StrategyOptions& o, const model::Workload& w,
                         const model::Platform& p, const model::ConvergenceModel& c) {
  return model::analyze(model::make_plan("async-ps", o, w, p, c), p);
}

}  // namespace

TEST_CASE("async-ps plans are one cycle per worker: pull, compute, push, apply per server") {
  const auto platform = star({1e12, 1e12, 1e12}, {1e12, 1e12}, 1e10);
  const auto plan = model::make_plan("async-ps", async_options(3, 10, 2), test::round_workload(),
                                     platform, model::FixedCounts(100));
  CHECK(plan.asynchronous);
  CHECK(plan.count(model::OpKind::Compute) == 3);
  CHECK(plan.count(model::OpKind::Transfer) == 12);  // 3 workers x 2 servers x (pull, push)
  CHECK(plan.count(model::OpKind::Apply) == 6);
  CHECK(plan.count(model::OpKind::Collective) == 0);
  CHECK(plan.server_hosts == std::vector<int>{3, 4});
  CHECK(plan.collective.empty());
  CHECK(plan.worker_samples == std::vector<double>{10, 10, 10});
  for (auto v : plan.op_ids()) {
    const model::Op& op = plan.op(v);
    CHECK(op.worker >= 0);
    if (op.kind == model::OpKind::Transfer) CHECK(op.bytes == Approx(2e6));  // N / 2 servers
  }
  CHECK(model::strategy("async-ps").label(async_options(3, 10, 2, 4)) ==
        "async-ps K=3 servers=2 s=4");
}

TEST_CASE("async throughput is the bottleneck formula: worker-, server- and link-bound") {
  const model::FixedCounts c(1000);
  const double b = 100, N = 4e6, C = b * 1e9 / 1e12;  // 0.1 s per step
  SECTION("worker-bound: X = K / T, T = pull + C + push + apply") {
    const auto platform = star({1e12, 1e12, 1e12, 1e12}, {1e12}, 1e10);
    const auto row = predict(async_options(4, b), test::round_workload(), platform, c);
    const double T = C + 2 * transfer(N, 1e10) + 2e6 / 1e12;
    CHECK(row.round_s == Approx(T / 4).epsilon(1e-12));
    CHECK(row.extra["bottleneck"] == "workers");
    CHECK(row.extra["updates_per_s"].get<double>() == Approx(4 / T).epsilon(1e-12));
    CHECK(row.compute_s == Approx(C).epsilon(1e-12));
    CHECK(row.comm_s == Approx(T - C).epsilon(1e-12));
    CHECK(row.extra["staleness_mean"].get<double>() == Approx(3).epsilon(1e-12));  // K - 1
  }
  SECTION("server-bound: X = 1 / t_apply") {
    auto workload = test::round_workload();
    workload.update_flop_per_parameter = 5e4;  // 5e10 flop per update: 0.05 s at 1e12
    const auto platform = star({1e12, 1e12, 1e12, 1e12}, {1e12}, 1e10);
    const auto row = predict(async_options(4, b), workload, platform, c);
    const double T = C + 2 * transfer(N, 1e10) + 0.05;
    REQUIRE(4 / T > 1 / 0.05);
    CHECK(row.round_s == Approx(0.05).epsilon(1e-12));
    CHECK(row.extra["bottleneck"] == "server h4 processor");
    // Every worker waits after its read (at the processor): staleness K - 1.
    CHECK(row.extra["staleness_mean"].get<double>() == Approx(3).epsilon(1e-12));
  }
  SECTION("link-bound: X = 1 / (alpha + shard / B) of the server's link") {
    const auto platform = star({1e12, 1e12, 1e12, 1e12}, {1e12}, 5e7);
    const auto row = predict(async_options(4, b), test::round_workload(), platform, c);
    const double t = transfer(N, 5e7);  // 0.08002 s
    REQUIRE(4 / (C + 2 * t) > 1 / t);
    CHECK(row.round_s == Approx(t).epsilon(1e-12));
    CHECK(row.extra["bottleneck"] == "server h4 link in");
    // The send and receive queues tie: a worker reads, then waits for the next push slot of
    // the receive queue: D = ceil(T / t) t = 4 t (T = 3.25 t), staleness X D - 1 = 3.
    CHECK(row.extra["staleness_mean"].get<double>() == Approx(3).epsilon(1e-9));
  }
  SECTION("two servers halve the shard: the link bound doubles") {
    const auto platform = star({1e12, 1e12, 1e12, 1e12}, {1e12, 1e12}, 5e7);
    const auto row = predict(async_options(4, b, 2), test::round_workload(), platform, c);
    const double t = transfer(N / 2, 5e7);
    const double T = C + 2 * t + 1e-6;
    CHECK(row.round_s == Approx(std::max(t, T / 4)).epsilon(1e-12));
  }
}

TEST_CASE("async: a worker's transfers to its servers share its link") {
  // One worker on a 1e8 B/s link, two servers on 1e10 B/s links: its two pulls of N / 2 start
  // together and share its link (each 20 us + N / 1e8, not N / 2 / 1e8), and so do its pushes.
  const double b = 100, N = 4e6, C = b * 1e9 / 1e12;
  const auto platform = star({1e12}, {1e12, 1e12}, 1e10, 1e8);
  const auto row =
      predict(async_options(1, b, 2), test::round_workload(), platform, model::FixedCounts(10));
  const double apply = 2 * 1e6 / 2 / 1e12;  // SGD: 2 flop per parameter of the half shard
  CHECK(row.round_s == Approx(C + 2 * (20e-6 + N / 1e8) + apply).epsilon(1e-12));
  CHECK(row.comm_s == Approx(2 * (20e-6 + N / 1e8) + apply).epsilon(1e-12));
}

TEST_CASE("async under a rendezvous: the server is one thread that receives, applies, sends") {
  // Routes of 10 ms (5 ms links), the server's link at 5e7 B/s, MPI's rendezvous (exec's server
  // ranks). A push is its request carrying the first 64 KiB, a clear-to-send, then the rest: the
  // request arrives while the server is busy, so the server's thread holds a push for 2
  // latencies + (N - 64 KiB) / B; then it applies (2e6 flop); a reply holds it until its
  // clear-to-send is back: 2 latencies + 64 KiB / B. Per update 4 latencies + N / B + the apply
  // = 0.120002 s, against the link's N / B = 0.08 s and the workers' 4 updates per 0.32 s.
  const double b = 100, N = 4e6, eager = 65536;
  model::Platform platform = star({1e12, 1e12, 1e12, 1e12}, {1e12}, 5e7, 1e10, 5e-3);
  platform.protocol.rendezvous = true;
  platform.protocol.eager_limit_bytes = eager;
  const auto row =
      predict(async_options(4, b), test::round_workload(), platform, model::FixedCounts(1000));
  CHECK(row.round_s == Approx(4 * 10e-3 + N / 5e7 + 2e6 / 1e12).epsilon(1e-12));
  CHECK(row.extra["bottleneck"] == "server h4 thread (receive, apply, send)");
  // A plain protocol: separate receive and send queues, each holding a whole transfer.
  platform.protocol = model::MessageProtocol();
  CHECK(predict(async_options(4, b), test::round_workload(), platform, model::FixedCounts(1000))
            .round_s == Approx(10e-3 + N / 5e7).epsilon(1e-12));
}

TEST_CASE("async under a rendezvous: a loaded server holds a push for its transfer alone") {
  // Eight workers on 1e8 B/s links (5 ms each), two servers on 1e10 B/s: a loaded one-thread
  // server takes a push while the worker's other push waits for the other server, so it flows
  // alone: 3 latencies + N / 2 / 1e8 = 0.05 s, less 1 latency and 64 KiB / 1e8 that came with its
  // request; the reply holds 2 latencies + 64 KiB / 1e8; the apply 1e6 flop. The workers (a
  // cycle of 0.1 s compute, replies in turn of 0.09 s and shared pushes of 0.07 s: 31 updates/s)
  // outrun the servers (each applies every update: 1 / 0.060001).
  const double b = 100, eager = 65536;
  model::Platform platform = star(std::vector<double>(8, 1e12), {1e12, 1e12}, 1e10, 1e8, 5e-3);
  platform.protocol.rendezvous = true;
  platform.protocol.eager_limit_bytes = eager;
  const auto row =
      predict(async_options(8, b, 2), test::round_workload(), platform, model::FixedCounts(1000));
  const double push_held = 3 * 10e-3 + 2e6 / 1e8 - 10e-3 - eager / 1e8;
  const double reply_held = 2 * 10e-3 + eager / 1e8;
  CHECK(row.round_s == Approx(push_held + reply_held + 1e6 / 1e12).epsilon(1e-12));
  CHECK(row.extra["bottleneck"].get<std::string>().find("thread") != std::string::npos);
}

TEST_CASE("async under a rendezvous: servers that bind take a worker's pushes in turn") {
  // The platform of the test above. Every update goes through both servers, whose threads each
  // serve 0.060001 s of it: at most 16.67 updates/s in all. Idle servers take a worker's pushes at
  // once: the cycle is replies in turn (0.09 s), the step (0.1 s) and shared pushes (0.07 s), 0.26
  // s. Loaded servers clear them at their own times: the pushes leave one after the other (the last
  // 3 latencies + N / 1e8 = 0.07 s after the step), each reply comes back alone (3 latencies + N /
  // 2 / 1e8 = 0.05 s): 0.22 s. Three workers at 0.22 s (13.6/s) would not load the servers, so they
  // wait for pushes: 3 / 0.26 s. Four at 0.22 s (18.2/s) would outrun them, so the servers bind,
  // though four at 0.26 s would not (15.4/s): the rate is the servers' 1 / 0.060001.
  const double b = 100, eager = 65536, latency = 10e-3, C = 0.1, N = 4e6;
  model::Platform platform = star(std::vector<double>(4, 1e12), {1e12, 1e12}, 1e10, 1e8, 5e-3);
  platform.protocol.rendezvous = true;
  platform.protocol.eager_limit_bytes = eager;
  const double idle_cycle = (5 * latency + N / 1e8) + C + (3 * latency + N / 1e8) + 1e6 / 1e12;
  const double server_s =
      (2 * latency + N / 2 / 1e8 - eager / 1e8) + (2 * latency + eager / 1e8) + 1e6 / 1e12;
  const auto three =
      predict(async_options(3, b, 2), test::round_workload(), platform, model::FixedCounts(1000));
  CHECK(three.round_s == Approx(idle_cycle / 3).epsilon(1e-12));
  CHECK(three.extra["bottleneck"] == "workers");
  const auto four =
      predict(async_options(4, b, 2), test::round_workload(), platform, model::FixedCounts(1000));
  CHECK(four.round_s == Approx(server_s).epsilon(1e-12));
  CHECK(four.extra["bottleneck"].get<std::string>().find("thread") != std::string::npos);
  // Eager messages have no clear-to-send to wait for: one order, shared pushes and replies, a
  // cycle of 0.2 s. Three workers make 15/s, under the servers' 1 / 0.06 (each holds a whole
  // transfer each way); replies apart (0.03 s) would make 3 / 0.18 s and load them.
  platform.protocol.eager_limit_bytes = 4e6;
  const double eager_cycle = 2 * (latency + N / 1e8) + C + 1e6 / 1e12;
  const auto eager_three =
      predict(async_options(3, b, 2), test::round_workload(), platform, model::FixedCounts(1000));
  CHECK(eager_three.round_s == Approx(eager_cycle / 3).epsilon(1e-12));
  CHECK(eager_three.extra["bottleneck"] == "workers");
}

TEST_CASE("async under a rendezvous: a worker's pushes share its link, its replies come in turn") {
  // One worker on a 1e8 B/s link (5 ms per link: 10 ms routes), two servers on 1e10 B/s, MPI's
  // rendezvous. Its two pushes of N / 2, posted at once, share its link and both end 3 latencies
  // + N / 1e8 after the step. The replies come one at a time (the worker receives one message at
  // a time; a rendezvous message's bytes wait for the receiver's clear-to-send): the first 3
  // latencies + N / 2 / 1e8, the second 2 latencies + N / 2 / 1e8 after it (its request came
  // meanwhile). Cycle: both replies, the step C = 0.1 s, the pushes, an apply (1e6 flop).
  // Measured on the testbed (experiments/testbed/README.md, "A worker's two pushes, timed").
  const double b = 100, N = 4e6, C = 0.1, latency = 10e-3, eager = 65536, apply = 1e6;
  model::Platform platform = star({1e12}, {1e12, 1e12}, 1e10, 1e8, 5e-3);
  platform.protocol.rendezvous = true;
  platform.protocol.eager_limit_bytes = eager;
  const auto row =
      predict(async_options(1, b, 2), test::round_workload(), platform, model::FixedCounts(10));
  const double replies = 5 * latency + N / 1e8, pushes = 3 * latency + N / 1e8;
  CHECK(row.round_s == Approx(replies + C + pushes + apply / 1e12).epsilon(1e-12));
  CHECK(row.extra["bottleneck"] == "workers");
  // The first server applies at 1e7 flop/s (0.1 s): the pushes end together, so its apply
  // follows the shared pushes. The engine still puts its reply first (replies in server order,
  // as if they started together), though the second server's reply would have arrived while it
  // applied: 0.04 s pessimistic here, the one order for every case that the README states.
  model::Platform slow_first = star({1e12}, {1e7, 1e12}, 1e10, 1e8, 5e-3);
  slow_first.protocol = platform.protocol;
  CHECK(predict(async_options(1, b, 2), test::round_workload(), slow_first, model::FixedCounts(10))
            .round_s == Approx(replies + C + pushes + apply / 1e7).epsilon(1e-12));
  // Three servers: three replies in turn, 3 + 2 + 2 latencies and the whole vector's bytes.
  model::Platform three = star({1e12}, {1e12, 1e12, 1e12}, 1e10, 1e8, 5e-3);
  three.protocol = platform.protocol;
  CHECK(predict(async_options(1, b, 3), test::round_workload(), three, model::FixedCounts(10))
            .round_s ==
        Approx(7 * latency + N / 1e8 + C + pushes + 2 * apply / 3 / 1e12).epsilon(1e-9));
  // The plain protocol: one latency a message, and the two replies share the worker's link as
  // the two pushes do (each N / 1e8).
  platform.protocol = model::MessageProtocol();
  CHECK(predict(async_options(1, b, 2), test::round_workload(), platform, model::FixedCounts(10))
            .round_s == Approx(2 * (latency + N / 1e8) + C + apply / 1e12).epsilon(1e-12));
}

TEST_CASE("replies arrive in turn only above the eager limit, under a rendezvous") {
  model::Platform platform = star({1e12}, {1e12, 1e12}, 1e10, 1e8);
  platform.protocol.rendezvous = true;
  platform.protocol.eager_limit_bytes = 65536;
  CHECK(model::replies_arrive_in_turn(platform, 1e6));
  CHECK_FALSE(model::replies_arrive_in_turn(platform, 65536));  // eager: no clear-to-send
  platform.protocol = model::MessageProtocol();                 // a plain protocol
  CHECK_FALSE(model::replies_arrive_in_turn(platform, 1e6));
}

TEST_CASE("async with a staleness bound holds every worker to the slowest one's rate") {
  const auto platform = star({1e12, 1e12, 2e12, 4e12}, {1e12}, 1e10);
  const model::FixedCounts c(1000);
  const double b = 100, N = 4e6;
  std::vector<double> T;
  for (double speed : {1e12, 1e12, 2e12, 4e12})
    T.push_back(b * 1e9 / speed + 2 * transfer(N, 1e10) + 2e6 / 1e12);
  const auto free = predict(async_options(4, b), test::round_workload(), platform, c);
  double rate = 0;
  for (double t : T)
    rate += 1 / t;
  CHECK(free.round_s == Approx(1 / rate).epsilon(1e-12));
  CHECK(free.extra["staleness_mean"].get<double>() == Approx(3).epsilon(1e-12));
  CHECK(free.extra["staleness_bound"] == 0);
  CHECK(free.extra["staleness_version_bound"].is_null());
  // The slowest worker (h0, T[0]) sees X T[0] - 1 updates per cycle.
  CHECK(free.extra["staleness_max"].get<double>() == Approx(rate * T[0] - 1).epsilon(1e-12));

  const auto ssp = predict(async_options(4, b, 1, 2), test::round_workload(), platform, c);
  CHECK(ssp.round_s == Approx(T[0] / 4).epsilon(1e-12));
  CHECK(ssp.extra["bottleneck"] == "staleness bound");
  CHECK(ssp.extra["staleness_mean"].get<double>() ==
        Approx((T[0] + T[1] + T[2] + T[3]) / T[0] - 1).epsilon(1e-12));
  CHECK(ssp.extra["staleness_version_bound"] == 3 * 5);  // (K-1)(2s+1)
}

TEST_CASE("async with one worker equals single (no staleness, same step and update)") {
  auto workload = test::round_workload();
  workload.update_flop_per_parameter = 2;  // single's update costs what a server's apply does
  const auto platform = star({1e12}, {1e12}, 1e10);
  const model::CriticalBatch c(500, 1000, 0);
  auto options = async_options(1, 64);
  options.comm_s = 0;  // no pull or push: the what-if of a server inside the worker
  const auto async = predict(options, workload, platform, c);
  const auto single = model::analyze(
      model::make_plan("single", test::options(1, 64), workload, platform, c), platform);
  CHECK(async.round_s == Approx(single.round_s).epsilon(1e-12));
  CHECK(async.rounds == single.rounds);
  CHECK(async.total_s == Approx(single.total_s).epsilon(1e-12));
  CHECK(async.extra["staleness_mean"].get<double>() == 0);
}

TEST_CASE("async rounds are Na(b) (1 + kappa tau_bar) server updates") {
  const auto platform = star({1e12, 1e12, 1e12, 1e12}, {1e12}, 1e10);
  model::CriticalBatch c(500, 1000, 0.2);
  c.set_staleness_cost(0.5);
  const auto plan =
      model::make_plan("async-ps", async_options(4, 100), test::round_workload(), platform, c);
  CHECK(plan.mean_staleness == Approx(3).epsilon(1e-12));
  CHECK(plan.convergence_steps == Approx(500 * (1 + 1000.0 / 100) * (1 + 0.5 * 3)).epsilon(1e-12));
  CHECK(plan.rounds == static_cast<long long>(std::ceil(plan.convergence_steps)));
  // Sync's rounds do not depend on the staleness cost.
  const auto sync =
      model::make_plan("sync", test::options(4, 400), test::round_workload(), platform, c);
  CHECK(sync.convergence_steps == Approx(500 * (1 + 1000.0 / 400)).epsilon(1e-12));
}

TEST_CASE("time-budget local SGD on a homogeneous platform equals fixed tau = budget / C(b)") {
  const auto platform = model::make_crossbar_platform({1e12, 1e12, 1e12, 1e12}, 1e9, 10e-6);
  const model::CriticalBatch c(500, 1000, 0.3);
  for (int tau : {1, 3, 8}) {
    auto fixed = test::options(4, 64, tau);
    auto budget = test::options(4, 64, 17);  // tau is ignored when a budget is given
    budget.round_budget_s = tau * 64 * 1e9 / 1e12;
    const auto a = model::analyze(
        model::make_plan("local-sgd", fixed, test::round_workload(), platform, c), platform);
    const auto plan = model::make_plan("local-sgd", budget, test::round_workload(), platform, c);
    const auto b = model::analyze(plan, platform);
    INFO("tau " << tau);
    CHECK(plan.tau == tau);
    CHECK(b.round_s == Approx(a.round_s).epsilon(1e-12));
    CHECK(b.rounds == a.rounds);
    CHECK(b.total_s == Approx(a.total_s).epsilon(1e-12));
    CHECK(b.extra["local_steps"] == std::vector<int>(4, tau));
  }
  auto budget = test::options(4, 64);
  budget.round_budget_s = 0.5;
  CHECK(model::strategy("local-sgd").label(model::strategy("local-sgd").normalise(budget)) ==
        "local-sgd K=4 budget=0.5s");
}

TEST_CASE("time-budget local SGD: faster workers take more steps, the round is the budget") {
  const auto platform = model::make_crossbar_platform({1e12, 1e12, 2e12, 4e12}, 1e9, 10e-6);
  const model::CriticalBatch c(500, 1000, 0.3);
  auto budget = test::options(4, 64);
  budget.round_budget_s = 0.64;  // C = 64 ms on h0, h1; 32 ms on h2; 16 ms on h3
  const auto plan = model::make_plan("local-sgd", budget, test::round_workload(), platform, c);
  const auto row = model::analyze(plan, platform);
  CHECK(row.extra["local_steps"] == std::vector<int>{10, 10, 20, 40});
  const double ring = 2.0 * 3 * (20e-6 + 4e6 / (4 * 1e9));
  CHECK(row.round_s == Approx(0.64 + ring).epsilon(1e-9));
  // Ma for unequal steps: H_eff = sum H^2 / sum H, K_eff = (sum H)^2 / sum H^2.
  const double sum = 80, squares = 100 + 100 + 400 + 1600;
  const double h = squares / sum, k = sum * sum / squares;
  CHECK(plan.convergence_steps ==
        Approx(500 * (1 + 1000 / (k * 64)) * (1 + 0.3 * (h - 1)) / h).epsilon(1e-12));
  // Fixed tau = 10 waits for the slowest: same round time, fewer steps on the fast workers.
  const auto fixed = model::analyze(
      model::make_plan("local-sgd", test::options(4, 64, 10), test::round_workload(), platform, c),
      platform);
  CHECK(fixed.round_s == Approx(row.round_s).epsilon(1e-9));
  // Without drift the fast workers' extra steps count in full: fewer rounds than fixed tau.
  // (With drift 0.3 they do not: H_eff = 27.5 local steps are worth little, K_eff < K.)
  CHECK(row.rounds > fixed.rounds);
  const model::CriticalBatch no_drift(500, 1000, 0);
  auto with = [&](const model::StrategyOptions& o) {
    return model::make_plan("local-sgd", o, test::round_workload(), platform, no_drift).rounds;
  };
  CHECK(with(budget) < with(test::options(4, 64, 10)));
}

TEST_CASE("convergence: unequal local steps reduce to Ma(b,K,tau), staleness to Na(b)") {
  const model::CriticalBatch c(500, 1000, 0.3);
  CHECK(c.unequal_local_rounds(64, {5, 5, 5, 5}) == Approx(c.local_sgd_rounds(64, 4, 5)));
  CHECK(c.async_updates(64, 0) == Approx(c.serial_steps(64)));
  CHECK(c.async_updates(64, 3) == Approx(c.serial_steps(64) * 4));  // kappa 1 by default
  const model::FixedCounts f(1000);
  CHECK(f.unequal_local_rounds(64, {4, 4}) == f.local_sgd_rounds(64, 2, 4));
  CHECK(f.unequal_local_rounds(64, {2, 6}) == std::ceil(1000 / (40.0 / 8)));
  const model::MeasuredTable t("batch,workers,tau,steps\n64,1,1,700\n64,2,4,100\n", "t.csv");
  CHECK(t.unequal_local_rounds(64, {4, 4}) == Approx(100));
  CHECK_THROWS_WITH(t.unequal_local_rounds(64, {2, 6}), Catch::Contains("round_budget_s"));
  CHECK(model::effective_round({3, 3, 3}).tau == Approx(3));
  CHECK(model::effective_round({3, 3, 3}).workers == Approx(3));
}

TEST_CASE("kappa fitted to measured async runs recovers the truth, leave-one-out predicts") {
  model::CriticalBatchFit fit;
  fit.min_steps = 500;
  fit.critical_batch = 1000;
  const double kappa = 0.4;
  std::vector<model::AsyncPoint> points;
  for (double staleness : {0.0, 1.0, 3.0, 7.0})
    points.push_back({64, staleness, model::fitted_steps(fit, 64, 1, 1) * (1 + kappa * staleness)});
  CHECK(model::fit_staleness_cost(fit, points) == Approx(kappa).epsilon(1e-5));
  const auto loo = model::leave_out_async_predictions(fit, points);
  for (size_t i = 0; i < points.size(); ++i)
    CHECK(loo[i] == Approx(points[i].updates).epsilon(1e-5));
  // Without staleness kappa cannot be fitted.
  CHECK(std::isnan(model::fit_staleness_cost(fit, {points[0]})));
  // Updates fewer than Na(b): kappa clamps at 0.
  CHECK(model::fit_staleness_cost(fit, {{64, 3, 100}}) == 0);
}

TEST_CASE("async and time-budget impossible jobs are input errors naming the key") {
  const auto platform = star({1e12, 1e12}, {1e12}, 1e10);
  const model::FixedCounts c(10);
  const auto w = test::round_workload();
  CHECK_THROWS_WITH(model::make_plan("async-ps", async_options(2, 8, 1, -1), w, platform, c),
                    Catch::Contains("<test>: staleness_bound: expected a whole number >= 0"));
  CHECK_THROWS_WITH(model::make_plan("async-ps", async_options(2, 8, 2), w, platform, c),
                    Catch::Contains("<test>: servers: expected between 1 and 1 (the server hosts"));
  const auto no_server_speed = star({1e12, 1e12}, {0}, 1e10);
  CHECK_THROWS_WITH(model::make_plan("async-ps", async_options(2, 8), w, no_server_speed, c),
                    Catch::Contains("host h2 speed: expected a processing speed > 0"));
  const auto no_servers = model::make_crossbar_platform({1e12, 1e12}, 1e9, 1e-5);
  CHECK_THROWS_WITH(model::make_plan("async-ps", async_options(2, 8), w, no_servers, c),
                    Catch::Contains("servers: expected between 1 and 0"));
  auto budget = test::options(2, 64);
  budget.round_budget_s = 0.01;  // one step is 64 ms
  CHECK_THROWS_WITH(model::make_plan("local-sgd", budget, w, platform, c),
                    Catch::Contains("<test>: round_budget_s: expected at least one step of every "
                                    "worker (0.064 s, a step of the slowest worker, host h0)"));
}

TEST_CASE("async-ps is not in the default strategies, every registered one can be asked for") {
  const auto defaults = model::default_strategy_names();
  CHECK(std::find(defaults.begin(), defaults.end(), "async-ps") == defaults.end());
  CHECK(defaults == std::vector<std::string>{"single", "sync", "local-sgd"});
  CHECK(model::find_strategy("async-ps") != nullptr);
}
