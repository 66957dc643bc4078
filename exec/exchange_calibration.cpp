// exchange_calibration.cpp: see exchange_calibration.hpp.
#include "exec/exchange_calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "exec/peer_group.hpp"
#include "exec/trainer.hpp"  // median
#include "model/base/error.hpp"

namespace tauplan::exec {
namespace {

/// Spins on the steady clock for `seconds` (a worker computing its step: its core stays busy).
void busy_for(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}

/// Messages between two threads of a hub as an asynchronous update sends them: thread 0 (the
/// worker) is busy for `gap_s`, then sends S bytes to thread 1 (the server, blocked in a receive
/// meanwhile), which sends them back at once; half the round trip, the median per size.
std::vector<MessagePoint> measure_messages(const std::vector<double>& sizes_bytes, int repeats,
                                           double gap_s) {
  constexpr int kTag = 7401;
  ThreadPeerHub hub(2);
  std::size_t largest = 0;
  for (double bytes : sizes_bytes)
    largest = std::max(largest, static_cast<std::size_t>(bytes / 4));
  std::exception_ptr failure;
  std::thread server([&] {
    try {
      std::vector<float> buffer(largest, 0.0f);
      for (double bytes : sizes_bytes)
        for (int i = 0; i <= repeats; ++i) {
          const auto n = static_cast<std::size_t>(bytes / 4);
          hub.peer(1).recv(0, buffer.data(), n, kTag);
          hub.peer(1).send(0, buffer.data(), n, kTag);
        }
    } catch (...) {
      failure = std::current_exception();
      hub.abort();
    }
  });
  std::vector<MessagePoint> points;
  try {
    std::vector<float> buffer(largest, 1.0f);
    for (double bytes : sizes_bytes) {
      const auto n = static_cast<std::size_t>(bytes / 4);
      std::vector<double> seconds;
      for (int i = 0; i <= repeats; ++i) {  // the first is a warm-up
        busy_for(gap_s);
        const auto start = std::chrono::steady_clock::now();
        hub.peer(0).send(1, buffer.data(), n, kTag);
        hub.peer(0).recv(1, buffer.data(), n, kTag);
        const std::chrono::duration<double> round_trip = std::chrono::steady_clock::now() - start;
        if (i > 0) seconds.push_back(0.5 * round_trip.count());
      }
      points.push_back({bytes, median(seconds)});
    }
  } catch (...) {
    hub.abort();
    server.join();
    // The server's own failure is the cause; this thread's is the abort that followed it.
    if (failure) std::rethrow_exception(failure);
    throw;
  }
  server.join();
  if (failure) std::rethrow_exception(failure);
  return points;
}

}  // namespace

ExchangeMeasurements measure_thread_exchange(std::size_t floats, int repeats, double gap_s) {
  if (floats < 16 || repeats < 1 || !(gap_s >= 0 && gap_s <= 1))
    throw std::invalid_argument(
        "exchange calibration: 16 floats or more, repeats >= 1 and a gap of 0 to 1 s");
  ExchangeMeasurements out;
  // Sizes a decade apart and more: a thread's wake-up varies by tens of microseconds on a
  // loaded machine, the copies of a few hundred kilobytes take about as long.
  const double bytes = 4.0 * static_cast<double>(floats / 16 * 16);
  out.messages = measure_messages({bytes / 16, bytes / 4, bytes}, repeats, gap_s);
  out.gradient_bytes = 4.0 * static_cast<double>(floats);
  ServerProbeRequest apply;
  apply.kind = ServerProbeKind::Apply;
  apply.shard_floats = floats;
  out.applies = time_server_processing(apply);
  return out;
}

ExchangeMeasurements mean_of(const ExchangeMeasurements& x, const ExchangeMeasurements& y) {
  ExchangeMeasurements out = x;
  for (std::size_t i = 0; i < out.messages.size() && i < y.messages.size(); ++i)
    if (y.messages[i].bytes == out.messages[i].bytes)
      out.messages[i].seconds = 0.5 * (out.messages[i].seconds + y.messages[i].seconds);
  for (std::size_t i = 0; i < out.applies.size() && i < y.applies.size(); ++i)
    if (y.applies[i].bytes == out.applies[i].bytes)
      out.applies[i].seconds = 0.5 * (out.applies[i].seconds + y.applies[i].seconds);
  return out;
}

ExchangeFit apply_exchange_fit(const ExchangeMeasurements& measured, double optimizer_apply_flop,
                               model::Calibration& calibration) {
  ExchangeFit fit;
  std::vector<double> bytes, seconds;
  for (const MessagePoint& p : measured.messages) {
    bytes.push_back(p.bytes);
    seconds.push_back(p.seconds);
  }
  // Plain least squares: the whole gradient is the message a run sends, and its time the one to
  // get right (a fit weighted by 1 / t^2 let the small sizes' wake-up noise set the line, and
  // missed the whole gradient's time by 4x at R^2 0).
  fit.message = model::fit_line(bytes, seconds, "message fit");
  if (!(fit.message.slope > 0)) {
    std::string got;
    for (const MessagePoint& p : measured.messages)
      got +=
          fmt::format("{}{:.1f} us at {:.0f} B", got.empty() ? "" : ", ", p.seconds * 1e6, p.bytes);
    throw InputError("<calibration>", "messages",
                     "message sizes far enough apart that the one-way time grows with them", got);
  }
  fit.server = fit_server_points(measured.applies);
  calibration.alpha_s = 2 * std::max(0.0, fit.message.intercept);
  calibration.beta_Bps = 0.5 / fit.message.slope;
  calibration.r2_comm = fit.message.r2;
  const ServerWork work = server_work_at(
      fit.server, calibration.speed_flops(),
      measured.gradient_bytes > 0 ? optimizer_apply_flop / measured.gradient_bytes : 0);
  calibration.server_flop_per_message = work.flop_per_message;
  calibration.server_flop_per_byte = work.flop_per_byte;
  return fit;
}

nlohmann::json exchange_json(const ExchangeMeasurements& measured, const ExchangeFit& fit) {
  nlohmann::json messages = nlohmann::json::array(), applies = nlohmann::json::array();
  for (const MessagePoint& p : measured.messages)
    messages.push_back({{"bytes", p.bytes}, {"seconds", p.seconds}});
  for (const ServerProbePoint& p : measured.applies)
    applies.push_back({{"messages", p.messages}, {"bytes", p.bytes}, {"seconds", p.seconds}});
  return {{"messages", messages},
          {"applies", applies},
          {"message_alpha_s", std::max(0.0, fit.message.intercept)},
          {"message_beta_Bps", 1.0 / fit.message.slope},
          {"r2_message", fit.message.r2},
          {"message_max_relative_residual", fit.message.max_relative_residual},
          {"server_seconds_per_message", fit.server.seconds_per_message},
          {"server_seconds_per_byte", fit.server.seconds_per_byte}};
}

}  // namespace tauplan::exec
