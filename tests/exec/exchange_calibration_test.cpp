// exchange_calibration_test.cpp: the calibration of an asynchronous server's exchange between
// threads (exec/exchange_calibration.hpp): its conversion of a message line and a server fit
// into the calibrated platform's alpha, beta and server work (checked exactly on points of known
// lines), the mean of two measurements, and a real measurement's shape on this machine.
#include <catch2/catch.hpp>

#include <cmath>

#include "exec/exchange_calibration.hpp"
#include "model/base/error.hpp"

using namespace tauplan;

namespace {

model::Calibration sample() {
  model::Calibration c;
  c.hosts = 2;
  c.workload = "fashion-mlp";
  c.flop_per_sample = 1e6;
  c.per_sample_s = 1e-5;  // speed 1e11 flop/s
  c.update_flop = 4e5;
  c.step_intercept_s = 1e-4;
  c.alpha_s = 1;
  c.beta_Bps = 1;
  return c;
}

// Points on t = a + S / b, and applies on seconds = c m + d y, for S up to 1e6 bytes.
exec::ExchangeMeasurements exact(double a, double b, double c, double d) {
  exec::ExchangeMeasurements m;
  for (double s : {2.5e5, 5e5, 1e6})
    m.messages.push_back({s, a + s / b});
  for (double s : {5e5, 1e6, 2e6})
    m.applies.push_back({2, s, 2 * c + d * s});
  m.gradient_bytes = 1e6;
  return m;
}

}  // namespace

TEST_CASE("exchange calibration: a message a + S / b becomes alpha = 2a, beta = b / 2") {
  model::Calibration c = sample();
  const exec::ExchangeFit fit = exec::apply_exchange_fit(exact(3e-5, 5e9, 2e-6, 1e-10), 4e5, c);
  CHECK(c.alpha_s == Approx(6e-5).epsilon(1e-9));
  CHECK(c.beta_Bps == Approx(2.5e9).epsilon(1e-9));
  CHECK(c.r2_comm == Approx(1));
  // A ps push of S bytes by one worker on the platform: alpha / 2 + S / (2 beta) = one message.
  const double s = 7e5;
  CHECK(c.alpha_s / 2 + s / (2 * c.beta_Bps) == Approx(3e-5 + s / 5e9).epsilon(1e-9));
  // Server work at the speed 1e11: 2e-6 s per message; per byte 1e-10 s less the optimizer's
  // 4e5 flop (given) over 1e6 bytes, which the engines charge an apply already.
  CHECK(c.server_flop_per_message == Approx(2e-6 * 1e11).epsilon(1e-9));
  CHECK(c.server_flop_per_byte == Approx(1e-10 * 1e11 - 0.4).epsilon(1e-9));
  CHECK(fit.server.seconds_per_message == Approx(2e-6).epsilon(1e-9));
  // An apply of a shard of S bytes at the speed then takes its measured time again.
  const double apply_s =
      (4e5 / 1e6 * s + 2 * c.server_flop_per_message + c.server_flop_per_byte * s) /
      c.speed_flops();
  CHECK(apply_s == Approx(2 * 2e-6 + 1e-10 * s).epsilon(1e-9));
  const nlohmann::json j = exec::exchange_json(exact(3e-5, 5e9, 2e-6, 1e-10), fit);
  CHECK(j["message_alpha_s"].get<double>() == Approx(3e-5).epsilon(1e-9));
  CHECK(j["message_beta_Bps"].get<double>() == Approx(5e9).epsilon(1e-9));
  CHECK(j["messages"].size() == 3);
  CHECK(j["applies"].size() == 3);
}

TEST_CASE("exchange calibration: per-byte server work below the optimizer's is written as 0") {
  model::Calibration c = sample();
  exec::apply_exchange_fit(exact(3e-5, 5e9, 0, 1e-12), 4e5, c);
  CHECK(c.server_flop_per_byte == 0);
}

TEST_CASE("exchange calibration: a message time that does not grow is an InputError") {
  model::Calibration c = sample();
  exec::ExchangeMeasurements m = exact(3e-5, 5e9, 2e-6, 1e-10);
  for (exec::MessagePoint& p : m.messages)
    p.seconds = 1e-4 - p.bytes * 1e-12;
  CHECK_THROWS_AS(exec::apply_exchange_fit(m, 4e5, c), InputError);
}

TEST_CASE("exchange calibration: two measurements meet at their mean, size by size") {
  const exec::ExchangeMeasurements x = exact(1e-5, 1e9, 1e-6, 1e-10);
  const exec::ExchangeMeasurements y = exact(3e-5, 1e9, 3e-6, 1e-10);
  const exec::ExchangeMeasurements m = exec::mean_of(x, y);
  REQUIRE(m.messages.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(m.messages[i].seconds == Approx(2e-5 + m.messages[i].bytes / 1e9));
    CHECK(m.applies[i].seconds == Approx(4e-6 + 1e-10 * m.applies[i].bytes));
  }
}

TEST_CASE("exchange calibration: measured between two threads of this process") {
  const exec::ExchangeMeasurements m = exec::measure_thread_exchange(1 << 14, 2, 1e-4);
  REQUIRE(m.messages.size() == 3);
  CHECK(m.messages[0].bytes == 4096);
  CHECK(m.messages[1].bytes == 16384);
  CHECK(m.messages[2].bytes == 65536);
  CHECK(m.gradient_bytes == 65536);
  for (const exec::MessagePoint& p : m.messages)
    CHECK(p.seconds > 0);  // half a round trip: a time on the steady clock, never negative
  REQUIRE(m.applies.size() == 3);
  CHECK(m.applies[1].bytes == 65536);
  CHECK(m.applies[1].messages == 2);
  CHECK_FALSE(m.empty());
  CHECK_THROWS_AS(exec::measure_thread_exchange(15, 2, 0), std::invalid_argument);
  CHECK_THROWS_AS(exec::measure_thread_exchange(1 << 14, 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(exec::measure_thread_exchange(1 << 14, 2, -1), std::invalid_argument);
}
