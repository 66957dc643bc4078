// message_probe.cpp: see message_probe.hpp.
#include "exec/message_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace tauplan::exec {
namespace {

constexpr int kPingTag = 7101;
constexpr int kDataTag = 7102;
constexpr int kReplyTag = 7103;
constexpr int kResultTag = 7104;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check(const PeerGroup& peers, const MessageProbeRequest& r) {
  const int n = peers.size();
  for (const auto& [a, b] : r.pairs)
    if (a < 0 || b < 0 || a >= n || b >= n || a == b)
      throw std::invalid_argument("message probe: pair " + std::to_string(a) + ":" +
                                  std::to_string(b) + " is not two ranks of " + std::to_string(n));
  if (r.sizes_bytes.empty()) throw std::invalid_argument("message probe: no sizes");
  for (double s : r.sizes_bytes)
    if (!(s >= 4) || std::fmod(s, 4.0) != 0 || s > 4.0 * 2147483647.0)
      throw std::invalid_argument("message probe: size " + std::to_string(s) +
                                  " bytes is not a positive multiple of 4");
  if (r.repeats < 1 || r.pings < 1 || r.ping_bytes < 4 || r.ping_bytes % 4 != 0)
    throw std::invalid_argument(
        "message probe: repeats, pings >= 1 and ping_bytes a multiple of 4");
}

}  // namespace

std::vector<MessageProbeRoute> run_message_probe(PeerGroup& peers,
                                                 const MessageProbeRequest& request) {
  check(peers, request);
  const int me = peers.rank();
  const std::size_t ping_floats = static_cast<std::size_t>(request.ping_bytes / 4);
  std::size_t largest = ping_floats;
  for (double s : request.sizes_bytes)
    largest = std::max(largest, static_cast<std::size_t>(s / 4));
  std::vector<float> buffer(largest, 1.0f);
  std::vector<float> small(ping_floats, 0.0f);
  std::vector<MessageProbeRoute> routes;
  const auto barrier = [&] { request.barrier ? request.barrier() : peers.barrier(); };

  for (const auto& [src, dst] : request.pairs) {
    barrier();
    MessageProbeRoute route;
    route.src = src;
    route.dst = dst;
    if (me == dst) {
      // Echo every ping, then answer every transfer with a small message.
      for (int i = 0; i < request.pings + 3; ++i) {
        peers.recv(src, small.data(), ping_floats, kPingTag);
        peers.send(src, small.data(), ping_floats, kPingTag);
      }
      for (int pass = 0; pass < request.repeats + 1; ++pass)
        for (double s : request.sizes_bytes) {
          peers.recv(src, buffer.data(), static_cast<std::size_t>(s / 4), kDataTag);
          peers.send(src, small.data(), ping_floats, kReplyTag);
        }
    } else if (me == src) {
      std::vector<double> round_trips;
      for (int i = 0; i < request.pings + 3; ++i) {
        const double t0 = now_s();
        peers.send(dst, small.data(), ping_floats, kPingTag);
        peers.recv(dst, small.data(), ping_floats, kPingTag);
        if (i >= 3) round_trips.push_back(now_s() - t0);
      }
      route.small_round_trip_s = *std::min_element(round_trips.begin(), round_trips.end());
      // A warm-up pass over every size, then `repeats` passes: a size's repeats are spread over
      // the route's time, so that one stall of the machine slows one repeat of several sizes
      // rather than every repeat of one (which no lower envelope can see through).
      for (int pass = 0; pass < request.repeats + 1; ++pass)
        for (double s : request.sizes_bytes) {
          const double t0 = now_s();
          peers.send(dst, buffer.data(), static_cast<std::size_t>(s / 4), kDataTag);
          peers.recv(dst, small.data(), ping_floats, kReplyTag);
          const double exchange = now_s() - t0;
          if (pass > 0) route.samples.emplace_back(s, exchange - 0.5 * route.small_round_trip_s);
        }
    }
    // The sender's numbers go to rank 0: [round trip, then (bytes, seconds) per sample].
    const std::size_t count = 1 + 2 * request.sizes_bytes.size() * request.repeats;
    std::vector<float> packed(count, 0.0f);
    if (me == src) {
      packed[0] = static_cast<float>(route.small_round_trip_s);
      for (std::size_t i = 0; i < route.samples.size(); ++i) {
        packed[1 + 2 * i] = static_cast<float>(route.samples[i].first);
        packed[2 + 2 * i] = static_cast<float>(route.samples[i].second);
      }
      if (me != 0) peers.send(0, packed.data(), count, kResultTag);
    }
    if (me == 0) {
      if (src != 0) {
        peers.recv(src, packed.data(), count, kResultTag);
        route.small_round_trip_s = static_cast<double>(packed[0]);
        route.samples.clear();
        for (std::size_t j = 0; j < (count - 1) / 2; ++j)
          route.samples.emplace_back(static_cast<double>(packed[1 + 2 * j]),
                                     static_cast<double>(packed[2 + 2 * j]));
      }
      std::vector<double> x, y;
      for (const auto& [bytes, seconds] : route.samples) {
        x.push_back(bytes);
        y.push_back(seconds);
      }
      if (request.sizes_bytes.size() >= 2 &&
          *std::max_element(x.begin(), x.end()) > *std::min_element(x.begin(), x.end())) {
        route.fit = model::fit_line(x, y, "message probe");
        route.alpha_s = std::max(0.0, route.fit.intercept);
        route.beta_Bps = route.fit.slope > 0 ? 1.0 / route.fit.slope : 0.0;
      }
      routes.push_back(route);
    }
  }
  barrier();
  return routes;
}

}  // namespace tauplan::exec
