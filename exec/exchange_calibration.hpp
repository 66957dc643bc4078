// exchange_calibration.hpp: what one asynchronous update's exchange costs when the workers and
// the parameter server are threads of one process.
//
// An async-ps worker pushes its gradient to the server as a message, the server applies it to the
// parameters and replies with them as a message (exec/async_ranks.cpp over a ThreadPeerHub). The
// threads combine that the synchronous calibration times (exec/calibrate.hpp) reads the workers'
// buffers in place and copies nothing, so a platform fitted to it charged an asynchronous
// exchange about a third of what it took (experiments/async/README.md, 2026-11-29). This
// calibration measures the exchange's parts with the code a run uses: messages between two
// threads of a ThreadPeerHub at several sizes, sent as an update sends them (the worker busy for
// a step first, the server blocked in its receive meanwhile: a copy in, a hand-over, the wake-up
// of a thread that has waited, a copy out), half of each round trip fitted to t = a + S / b (plain
// least squares: the whole gradient's time weighs most); and
// the server's apply of a shard at three sizes (exec/server_probe.hpp), fitted to seconds =
// c x messages + d x bytes. On the calibrated
// platform (model/inputs/calibration.hpp) a ps push or pull of S bytes by one worker costs
// alpha/2 + S/(2 beta), so alpha = 2a and beta = b/2 make it one message; c and d times the
// reducer's speed become its server_flop_per_message and server_flop_per_byte, less, per byte,
// the optimizer's arithmetic that the engines charge an apply already (model::server_apply_flop
// over the gradient's bytes), so that the apply is counted once.
// What it leaves out: several workers' messages at once (the engines share the reducer's link
// between them), and the scheduler's delays when threads outnumber cores.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/server_probe.hpp"
#include "model/inputs/calibration.hpp"

namespace tauplan::exec {

/// One size of one-way message between two threads: the median of its timed transfers.
struct MessagePoint {
  double bytes = 0;
  double seconds = 0;
};

struct ExchangeMeasurements {
  std::vector<MessagePoint> messages;     ///< one-way messages between two threads
  std::vector<ServerProbePoint> applies;  ///< the server's apply of one pushed shard
  double gradient_bytes = 0;              ///< the whole gradient: 4 x floats
  bool empty() const { return messages.empty() && applies.empty(); }
};

/// Measures messages of floats / 16, floats / 4 and floats floats (the gradient a worker pushes
/// to a single server; rounded down to 16 floats), `repeats` round trips each after `gap_s` of
/// the sender busy (the worker's step), and the apply of a shard of `floats` (half, once and
/// twice). Throws std::invalid_argument for floats < 16, repeats < 1 or a gap outside [0, 1] s.
ExchangeMeasurements measure_thread_exchange(std::size_t floats, int repeats, double gap_s);

/// Point by point, what two measurements of one machine agree on: the mean of each pair of
/// points of one size (wall-clock times that the load of the moment bears, as a run does).
ExchangeMeasurements mean_of(const ExchangeMeasurements& x, const ExchangeMeasurements& y);

/// The fits of a measurement.
struct ExchangeFit {
  model::LinearFit message;  ///< one-way seconds against bytes, least squares
  ServerProbeFit server;     ///< seconds = a x messages + b x bytes, through the origin
};

/// Fits the measurement and writes it into `calibration`: alpha_s = 2 a, beta_Bps = b / 2 and
/// r2_comm of the message fit, and the reducer's server flop (seconds x the calibration's
/// speed; per byte, less `optimizer_apply_flop` / gradient_bytes, at least 0: the flop the
/// engines charge an apply of the whole gradient already, model::server_apply_flop). Throws
/// InputError (origin "<calibration>") when the message time does not grow with the size, and
/// std::invalid_argument from the server fit.
ExchangeFit apply_exchange_fit(const ExchangeMeasurements& measured, double optimizer_apply_flop,
                               model::Calibration& calibration);

/// The measured points and the fits as JSON: {messages: [{bytes, seconds}], applies: [{messages,
/// bytes, seconds}], message_alpha_s, message_beta_Bps, r2_message, message_max_relative_residual,
/// server_seconds_per_message, server_seconds_per_byte}.
nlohmann::json exchange_json(const ExchangeMeasurements& measured, const ExchangeFit& fit);

}  // namespace tauplan::exec
