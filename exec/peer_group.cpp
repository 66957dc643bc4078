// peer_group.cpp: the member-order all-reduces and the in-process mailboxes.
#include "exec/peer_group.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <stdexcept>
#include <string>

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
  allreduce_in_member_order(peers, members, data, n, tag, 0.0f,
                            [](float a, float b) { return a + b; });
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

class ThreadPeer final : public PeerGroup {
 public:
  ThreadPeer(ThreadPeerHub& hub, int rank) : hub_(hub), rank_(rank) {}
  std::string name() const override { return "threads"; }
  int rank() const override { return rank_; }
  int size() const override { return hub_.ranks(); }
  void send(int to, const float* data, std::size_t n, int tag) override {
    hub_.deliver(rank_, to, tag, std::vector<float>(data, data + n));
  }
  void recv(int from, float* data, std::size_t n, int tag) override {
    const std::vector<float> message = hub_.take(from, rank_, tag);
    if (message.size() != n)
      throw std::logic_error("peer message of " + std::to_string(message.size()) +
                             " floats where " + std::to_string(n) + " were expected");
    std::copy(message.begin(), message.end(), data);
  }
  void barrier() override { hub_.arrive_at_barrier(); }

 private:
  ThreadPeerHub& hub_;
  int rank_;
};

ThreadPeerHub::ThreadPeerHub(int ranks) {
  for (int r = 0; r < ranks; ++r)
    ends_.push_back(std::make_unique<ThreadPeer>(*this, r));
}

ThreadPeerHub::~ThreadPeerHub() = default;

PeerGroup& ThreadPeerHub::peer(int rank) {
  return *ends_.at(static_cast<std::size_t>(rank));
}

void ThreadPeerHub::deliver(int from, int to, int tag, std::vector<float> message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mailboxes_[{from, to, tag}].push_back(std::move(message));
  }
  changed_.notify_all();
}

std::vector<float> ThreadPeerHub::take(int from, int to, int tag) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto& box = mailboxes_[{from, to, tag}];
  changed_.wait(lock, [&box] { return !box.empty(); });
  std::vector<float> message = std::move(box.front());
  box.pop_front();
  return message;
}

void ThreadPeerHub::arrive_at_barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  const long long generation = barrier_generation_;
  if (++barrier_waiting_ == ranks()) {
    barrier_waiting_ = 0;
    ++barrier_generation_;
    lock.unlock();
    changed_.notify_all();
    return;
  }
  changed_.wait(lock, [&] { return barrier_generation_ != generation; });
}

}  // namespace tauplan::exec
