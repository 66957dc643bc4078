// server_processing.hpp: a parameter-server rank's own work, as the rank measured it.
//
// A server rank computes between its waits on the network: the synchronous `ps` and `sparknet`
// (p2p_collective.cpp's serve_push_pull) combine the K pushed shards and post K replies, the
// asynchronous server (async_ranks.cpp) applies one worker's gradient shard and prepares its reply.
// Each such unit is a call (sync: one push-combine-reply; async: one update applied), recorded
// with its processing seconds on the steady clock (waits for messages excluded), the messages it
// handled (sync: K received + K sent; async: the push and its reply) and the payload bytes it
// combined or applied (sync: K x the shard's floats x 4; async: the shard's floats x 4; the
// weight and header that ride along are not payload). These are the measurements that a fit of
// seconds = a x messages + b x bytes reads (model/ir/server_work.hpp's server_flop_per_message and
// server_flop_per_byte at the host's speed). report.hpp turns a record into the `servers`
// objects of a measurement's JSON. What it leaves out: the CPU time the MPI library spends
// moving bytes (inside the waits), and calls that only relay (the stop messages, pull requests).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace tauplan::exec {

struct ServerProcessing {
  using Clock = std::chrono::steady_clock;

  int server = 0;    ///< j, the server's index (rank K + j)
  std::string host;  ///< where the rank ran (empty: unknown)
  long long calls = 0;
  long long messages = 0;
  long long bytes = 0;
  double processing_s = 0;
  /// Every call's processing seconds, messages and payload bytes, in call order.
  std::vector<double> call_processing_s;
  std::vector<long long> call_messages;
  std::vector<long long> call_bytes;
  bool started = false;
  Clock::time_point first{};  ///< the first call's first message arrived
  Clock::time_point last{};   ///< the last call ended

  /// Marks the arrival of a call's first message (the first such arrival starts the wall).
  void arrive(Clock::time_point at) {
    if (started) return;
    started = true;
    first = last = at;
  }
  /// One call of `seconds` processing; returns its index (for add_seconds).
  std::size_t add(double seconds, long long call_message_count, long long call_byte_count) {
    ++calls;
    messages += call_message_count;
    bytes += call_byte_count;
    processing_s += seconds;
    call_processing_s.push_back(seconds);
    call_messages.push_back(call_message_count);
    call_bytes.push_back(call_byte_count);
    return call_processing_s.size() - 1;
  }
  /// More processing for call `index` (an async reply prepared after its update).
  void add_seconds(std::size_t index, double seconds) {
    call_processing_s.at(index) += seconds;
    processing_s += seconds;
  }
  /// Marks the end of a call.
  void end(Clock::time_point at) {
    if (started && at > last) last = at;
  }
  /// The serving time: the first call's first message to the end of the last call.
  double wall_s() const {
    return started ? std::chrono::duration<double>(last - first).count() : 0;
  }
};

}  // namespace tauplan::exec
