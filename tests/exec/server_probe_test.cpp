// server_probe_test.cpp: the server processing probe (exec/server_probe.hpp): its fit against
// exact points, the clamps and the refused fits; the timed loads against their closed forms.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "exec/server_probe.hpp"

using namespace tauplan;

TEST_CASE("server probe: the fit recovers seconds per message and per byte") {
  const double a = 3e-6, b = 2e-10;
  std::vector<exec::ServerProbePoint> points;
  for (const double bytes : {1e6, 2e6, 4e6})
    points.push_back({16, bytes, 16 * a + bytes * b});
  const exec::ServerProbeFit fit = exec::fit_server_points(points);
  CHECK(fit.seconds_per_message == Approx(a).epsilon(1e-9));
  CHECK(fit.seconds_per_byte == Approx(b).epsilon(1e-9));
  // Times that fall with size give a negative per-byte cost: clamped to 0, the messages alone.
  const exec::ServerProbeFit falling =
      exec::fit_server_points({{2, 1e6, 3e-3}, {2, 2e6, 2e-3}, {2, 4e6, 1e-3}});
  CHECK(falling.seconds_per_byte == 0);
  CHECK(falling.seconds_per_message == Approx(1e-3).epsilon(1e-12));
  // One ratio of bytes to messages cannot separate the two.
  CHECK_THROWS_AS(exec::fit_server_points({{2, 1e6, 1e-3}, {4, 2e6, 2e-3}}), std::invalid_argument);
}

TEST_CASE("server probe: a fit becomes work at the host's speed, less the optimizer's apply") {
  exec::ServerProbeFit fit;
  fit.seconds_per_message = 2e-6;
  fit.seconds_per_byte = 5e-10;
  // 1 Gflop/s: 2000 flop a message, 0.5 flop a byte; an async apply's optimizer charges 0.2 of it.
  const exec::ServerWork combine = exec::server_work_at(fit, 1e9, 0);
  CHECK(combine.flop_per_message == Approx(2000));
  CHECK(combine.flop_per_byte == Approx(0.5));
  const exec::ServerWork apply = exec::server_work_at(fit, 1e9, 0.2);
  CHECK(apply.flop_per_message == Approx(2000));
  CHECK(apply.flop_per_byte == Approx(0.3));
  // An apply timed faster than the optimizer's arithmetic alone leaves no work of its own, not
  // less.
  CHECK(exec::server_work_at(fit, 1e9, 0.8).flop_per_byte == 0);
}

TEST_CASE("server probe: the timed loads are the server's", "[timing]") {
  exec::ServerProbeRequest sync;
  sync.workers = 4;
  sync.shard_floats = 200000;
  sync.repeats = 5;
  const auto points = exec::time_server_processing(sync);
  REQUIRE(points.size() == 3);
  // Half, once and twice the shard: 2K messages, K shards of 4-byte floats per call.
  CHECK(points[0].messages == 8);
  CHECK(points[0].bytes == 4 * 100000.0 * 4);
  CHECK(points[2].bytes == 4 * 400000.0 * 4);
  for (const auto& p : points)
    CHECK(p.seconds > 0);
  // Four times the bytes take longer (a mean over 1.6 million floats against 0.4 million).
  CHECK(points[2].seconds > points[0].seconds);
  exec::ServerProbeRequest async = sync;
  async.kind = exec::ServerProbeKind::Apply;
  const auto updates = exec::time_server_processing(async);
  CHECK(updates[1].messages == 2);
  CHECK(updates[1].bytes == 200000.0 * 4);
  sync.shard_floats = 1;
  CHECK_THROWS_AS(exec::time_server_processing(sync), std::invalid_argument);
}
