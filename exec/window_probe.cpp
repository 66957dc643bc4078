// window_probe.cpp: see window_probe.hpp.
#include "exec/window_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "model/base/statistics.hpp"

namespace tauplan::exec {
namespace {

constexpr int kPingTag = 7201;
constexpr int kEchoTag = 7202;
constexpr int kStreamTag = 7203;
constexpr int kNextTag = 7204;
constexpr int kResultTag = 7205;
constexpr int kWarmupPings = 3;

/// The control messages: a ping (kind kPing or kStop), an echo (kind kEcho, or kDone once X
/// has sent every message; index: the message leaving when X echoed), Y's "next".
struct Control {
  std::int32_t kind = 0;
  std::int32_t index = 0;
};
constexpr std::int32_t kPing = 1;
constexpr std::int32_t kStop = 2;
constexpr std::int32_t kEcho = 3;
constexpr std::int32_t kDone = 4;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check(const PeerGroup& peers, const QueuedWindowRequest& r) {
  const int n = peers.size();
  for (const WindowTriple& t : r.triples) {
    const bool in_range = t.sender >= 0 && t.receiver >= 0 && t.pinger >= 0 && t.sender < n &&
                          t.receiver < n && t.pinger < n;
    if (!in_range || t.sender == t.receiver || t.sender == t.pinger || t.receiver == t.pinger)
      throw std::invalid_argument("queued-window probe: triple " + std::to_string(t.sender) + ":" +
                                  std::to_string(t.receiver) + ":" + std::to_string(t.pinger) +
                                  " is not three distinct ranks of " + std::to_string(n));
  }
  if (!(r.message_bytes >= 4) || std::fmod(r.message_bytes, 4.0) != 0 ||
      r.message_bytes > 4.0 * 2147483647.0)
    throw std::invalid_argument("queued-window probe: message size " +
                                std::to_string(r.message_bytes) +
                                " bytes is not a positive multiple of 4");
  if (r.messages < 2 || r.quiet_pings < 1)
    throw std::invalid_argument("queued-window probe: messages >= 2 and quiet_pings >= 1");
}

void send_control(PeerGroup& peers, int to, Control c, int tag) {
  peers.send_bytes(to, &c, sizeof c, tag);
}

Control recv_control(PeerGroup& peers, int from, int tag, PeerEnvelope* envelope = nullptr) {
  std::vector<char> bytes;
  const PeerEnvelope e = peers.recv_any(from, tag, bytes);
  if (bytes.size() != sizeof(Control))
    throw std::runtime_error("queued-window probe: a control message of " +
                             std::to_string(bytes.size()) + " bytes from rank " +
                             std::to_string(e.from));
  Control c;
  std::memcpy(&c, bytes.data(), sizeof c);
  if (envelope) *envelope = e;
  return c;
}

/// Z's side of one round trip: the echo, and the seconds it took.
Control ping_once(PeerGroup& peers, int sender, double& seconds) {
  const double t0 = now_s();
  send_control(peers, sender, {kPing, 0}, kPingTag);
  const Control echo = recv_control(peers, sender, kEchoTag);
  seconds = now_s() - t0;
  return echo;
}

/// X's side while idle: echoes pings until the stop.
void echo_until_stop(PeerGroup& peers, int pinger) {
  while (recv_control(peers, pinger, kPingTag).kind != kStop)
    send_control(peers, pinger, {kEcho, 0}, kEchoTag);
}

/// X's side of the stream: each message once Y has the one before, pings echoed meanwhile.
void stream_and_echo(PeerGroup& peers, const WindowTriple& t, const QueuedWindowRequest& r) {
  const std::size_t floats = static_cast<std::size_t>(r.message_bytes / 4);
  const std::vector<float> data(floats, 1.0f);
  int leaving = 0;
  peers.post_send(t.receiver, data.data(), floats, kStreamTag);
  while (true) {
    PeerEnvelope e;
    const Control c = recv_control(peers, PeerGroup::kAnySource, PeerGroup::kAnyTag, &e);
    if (e.tag == kNextTag && e.from == t.receiver) {
      if (++leaving < r.messages) peers.post_send(t.receiver, data.data(), floats, kStreamTag);
    } else if (e.tag == kPingTag && e.from == t.pinger) {
      if (c.kind == kStop) break;
      send_control(peers, t.pinger, {leaving < r.messages ? kEcho : kDone, leaving}, kEchoTag);
    } else {
      throw std::runtime_error("queued-window probe: an unexpected message, tag " +
                               std::to_string(e.tag) + " from rank " + std::to_string(e.from));
    }
  }
  peers.complete_posted();
}

}  // namespace

std::vector<QueuedWindowMeasurement> run_queued_window_probe(PeerGroup& peers,
                                                             const QueuedWindowRequest& request) {
  check(peers, request);
  const int me = peers.rank();
  const std::size_t floats = static_cast<std::size_t>(request.message_bytes / 4);
  const auto barrier = [&] { request.barrier ? request.barrier() : peers.barrier(); };
  std::vector<QueuedWindowMeasurement> measured;

  for (const WindowTriple& t : request.triples) {
    QueuedWindowMeasurement m;
    m.triple = t;
    barrier();
    if (me == t.pinger) {
      for (int i = 0; i < kWarmupPings + request.quiet_pings; ++i) {
        double seconds = 0;
        ping_once(peers, t.sender, seconds);
        if (i >= kWarmupPings) m.quiet_round_trips_s.push_back(seconds);
      }
      send_control(peers, t.sender, {kStop, 0}, kPingTag);
    } else if (me == t.sender) {
      echo_until_stop(peers, t.pinger);
    }
    barrier();
    if (me == t.sender) {
      stream_and_echo(peers, t, request);
    } else if (me == t.receiver) {
      std::vector<float> buffer(floats);
      for (int k = 0; k < request.messages; ++k) {
        peers.recv(t.sender, buffer.data(), floats, kStreamTag);
        send_control(peers, t.sender, {kEcho, k}, kNextTag);
      }
      peers.complete_sends();
    } else if (me == t.pinger) {
      while (true) {
        double seconds = 0;
        const Control echo = ping_once(peers, t.sender, seconds);
        if (echo.kind == kDone) break;
        m.busy_round_trips_s.push_back(seconds);
        m.busy_message.push_back(echo.index);
      }
      send_control(peers, t.sender, {kStop, 0}, kPingTag);
    }
    // Z's numbers go to rank 0: [quiet count, busy count, quiet..., busy..., messages...].
    if (me == t.pinger && me != 0) {
      std::vector<float> packed{static_cast<float>(m.quiet_round_trips_s.size()),
                                static_cast<float>(m.busy_round_trips_s.size())};
      for (double v : m.quiet_round_trips_s)
        packed.push_back(static_cast<float>(v));
      for (double v : m.busy_round_trips_s)
        packed.push_back(static_cast<float>(v));
      for (int k : m.busy_message)
        packed.push_back(static_cast<float>(k));
      const float count = static_cast<float>(packed.size());
      peers.send(0, &count, 1, kResultTag);
      peers.send(0, packed.data(), packed.size(), kResultTag);
    }
    if (me == 0) {
      if (t.pinger != 0) {
        float count = 0;
        peers.recv(t.pinger, &count, 1, kResultTag);
        std::vector<float> packed(static_cast<std::size_t>(count));
        peers.recv(t.pinger, packed.data(), packed.size(), kResultTag);
        const std::size_t quiet = static_cast<std::size_t>(packed.at(0));
        const std::size_t busy = static_cast<std::size_t>(packed.at(1));
        for (std::size_t i = 0; i < quiet; ++i)
          m.quiet_round_trips_s.push_back(static_cast<double>(packed.at(2 + i)));
        for (std::size_t i = 0; i < busy; ++i) {
          m.busy_round_trips_s.push_back(static_cast<double>(packed.at(2 + quiet + i)));
          m.busy_message.push_back(static_cast<int>(packed.at(2 + quiet + busy + i)));
        }
      }
      m.quiet_median_s = model::median(m.quiet_round_trips_s);
      std::map<int, double> largest;  // per message after the first
      for (std::size_t i = 0; i < m.busy_round_trips_s.size(); ++i)
        if (m.busy_message[i] >= 1)
          largest[m.busy_message[i]] =
              std::max(largest[m.busy_message[i]], m.busy_round_trips_s[i]);
      for (const auto& [message, seconds] : largest)
        m.message_waits_s.push_back(std::max(0.0, seconds - m.quiet_median_s));
      m.queue_wait_s = model::median(m.message_waits_s);
      measured.push_back(std::move(m));
    }
  }
  barrier();
  return measured;
}

}  // namespace tauplan::exec
