// peer_group.cpp: the ring and member-order all-reduces and the in-process mailboxes.
#include "exec/peer_group.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace tauplan::exec {

namespace {

/// Every member sends its buffer to every other and folds the members' buffers with `combine`
/// in member order, from `identity`: every member holds the same bits.
template <class Combine>
void allreduce_in_member_order(PeerGroup& peers, const std::vector<int>& members, float* data,
                               std::size_t n, int tag, float identity, Combine combine) {
  if (members.size() < 2) return;
  const int me = peers.rank();
  assert(std::find(members.begin(), members.end(), me) != members.end());
  for (int member : members)
    if (member != me) peers.send(member, data, n, tag);
  std::vector<float> folded(n, identity), other(n);
  for (int member : members) {
    const float* part = data;
    if (member != me) {
      peers.recv(member, other.data(), n, tag);
      part = other.data();
    }
    for (std::size_t i = 0; i < n; ++i)
      folded[i] = combine(folded[i], part[i]);
  }
  std::copy(folded.begin(), folded.end(), data);
}

}  // namespace

void allreduce_sum(PeerGroup& peers, const std::vector<int>& members, float* data, std::size_t n,
                   int tag) {
  const std::size_t g = members.size();
  if (g < 2) return;
  if (n < g) {  // fewer floats than members: no chunk for some; every member sends its buffer
    allreduce_in_member_order(peers, members, data, n, tag, 0.0f,
                              [](float a, float b) { return a + b; });
    return;
  }
  const auto at = std::find(members.begin(), members.end(), peers.rank());
  if (at == members.end())
    throw std::invalid_argument("allreduce_sum: rank " + std::to_string(peers.rank()) +
                                " is not a member");
  const std::size_t me = static_cast<std::size_t>(at - members.begin());
  const int next = members[(me + 1) % g], previous = members[(me + g - 1) % g];
  auto begin = [&](std::size_t chunk) { return chunk * n / g; };  // chunk i: [i n/g, (i+1) n/g)
  auto size = [&](std::size_t chunk) { return begin(chunk + 1) - begin(chunk); };
  std::vector<float> incoming(size(g - 1) + 1);
  // Reduce-scatter: in step s, pass on chunk me - s (own first), add chunk me - s - 1 into ours.
  // After g - 1 steps this member holds chunk me + 1 summed over every member.
  for (std::size_t s = 0; s + 1 < g; ++s) {
    const std::size_t out = (me + g - s) % g, in = (me + 2 * g - s - 1) % g;
    peers.send(next, data + begin(out), size(out), tag);
    peers.recv(previous, incoming.data(), size(in), tag);
    float* own = data + begin(in);
    for (std::size_t i = 0; i < size(in); ++i)
      own[i] += incoming[i];
  }
  // All-gather: in step s, pass on chunk me + 1 - s (the summed one first), take chunk me - s.
  for (std::size_t s = 0; s + 1 < g; ++s) {
    const std::size_t out = (me + 1 + g - s) % g, in = (me + g - s) % g;
    peers.send(next, data + begin(out), size(out), tag);
    peers.recv(previous, data + begin(in), size(in), tag);
  }
}

void allreduce_max(PeerGroup& peers, const std::vector<int>& members, float* data, std::size_t n,
                   int tag) {
  allreduce_in_member_order(peers, members, data, n, tag, -std::numeric_limits<float>::infinity(),
                            [](float a, float b) { return std::max(a, b); });
}

int ring_allgather(PeerGroup& peers, const std::vector<int>& members, float* data, std::size_t n,
                   int tag) {
  const std::size_t g = members.size();
  if (g < 2) return 0;
  if (n % g != 0)
    throw std::invalid_argument("ring_allgather: " + std::to_string(n) +
                                " floats do not split into " + std::to_string(g) + " slices");
  const auto at = std::find(members.begin(), members.end(), peers.rank());
  if (at == members.end())
    throw std::invalid_argument("ring_allgather: rank " + std::to_string(peers.rank()) +
                                " is not a member");
  const std::size_t me = static_cast<std::size_t>(at - members.begin()), slice = n / g;
  const int next = members[(me + 1) % g], previous = members[(me + g - 1) % g];
  // Step s: pass on the slice received in step s - 1 (own slice first), take the previous one.
  for (std::size_t s = 0; s + 1 < g; ++s) {
    const std::size_t out = (me + g - s) % g, in = (me + g - s - 1) % g;
    peers.send(next, data + out * slice, slice, tag);
    peers.recv(previous, data + in * slice, slice, tag);
  }
  return static_cast<int>(g - 1);
}

void PeerGroup::complete_posted() {
  std::vector<PostedRecv> posted;
  posted.swap(posted_recvs_);  // a receive that throws leaves no posted buffer behind
  for (const PostedRecv& receive : posted)
    recv(receive.from, receive.data, receive.n, receive.tag);
  complete_sends();
}

class ThreadPeer final : public PeerGroup {
 public:
  ThreadPeer(ThreadPeerHub& hub, int rank) : hub_(hub), rank_(rank) {}
  std::string name() const override { return "threads"; }
  int rank() const override { return rank_; }
  int size() const override { return hub_.ranks(); }
  void send(int to, const float* data, std::size_t n, int tag) override {
    send_bytes(to, data, n * sizeof(float), tag);
  }
  void recv(int from, float* data, std::size_t n, int tag) override {
    const std::vector<char> message = hub_.take(from, rank_, tag).second;
    if (message.size() != n * sizeof(float))
      throw std::logic_error("peer message of " + std::to_string(message.size()) + " bytes where " +
                             std::to_string(n) + " floats were expected");
    if (!message.empty())  // an empty message (a stop) has no buffer to copy from
      std::memcpy(data, message.data(), message.size());
  }
  void send_message(int to, std::vector<char> message, int tag) override {
    ++sent_;  // before the receiver can see the message (and whoever waits on the receiver)
    hub_.deliver(rank_, to, tag, std::move(message));
  }
  PeerEnvelope recv_any(int from, int tag, std::vector<char>& message) override {
    auto [key, bytes] = hub_.take(from, rank_, tag);
    message = std::move(bytes);
    return PeerEnvelope{std::get<1>(key), std::get<2>(key), message.size()};
  }
  void barrier() override { hub_.arrive_at_barrier(); }
  PeerEnvelope probe(int from, int tag) override {
    const auto [key, bytes] = hub_.peek(from, rank_, tag);
    return PeerEnvelope{std::get<1>(key), std::get<2>(key), bytes};
  }
  long long messages_sent() const override { return sent_.load(std::memory_order_relaxed); }

 private:
  ThreadPeerHub& hub_;
  int rank_;
  std::atomic<long long> sent_{0};  // read by other threads (a communicator's count)
};

ThreadPeerHub::ThreadPeerHub(int ranks) {
  for (int r = 0; r < ranks; ++r)
    ends_.push_back(std::make_unique<ThreadPeer>(*this, r));
}

ThreadPeerHub::~ThreadPeerHub() = default;

PeerGroup& ThreadPeerHub::peer(int rank) {
  return *ends_.at(static_cast<std::size_t>(rank));
}

void ThreadPeerHub::abort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
  }
  changed_.notify_all();
}

void ThreadPeerHub::throw_if_aborted() const {
  if (aborted_) throw std::runtime_error("peer group aborted: another rank failed");
}

void ThreadPeerHub::deliver(int from, int to, int tag, std::vector<char> message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mailboxes_[{to, from, tag}].push_back(Stamped{sent_++, std::move(message)});
  }
  changed_.notify_all();
}

std::pair<ThreadPeerHub::Key, std::deque<ThreadPeerHub::Stamped>*> ThreadPeerHub::wait_for_oldest(
    std::unique_lock<std::mutex>& lock, int from, int to, int tag) {
  const auto matches = [&](const Key& key) {
    return std::get<0>(key) == to && (from == PeerGroup::kAnySource || std::get<1>(key) == from) &&
           (tag == PeerGroup::kAnyTag || std::get<2>(key) == tag);
  };
  std::deque<Stamped>* oldest = nullptr;
  Key key;
  changed_.wait(lock, [&] {
    if (aborted_) return true;
    oldest = nullptr;
    // The receiver's mailboxes are one contiguous range of the map (the receiver leads the key).
    for (auto it = mailboxes_.lower_bound(Key{to, -1, -1});
         it != mailboxes_.end() && std::get<0>(it->first) == to; ++it)
      if (!it->second.empty() && matches(it->first) &&
          (!oldest || it->second.front().order < oldest->front().order)) {
        oldest = &it->second;
        key = it->first;
      }
    return oldest != nullptr;
  });
  throw_if_aborted();
  return {key, oldest};
}

std::pair<ThreadPeerHub::Key, std::vector<char>> ThreadPeerHub::take(int from, int to, int tag) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto [key, oldest] = wait_for_oldest(lock, from, to, tag);
  std::vector<char> message = std::move(oldest->front().bytes);
  oldest->pop_front();
  return {key, std::move(message)};
}

std::pair<ThreadPeerHub::Key, std::size_t> ThreadPeerHub::peek(int from, int to, int tag) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto [key, oldest] = wait_for_oldest(lock, from, to, tag);
  return {key, oldest->front().bytes.size()};
}

void ThreadPeerHub::arrive_at_barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_aborted();
  const long long generation = barrier_generation_;
  if (++barrier_waiting_ == ranks()) {
    barrier_waiting_ = 0;
    ++barrier_generation_;
    lock.unlock();
    changed_.notify_all();
    return;
  }
  changed_.wait(lock, [&] { return aborted_ || barrier_generation_ != generation; });
  throw_if_aborted();
}

}  // namespace tauplan::exec
