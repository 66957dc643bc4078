// rendezvous.cpp: a collective's messages host by host, with a rendezvous above the eager limit
// (see rendezvous.hpp).
#include "sim/rendezvous.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

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
      : hosts_(hosts), comms_(comms), transfers_started_(transfers_started) {
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
        m.rendezvous = flow.bytes > protocol.eager_limit_bytes;
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
    for (std::size_t h = 0; h < progress_.size(); ++h)
      if (!progress_[h].steps.empty()) enter(static_cast<int>(h));
    while (undelivered_ > 0) {
      if (comms_.empty()) throw std::logic_error("rendezvous: messages left and none in flight");
      const ssize_t index = sg4::Comm::wait_any(comms_);
      if (index < 0) throw std::logic_error("rendezvous: wait_any returned no transfer");
      const auto i = static_cast<std::size_t>(index);
      const auto [message, kind] = pending_[i];
      comms_.erase(comms_.begin() + index);
      pending_.erase(pending_.begin() + index);
      if (stop()) return false;
      arrived(message, kind);
    }
    return true;
  }

 private:
  void start(int message, Transfer kind) {
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

  const std::vector<sg4::Host*>& hosts_;
  std::vector<sg4::CommPtr>& comms_;
  long long& transfers_started_;
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
