// rendezvous.cpp: a collective's messages host by host, with a rendezvous above the eager limit
// (see rendezvous.hpp).
#include "sim/rendezvous.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace sg4 = simgrid::s4u;

namespace tauplan::sim {
namespace {

enum class Transfer { Request, ClearToSend, Bytes };

struct Message {
  int step = 0;
  int src = 0;
  int dst = 0;
  double bytes = 0;
  bool rendezvous = false;
  bool request_arrived = false;
  bool clear_sent = false;
  bool bytes_arrived = false;
  bool send_done = false;
  bool receive_done = false;
};

struct HostProgress {
  std::vector<int> steps;  ///< the steps this host takes part in, in order
  std::size_t position = 0;
  int current() const { return position < steps.size() ? steps[position] : -1; }
};

class RendezvousRun {
 public:
  RendezvousRun(const std::vector<const FlowStage*>& steps, const model::MessageProtocol& protocol,
                const std::vector<sg4::Host*>& hosts, std::vector<sg4::CommPtr>& comms,
                long long& transfers_started)
      : hosts_(hosts),
        comms_(comms),
        transfers_started_(transfers_started),
        queued_window_bytes_(protocol.queued_window_bytes) {
    progress_.resize(hosts.size());
    by_step_.resize(steps.size());
    for (std::size_t k = 0; k < steps.size(); ++k) {
      for (const Flow& flow : steps[k]->flows) {
        if (flow.src_host == flow.dst_host || flow.bytes <= 0) continue;
        Message m;
        m.step = static_cast<int>(k);
        m.src = flow.src_host;
        m.dst = flow.dst_host;
        m.bytes = flow.bytes;
        m.rendezvous = protocol.latency_trips(flow.bytes, flow.two_way) > 1;
        by_step_[k].push_back(static_cast<int>(messages_.size()));
        messages_.push_back(m);
        for (int host : {m.src, m.dst}) {
          std::vector<int>& list = progress_.at(static_cast<std::size_t>(host)).steps;
          if (list.empty() || list.back() != m.step) list.push_back(m.step);
        }
      }
    }
    undelivered_ = messages_.size();
  }

  bool run(const std::function<bool()>& stop) {
    stop_ = &stop;
    for (std::size_t h = 0; h < progress_.size(); ++h)
      if (!progress_[h].steps.empty()) enter(static_cast<int>(h));
    while (undelivered_ > 0) {
      if (comms_.empty() && delayed_.empty())
        throw std::logic_error("rendezvous: messages left and none in flight");
      if (!delayed_.empty() && next_due() <= sg4::Engine::get_clock() + kDueSlackS) {
        start_due();
        continue;
      }
      ssize_t index = -1;
      if (delayed_.empty()) {
        index = sg4::Comm::wait_any(comms_);
        if (index < 0) throw std::logic_error("rendezvous: wait_any returned no transfer");
      } else if (comms_.empty()) {
        sg4::this_actor::sleep_until(next_due());
        continue;
      } else {
        index = sg4::Comm::wait_any_for(comms_, next_due() - sg4::Engine::get_clock());
        if (index < 0) continue;  // a control message is due: started at the loop's top
      }
      if (!complete(static_cast<std::size_t>(index))) return false;
    }
    return true;
  }

 private:
  /// A delayed control message is started when the clock is within this of its due time.
  static constexpr double kDueSlackS = 1e-12;

  // Transfer `i` of comms_ is done: its message moves on. False when `stop` says to end.
  bool complete(std::size_t i) {
    const auto [message, kind] = pending_[i];
    comms_.erase(comms_.begin() + static_cast<std::ptrdiff_t>(i));
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    if ((*stop_)()) return false;
    arrived(message, kind);
    return true;
  }

  /// When the earliest delayed control message is due (delayed_ is kept in order of due).
  double next_due() const { return delayed_.front().due; }

  // Starts the control messages whose wait behind their link's queue is over, in order of due.
  void start_due() {
    const double now = sg4::Engine::get_clock();
    while (!delayed_.empty() && delayed_.front().due <= now + kDueSlackS) {
      const Delayed d = delayed_.front();
      delayed_.erase(delayed_.begin());
      send_now(d.message, d.kind);
    }
  }

  // The first link of the route from host `src` to host `dst` and its bandwidth (nullptr, 0 for
  // a route of no link).
  std::pair<const sg4::Link*, double> first_link(int src, int dst) {
    const auto key = std::make_pair(src, dst);
    auto found = first_links_.find(key);
    if (found != first_links_.end()) return found->second;
    std::vector<sg4::Link*> links;
    double latency = 0;
    hosts_[static_cast<std::size_t>(src)]->route_to(hosts_[static_cast<std::size_t>(dst)], links,
                                                    &latency);
    std::pair<const sg4::Link*, double> first{nullptr, 0.0};
    if (!links.empty()) first = {links.front(), links.front()->get_bandwidth()};
    return first_links_.emplace(key, first).first->second;
  }

  // A transfer is started now, or, for a control message behind bytes its sender has queued on
  // the same first link (queued_window_bytes > 0), once they have left, up to the window's worth.
  void start(int message, Transfer kind) {
    const Message& m = messages_[static_cast<std::size_t>(message)];
    const bool back = kind == Transfer::ClearToSend;
    const int sender = back ? m.dst : m.src, receiver = back ? m.src : m.dst;
    if (queued_window_bytes_ > 0) {
      const auto [link, bandwidth] = first_link(sender, receiver);
      if (link != nullptr && bandwidth > 0) {
        const double now = sg4::Engine::get_clock();
        double& free_at = link_free_at_[link];
        if (kind == Transfer::Bytes) {
          free_at = std::max(free_at, now) + m.bytes / bandwidth;
        } else {
          const double wait_s =
              std::min(std::max(0.0, free_at - now), queued_window_bytes_ / bandwidth);
          if (wait_s > 0) {
            const Delayed d{now + wait_s, message, kind};
            // After those due no later: equal dues start in the order they were delayed.
            delayed_.insert(
                std::upper_bound(delayed_.begin(), delayed_.end(), d,
                                 [](const Delayed& a, const Delayed& b) { return a.due < b.due; }),
                d);
            return;
          }
        }
      }
    }
    send_now(message, kind);
  }

  void send_now(int message, Transfer kind) {
    const Message& m = messages_[static_cast<std::size_t>(message)];
    const bool back = kind == Transfer::ClearToSend;
    const double bytes = kind == Transfer::Bytes ? m.bytes : kControlMessageBytes;
    comms_.push_back(sg4::Comm::sendto_async(hosts_[static_cast<std::size_t>(back ? m.dst : m.src)],
                                             hosts_[static_cast<std::size_t>(back ? m.src : m.dst)],
                                             static_cast<std::uint64_t>(std::llround(bytes))));
    pending_.emplace_back(message, kind);
    ++transfers_started_;
  }

  bool posted(const Message& m) const {
    return progress_[static_cast<std::size_t>(m.dst)].current() == m.step;
  }

  // The host enters its current step: sends start, receives are posted.
  void enter(int host) {
    const int step = progress_[static_cast<std::size_t>(host)].current();
    if (step < 0) return;
    for (int index : by_step_[static_cast<std::size_t>(step)]) {
      Message& m = messages_[static_cast<std::size_t>(index)];
      if (m.src == host) {
        if (m.rendezvous) {
          start(index, Transfer::Request);
        } else {
          start(index, Transfer::Bytes);
          m.send_done = true;
        }
      }
      if (m.dst == host) {
        if (m.rendezvous && m.request_arrived && !m.clear_sent) {
          m.clear_sent = true;
          start(index, Transfer::ClearToSend);
        }
        if (!m.rendezvous && m.bytes_arrived) m.receive_done = true;
      }
    }
    advance_if_done(host);
  }

  void arrived(int message, Transfer kind) {
    Message& m = messages_[static_cast<std::size_t>(message)];
    switch (kind) {
      case Transfer::Request:
        m.request_arrived = true;
        if (posted(m)) {
          m.clear_sent = true;
          start(message, Transfer::ClearToSend);
        }
        break;
      case Transfer::ClearToSend:
        start(message, Transfer::Bytes);
        m.send_done = true;
        advance_if_done(m.src);
        break;
      case Transfer::Bytes:
        m.bytes_arrived = true;
        --undelivered_;
        if (m.rendezvous || posted(m)) {
          m.receive_done = true;
          advance_if_done(m.dst);
        }
        break;
    }
  }

  // Leaves the host's current step (and enters its next) when its part of the step is done.
  void advance_if_done(int host) {
    HostProgress& p = progress_[static_cast<std::size_t>(host)];
    const int step = p.current();
    if (step < 0) return;
    for (int index : by_step_[static_cast<std::size_t>(step)]) {
      const Message& m = messages_[static_cast<std::size_t>(index)];
      if ((m.src == host && !m.send_done) || (m.dst == host && !m.receive_done)) return;
    }
    ++p.position;
    enter(host);
  }

  struct Delayed {
    double due = 0;
    int message = 0;
    Transfer kind = Transfer::Request;
  };

  const std::vector<sg4::Host*>& hosts_;
  std::vector<sg4::CommPtr>& comms_;
  long long& transfers_started_;
  const double queued_window_bytes_;
  const std::function<bool()>* stop_ = nullptr;
  /// Control messages waiting behind their link's queue, in order of due.
  std::vector<Delayed> delayed_;
  /// Per first link: when the bytes handed to it so far have left (first in, first out).
  std::unordered_map<const sg4::Link*, double> link_free_at_;
  std::map<std::pair<int, int>, std::pair<const sg4::Link*, double>> first_links_;
  std::vector<std::pair<int, Transfer>> pending_;  ///< parallel to comms_
  std::vector<Message> messages_;
  std::vector<std::vector<int>> by_step_;
  std::vector<HostProgress> progress_;
  std::size_t undelivered_ = 0;
};

}  // namespace

bool run_rendezvous_steps(const std::vector<const FlowStage*>& steps,
                          const model::MessageProtocol& protocol,
                          const std::vector<sg4::Host*>& hosts, std::vector<sg4::CommPtr>& comms,
                          const std::function<bool()>& stop, long long& transfers_started) {
  if (!protocol.rendezvous)
    throw std::logic_error("run_rendezvous_steps: the platform's protocol is not a rendezvous");
  comms.clear();
  RendezvousRun run(steps, protocol, hosts, comms, transfers_started);
  const bool finished = run.run(stop);
  if (finished) comms.clear();
  return finished;
}

MessageParts message_parts(double bytes, const model::MessageProtocol& protocol) {
  if (!protocol.rendezvous || !(bytes > protocol.eager_limit_bytes)) return {bytes, false, 0};
  return {protocol.eager_limit_bytes, true, bytes - protocol.eager_limit_bytes};
}

std::uint64_t wire_bytes(double bytes) {
  return static_cast<std::uint64_t>(std::llround(std::max(bytes, 1.0)));
}

void send_message(sg4::Host* src, sg4::Host* dst, double bytes,
                  const model::MessageProtocol& protocol) {
  const MessageParts parts = message_parts(bytes, protocol);
  sg4::Comm::sendto(src, dst, wire_bytes(parts.request_bytes));
  if (!parts.handshake) return;
  sg4::Comm::sendto(dst, src, wire_bytes(kControlMessageBytes));
  sg4::Comm::sendto(src, dst, wire_bytes(parts.rest_bytes));
}

}  // namespace tauplan::sim
