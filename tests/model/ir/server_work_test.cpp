// server_work_test.cpp: a parameter server's own processing (model/ir/server_work.hpp) in the
// analytic engine: the synchronous ps call's server stage and the asynchronous apply, against
// closed forms on a code-made crossbar, and the props' bad values.
#include <catch2/catch.hpp>

#include "model/analytic/analytic.hpp"
#include "model/base/error.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/server_work.hpp"
#include "model/ir/strategy.hpp"
#include "tests/model/test_support.hpp"

using namespace tauplan;

namespace {

// Four workers and one server at 1e12 flop/s (the server's speed set per case), private links of
// 1e9 B/s and 10 us.
model::Platform four_workers_one_server(double server_speed, const std::string& per_message,
                                        const std::string& per_byte) {
  model::Platform p = model::make_crossbar_platform(
      {1e12, 1e12, 1e12, 1e12, server_speed}, 1e9, 10e-6, 0,
      {model::HostRole::Worker, model::HostRole::Worker, model::HostRole::Worker,
       model::HostRole::Worker, model::HostRole::Server});
  p.source_file = "crossbar.xml";
  model::Host& server = p.hosts[4];
  if (!per_message.empty()) server.properties["server_flop_per_message"] = per_message;
  if (!per_byte.empty()) server.properties["server_flop_per_byte"] = per_byte;
  return p;
}

double ps_call_s(const model::Platform& p, double bytes) {
  model::CollectiveCall call;
  call.bytes = bytes;
  call.hosts = {0, 1, 2, 3};
  call.servers = {4};
  return model::collective_algorithm("ps").time_s(call, p);
}

}  // namespace

TEST_CASE("server work: the synchronous ps call adds the server's processing at its speed") {
  const double bytes = 4e6;
  const double bare = ps_call_s(four_workers_one_server(1e12, "", ""), bytes);
  // 2K = 8 messages at 1e6 flop, K x N = 1.6e7 bytes at 100 flop: 8e6 + 1.6e9 flop.
  const double work_flop = 8 * 1e6 + 4 * bytes * 100;
  CHECK(ps_call_s(four_workers_one_server(1e12, "1e6", "100"), bytes) - bare ==
        Approx(work_flop / 1e12).epsilon(1e-12));
  // Twice the server's speed, half the processing; the props alone, no other change.
  CHECK(ps_call_s(four_workers_one_server(2e12, "1e6", "100"), bytes) - bare ==
        Approx(work_flop / 2e12).epsilon(1e-12));
  CHECK(ps_call_s(four_workers_one_server(1e12, "0", "0"), bytes) == bare);
}

TEST_CASE("server work: loads of a synchronous call and of an asynchronous update") {
  const model::ServerLoad sync = model::sync_server_load(8, 1e6);
  CHECK(sync.messages == 16);
  CHECK(sync.bytes == 8e6);
  const model::ServerLoad update = model::async_update_load(5e5);
  CHECK(update.messages == 2);
  CHECK(update.bytes == 5e5);
  CHECK(model::server_flop({3, 0.5}, update) == Approx(6 + 2.5e5));
}

TEST_CASE("server work: an async server saturates at 1 / (apply + its processing)") {
  // One update: 2e5 flop of SGD (2 per parameter) plus 2 messages x 1e9 + 4e5 bytes x 1e5 flop
  // = 4.22e10 flop, 0.0422 s at 1e12 flop/s; the workers' cycle (0.1 s compute) gives K / T =
  // 40 updates/s, the server 23.7: server-bound.
  const model::Platform p = four_workers_one_server(1e12, "1e9", "1e5");
  const model::Workload w = test::async_test_workload(1e5);
  const model::StrategyOptions o = test::async_test_options(4);
  const auto plan = model::make_plan("async-ps", o, w, p, model::FixedCounts(100));
  const model::ResultRow row = model::analyze(plan, p);
  CHECK(row.round_s == Approx((2e5 + 2 * 1e9 + 4e5 * 1e5) / 1e12).epsilon(1e-12));
  CHECK(model::to_json(row)["bottleneck"] == "server " + p.hosts[4].name + " processor");
}

TEST_CASE("server work: a bad prop is one error naming the file, the host and the prop") {
  for (const char* bad : {"-1", "fast", "1e300"}) {
    const model::Platform p = four_workers_one_server(1e12, bad, "");
    try {
      ps_call_s(p, 1e6);
      FAIL("accepted server_flop_per_message = " << bad);
    } catch (const tauplan::InputError& e) {
      const std::string what = e.what();
      CHECK(what.find("crossbar.xml") != std::string::npos);
      CHECK(what.find("server_flop_per_message") != std::string::npos);
      CHECK(what.find(p.hosts[4].name) != std::string::npos);
    }
  }
  const model::Platform slow = four_workers_one_server(0, "1", "1");
  CHECK_THROWS_AS(ps_call_s(slow, 1e6), tauplan::InputError);
}
