// bottleneck_baseline_test.cpp: the bottleneck-link baseline against closed forms on a star (K
// workers and one server behind a shared server link) and on a fat pipe.
#include "model/analytic/bottleneck_baseline.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/ir/collective.hpp"

using namespace tauplan;

namespace {

constexpr double kNicBps = 1e9;       // each worker's private link, each direction
constexpr double kNicLatency = 1e-3;  // s
constexpr double kServerBps = 2.5e8;  // the server's link, shared by every worker's flows
constexpr double kServerLatency = 5e-4;

/// Workers 0..K-1 on private split-duplex links (up 2w, down 2w+1); host K the server behind
/// one split-duplex link (up 2K, down 2K+1). Worker to worker: up(a), down(b); worker to
/// server: up(w), server down; server to worker: server up, down(w).
class StarRoutes : public model::RouteOracle {
 public:
  StarRoutes(std::vector<model::Link> links, int workers)
      : links_(std::move(links)), server_(workers) {}
  model::Route route(int src, int dst) const override {
    model::Route r;
    r.links.push_back(src == server_ ? 2 * server_ : 2 * src);
    r.links.push_back(dst == server_ ? 2 * server_ + 1 : 2 * dst + 1);
    model::total_route(r, links_);
    return r;
  }

 private:
  std::vector<model::Link> links_;
  int server_;
};

/// A star of `workers` workers (worker `slow_up`'s up link at `slow_bps` when >= 0) and a server.
model::Platform baseline_star(int workers, int slow_up = -1, double slow_bps = 0,
                              model::LinkSharing server_sharing = model::LinkSharing::SplitDuplex) {
  model::Platform p;
  for (int w = 0; w <= workers; ++w) {
    model::Host h;
    h.name = w == workers ? "ps" : "h" + std::to_string(w);
    h.role = w == workers ? model::HostRole::Server : model::HostRole::Worker;
    h.speed_flops = 1e9;
    p.hosts.push_back(h);
    const bool server = w == workers;
    const double bps = server ? kServerBps : kNicBps;
    const double lat = server ? kServerLatency : kNicLatency;
    const auto sharing = server ? server_sharing : model::LinkSharing::SplitDuplex;
    p.links.push_back({h.name + "_UP", w == slow_up ? slow_bps : bps, lat, sharing});
    p.links.push_back({h.name + "_DOWN", bps, lat, sharing});
  }
  p.routes = std::make_shared<StarRoutes>(p.links, workers);
  return p;
}

/// Workers 0..workers-1 push `bytes` each to the server, host `server` (default: `workers`).
model::TrafficStage pushes(int workers, double bytes, int server = -1) {
  model::TrafficStage s;
  s.phase = "push";
  for (int w = 0; w < workers; ++w)
    s.flows.push_back({w, server < 0 ? workers : server, bytes});
  return s;
}

}  // namespace

TEST_CASE("bottleneck baseline: two flows sharing one link take 2 x bytes / B + latency") {
  const model::Platform p = baseline_star(2);
  const double bytes = 1e6;
  const model::BottleneckBaseline b = model::bottleneck_baseline({pushes(2, bytes)}, p);
  // Both pushes cross ps_DOWN (250 MB/s): 2 MB there, 1 MB on each worker's 1 GB/s up link.
  const double expected = 2 * bytes / kServerBps + kNicLatency + kServerLatency;
  CHECK(b.comm_s == Approx(expected).epsilon(1e-12));
  REQUIRE(b.stages.size() == 1);
  CHECK(p.links[static_cast<size_t>(b.stages[0].link)].name == "ps_DOWN");
  CHECK(b.stages[0].link_bytes == Approx(2 * bytes));
  CHECK(b.stages[0].most_flows_on_a_link == 2);
  CHECK(b.contended());
  // One push alone: the alpha-beta time of its route, and no contention.
  const model::BottleneckBaseline alone = model::bottleneck_baseline({pushes(1, bytes, 2)}, p);
  CHECK(alone.comm_s == Approx(bytes / kServerBps + kNicLatency + kServerLatency).epsilon(1e-12));
  CHECK_FALSE(alone.contended());
}

TEST_CASE("bottleneck baseline: the busiest link is the one with the most seconds, not bytes") {
  // Worker 0's up link at 50 MB/s: its one push (1 MB) takes 20 ms there, longer than the
  // 3 MB of three pushes on the server's 250 MB/s link (12 ms). Ignoring the busiest link (the
  // server link's bytes, or any one route's narrowest bandwidth alone) gives another answer.
  const model::Platform p = baseline_star(3, 0, 5e7);
  const double bytes = 1e6;
  const model::BottleneckBaseline b = model::bottleneck_baseline({pushes(3, bytes)}, p);
  const double latency = kNicLatency + kServerLatency;
  CHECK(b.comm_s == Approx(bytes / 5e7 + latency).epsilon(1e-12));
  CHECK(p.links[static_cast<size_t>(b.stages[0].link)].name == "h0_UP");
  CHECK(b.comm_s != Approx(3 * bytes / kServerBps + latency));
  // At a 200 MB/s up link the server link decides again: 3 MB / 250 MB/s.
  const model::BottleneckBaseline fast =
      model::bottleneck_baseline({pushes(3, bytes)}, baseline_star(3, 0, 2e8));
  CHECK(fast.comm_s == Approx(3 * bytes / kServerBps + latency).epsilon(1e-12));
}

TEST_CASE("bottleneck baseline: a ring on the star's private links is the alpha-beta ring") {
  // K = 4 workers in a ring (i -> i+1): each step puts one chunk N/K on each up and down link,
  // 2(K-1) steps, as model/ir/collective_ring.cpp's 2(K-1)(alpha + N/(K beta)).
  const int k = 4;
  const model::Platform p = baseline_star(k);
  const double n = 8e6;
  std::vector<model::TrafficStage> stages;
  for (const char* phase : {"reduce-scatter", "all-gather"}) {
    model::TrafficStage s;
    s.phase = phase;
    s.repeat = k - 1;
    for (int i = 0; i < k; ++i)
      s.flows.push_back({i, (i + 1) % k, n / k});
    stages.push_back(s);
  }
  const model::BottleneckBaseline b = model::bottleneck_baseline(stages, p);
  const double expected = 2.0 * (k - 1) * (2 * kNicLatency + n / (k * kNicBps));
  CHECK(b.comm_s == Approx(expected).epsilon(1e-12));
  CHECK(b.comm_s == Approx(model::collective_algorithm("ring").time_s(
                               {model::CollectivePayload::Gradients, n, {0, 1, 2, 3}, {}}, p))
                        .epsilon(1e-12));
  CHECK(b.most_flows_on_a_link == 1);
  CHECK_FALSE(b.contended());
  // A ring alternating 0 -> 2 -> 1 -> 3 over the same links: still one flow per link.
  CHECK_FALSE(
      model::bottleneck_baseline({{"step", {{0, 2, 1}, {2, 1, 1}, {1, 3, 1}, {3, 0, 1}}, 1}}, p)
          .contended());
}

TEST_CASE("bottleneck baseline: a fat pipe gives each flow its whole bandwidth") {
  const model::Platform p = baseline_star(2, -1, 0, model::LinkSharing::FatPipe);
  const double bytes = 1e6;
  const model::BottleneckBaseline b = model::bottleneck_baseline({pushes(2, bytes)}, p);
  CHECK(b.comm_s == Approx(bytes / kServerBps + kNicLatency + kServerLatency).epsilon(1e-12));
  CHECK_FALSE(b.contended());
}

TEST_CASE("bottleneck baseline: jobs at once share their stages' links") {
  const model::Platform p = baseline_star(4);
  const double bytes = 1e6;
  // Two jobs of two workers each, pushing to the one server: four flows on ps_DOWN.
  model::TrafficStage a = pushes(2, bytes, 4);
  model::TrafficStage c;
  c.phase = "push";
  c.flows = {{2, 4, bytes}, {3, 4, bytes}};
  model::TrafficStage pull{"pull", {{4, 2, bytes}}, 2};
  const std::vector<model::TrafficStage> both = model::concurrent_stages({{a}, {c, pull}});
  REQUIRE(both.size() == 2);
  CHECK(both[0].flows.size() == 4);
  CHECK(both[1].repeat == 2);
  const model::BottleneckBaseline b = model::bottleneck_baseline(both, p);
  const double latency = kNicLatency + kServerLatency;
  CHECK(
      b.comm_s ==
      Approx(4 * bytes / kServerBps + latency + 2 * (bytes / kServerBps + latency)).epsilon(1e-12));
  CHECK(b.most_flows_on_a_link == 4);
}

TEST_CASE("bottleneck baseline: a round is the analytic compute plus the baseline's comm") {
  CHECK(model::baseline_round_s(0.3, 0.1, 0.05) == Approx(0.25));
  CHECK(std::isnan(model::baseline_round_s(0.3, std::nan(""), 0.05)));
  const model::Platform p = baseline_star(2);
  // Nothing to move: no time, no stage bottleneck.
  const model::BottleneckBaseline none =
      model::bottleneck_baseline({{"self", {{0, 0, 1e6}, {1, 2, 0}}, 3}}, p);
  CHECK(none.comm_s == 0);
  CHECK(none.stages[0].link == -1);
  CHECK_THROWS_AS(model::bottleneck_baseline({{"bad", {{0, 7, 1}}, 1}}, p), std::invalid_argument);
  CHECK_THROWS_AS(model::bottleneck_baseline({{"bad", {{0, 1, -1}}, 1}}, p), std::invalid_argument);
  CHECK_THROWS_AS(model::bottleneck_baseline({{"bad", {}, 0}}, p), std::invalid_argument);
}
