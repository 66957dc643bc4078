// peer_group_test.cpp: the in-process PeerGroup's receives from any rank or with any tag, and its
// abort (exec/peer_group.hpp), which async-ps's ranks (exec/async_ranks.hpp) rely on: a server
// takes messages in the order they were sent, whoever sent them; a worker takes a server's
// reply whatever its tag; a failed rank does not leave the others waiting.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "exec/peer_group.hpp"

namespace exec = tauplan::exec;
using exec::PeerGroup;

namespace {

void send_text(PeerGroup& peers, int to, const std::string& text, int tag) {
  peers.send_bytes(to, text.data(), text.size(), tag);
}

std::string text_of(const std::vector<char>& message) {
  return std::string(message.begin(), message.end());
}

}  // namespace

TEST_CASE("peer group: recv_any from any rank takes messages in the order they were sent") {
  exec::ThreadPeerHub hub(4);
  // Sent one after the other from one thread, so their order is known: 2, 1, 3, 1.
  send_text(hub.peer(2), 0, "a", 7);
  send_text(hub.peer(1), 0, "bb", 9);
  send_text(hub.peer(3), 0, "ccc", 7);
  send_text(hub.peer(1), 0, "", 8);
  std::vector<char> message;
  const std::vector<std::tuple<int, int, std::string>> expected{
      {2, 7, "a"}, {1, 9, "bb"}, {3, 7, "ccc"}, {1, 8, ""}};
  for (const auto& [from, tag, text] : expected) {
    const exec::PeerEnvelope envelope =
        hub.peer(0).recv_any(PeerGroup::kAnySource, PeerGroup::kAnyTag, message);
    CHECK(envelope.from == from);
    CHECK(envelope.tag == tag);
    CHECK(envelope.bytes == text.size());
    CHECK(text_of(message) == text);
  }
}

TEST_CASE("peer group: recv_any filters by sender or by tag, leaving the rest queued") {
  exec::ThreadPeerHub hub(3);
  send_text(hub.peer(1), 0, "first from 1", 5);
  send_text(hub.peer(2), 0, "from 2", 6);
  send_text(hub.peer(1), 0, "second from 1", 6);
  std::vector<char> message;
  // From rank 2, any tag: skips rank 1's older message.
  CHECK(hub.peer(0).recv_any(2, PeerGroup::kAnyTag, message).tag == 6);
  CHECK(text_of(message) == "from 2");
  // Tag 6 from anyone: rank 1's second message, its first (tag 5) still waiting.
  CHECK(hub.peer(0).recv_any(PeerGroup::kAnySource, 6, message).from == 1);
  CHECK(text_of(message) == "second from 1");
  CHECK(hub.peer(0).recv_any(1, 5, message).bytes == 12);
  // Floats sent with send() arrive whole through recv(); sizes must agree.
  const std::vector<float> sent{1.5f, -2.0f, 3.25f};
  hub.peer(2).send(1, sent.data(), sent.size(), 4);
  std::vector<float> got(3);
  hub.peer(1).recv(2, got.data(), got.size(), 4);
  CHECK(got == sent);
  hub.peer(2).send(1, sent.data(), sent.size(), 4);
  CHECK_THROWS_AS(hub.peer(1).recv(2, got.data(), 2, 4), std::logic_error);
}

TEST_CASE("peer group: recv_any blocks until a matching message arrives") {
  exec::ThreadPeerHub hub(2);
  std::vector<char> message;
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    send_text(hub.peer(1), 0, "not this tag", 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    send_text(hub.peer(1), 0, "late", 4);
  });
  const exec::PeerEnvelope envelope = hub.peer(0).recv_any(PeerGroup::kAnySource, 4, message);
  sender.join();
  CHECK(envelope.from == 1);
  CHECK(text_of(message) == "late");
}

TEST_CASE("peer group: abort wakes a rank waiting in a receive or the barrier, with an error") {
  exec::ThreadPeerHub hub(3);
  bool receive_failed = false, barrier_failed = false;
  std::thread receiver([&] {
    std::vector<char> message;
    try {
      hub.peer(0).recv_any(PeerGroup::kAnySource, PeerGroup::kAnyTag, message);
    } catch (const std::runtime_error&) {
      receive_failed = true;
    }
  });
  std::thread waiter([&] {
    try {
      hub.peer(1).barrier();
    } catch (const std::runtime_error&) {
      barrier_failed = true;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  hub.abort();
  receiver.join();
  waiter.join();
  CHECK(receive_failed);
  CHECK(barrier_failed);
  // Later calls fail at once.
  std::vector<float> buffer(1);
  CHECK_THROWS_AS(hub.peer(2).recv(0, buffer.data(), 1, 0), std::runtime_error);
}

TEST_CASE("peer group: allreduce_sum is a ring, every member ends with the same exact sum") {
  // Members 2, 0, 3 of 4 ranks (a subgroup, not in rank order), 7 floats (chunks of 2, 2 and 3):
  // integers, so every order of addition gives the exact sum. A ring of g sends 2 (g - 1)
  // messages per member. With fewer floats than members (2), each sends its buffer to the others.
  const std::vector<int> members = {2, 0, 3};
  for (std::size_t n : {std::size_t{7}, std::size_t{2}}) {
    exec::ThreadPeerHub hub(4);
    std::vector<std::vector<float>> data(4);
    std::vector<long long> sent(4, 0);
    std::vector<std::thread> threads;
    for (int r : members)
      threads.emplace_back([&, r] {
        auto& mine = data[static_cast<std::size_t>(r)];
        for (std::size_t i = 0; i < n; ++i)
          mine.push_back(static_cast<float>(100 * r + i));
        exec::allreduce_sum(hub.peer(r), members, mine.data(), n, 5);
        sent[static_cast<std::size_t>(r)] = hub.peer(r).messages_sent();
      });
    for (std::thread& t : threads)
      t.join();
    INFO("n " << n);
    for (int r : members) {
      for (std::size_t i = 0; i < n; ++i)
        CHECK(data[static_cast<std::size_t>(r)][i] == static_cast<float>(500 + 3 * i));
      CHECK(sent[static_cast<std::size_t>(r)] == (n == 7 ? 4 : 2));
    }
  }
  exec::ThreadPeerHub hub(2);
  std::vector<float> x(4, 1.0f);
  CHECK_THROWS_AS(exec::allreduce_sum(hub.peer(1), {0, 2}, x.data(), 4, 5), std::invalid_argument);
}
