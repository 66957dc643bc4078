// p2p_collective_test.cpp: every collective algorithm of exec/ (p2p_<name>.cpp) executed as
// messages between threads (ThreadPeerHub), the transport the MPI communicator's runs share the
// code with: each worker ends with the weighted mean, combine_mean's floats (bit for bit through
// the servers, to float rounding around a ring or a tree), every worker with the same bits, and
// the messages each algorithm is charged in the engines (model/ir/collective_<name>.cpp).
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

#include "exec/combine.hpp"
#include "exec/p2p_collective.hpp"
#include "exec/peer_group.hpp"
#include "exec/rank_threads.hpp"

using namespace tauplan::exec;

namespace {

struct Outcome {
  std::vector<std::vector<float>> workers;  // each worker's buffer after the last call
  long long messages = 0;                   // sent by every rank, stop messages included
  int served = 0;                           // calls served, over the server ranks
};

float value(int worker, int call, std::size_t i) {
  return std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(worker) +
                  0.11f * static_cast<float>(call));
}

/// Runs `calls` means of n floats over K workers (weights 1, 2, ..., K) and s server ranks, each
/// rank a thread; `nodes` is hierarchical's grouping.
Outcome run(const P2pCollective& algorithm, int k, int s, std::size_t n, int calls,
            std::vector<std::vector<int>> nodes) {
  ThreadPeerHub hub(k + s);
  Outcome out;
  out.workers.assign(static_cast<std::size_t>(k), std::vector<float>(n));
  std::atomic<int> served{0};
  on_threads(
      k + s,
      [&](int rank) {
        CollectiveRanks ranks;
        ranks.rank = rank;
        ranks.workers = k;
        ranks.servers = s;
        ranks.nodes = nodes;
        PeerGroup& peers = hub.peer(rank);
        if (ranks.is_server()) {
          while (algorithm.serve(ranks, peers, nullptr))
            ++served;
          return;
        }
        std::vector<float>& data = out.workers[static_cast<std::size_t>(rank)];
        for (int call = 0; call < calls; ++call) {
          for (std::size_t i = 0; i < n; ++i)
            data[i] = value(rank, call, i);
          algorithm.mean(ranks, peers, data.data(), rank + 1.0, n);
        }
        algorithm.finish(ranks, peers);
      },
      [&] { hub.abort(); });
  for (int r = 0; r < k + s; ++r)
    out.messages += hub.peer(r).messages_sent();
  out.served = served.load();
  return out;
}

std::vector<float> expected_mean(int k, std::size_t n, int call) {
  std::vector<std::vector<float>> inputs(static_cast<std::size_t>(k), std::vector<float>(n));
  std::vector<const float*> pointers;
  std::vector<double> weights;
  for (int w = 0; w < k; ++w) {
    for (std::size_t i = 0; i < n; ++i)
      inputs[static_cast<std::size_t>(w)][i] = value(w, call, i);
    pointers.push_back(inputs[static_cast<std::size_t>(w)].data());
    weights.push_back(w + 1.0);
  }
  std::vector<float> mean(n);
  combine_mean(pointers, weights, n, mean.data());
  return mean;
}

std::vector<std::vector<int>> nodes_of(int k, int per_node) {
  std::vector<std::vector<int>> nodes;
  for (int w = 0; w < k; ++w) {
    if (w % per_node == 0) nodes.emplace_back();
    nodes.back().push_back(w);
  }
  return nodes;
}

}  // namespace

TEST_CASE("every collective algorithm runs over threads and leaves the weighted mean") {
  const std::size_t n = 37;  // not a multiple of K or s: uneven chunks and shards
  const int calls = 3;
  REQUIRE(p2p_collective_names().size() == 5);
  for (const std::string& name : p2p_collective_names()) {
    const P2pCollective& algorithm = p2p_collective(name, "<test>");
    for (int k : {1, 2, 3, 4, 6}) {
      const int s = name == "ps" ? 2 : (algorithm.uses_servers() ? 1 : 0);
      const int per_node = (name == "hierarchical" && k % 2 == 0) ? 2 : k;
      INFO(name << " over K = " << k << " workers and " << s << " servers");
      const Outcome out = run(algorithm, k, s, n, calls, nodes_of(k, per_node));
      const std::vector<float> mean = expected_mean(k, n, calls - 1);
      for (const auto& buffer : out.workers) {
        CHECK(buffer == out.workers.front());  // every worker holds the same bits
        for (std::size_t i = 0; i < n; ++i) {
          if (algorithm.uses_servers())
            CHECK(buffer[i] == mean[i]);  // combine_mean in worker order, on the server
          else
            CHECK(buffer[i] == Approx(mean[i]).margin(1e-6));
        }
      }
      // The messages of the engines' flows (per call), and the servers' stop messages.
      const long long kk = k;
      long long per_call = 0, stops = 0;
      if (name == "ring") per_call = 2 * kk * (kk - 1);
      if (name == "tree") per_call = 2 * (kk - 1);
      if (name == "hierarchical") {
        const long long g = per_node, m = kk / per_node;
        per_call = 2 * kk * (g - 1) + 2 * kk * (m - 1);
      }
      if (algorithm.uses_servers()) {
        per_call = 2 * kk * s;
        stops = kk * s;
        CHECK(out.served == calls * s);
      }
      CHECK(out.messages == calls * per_call + stops);
    }
  }
}

TEST_CASE("a server algorithm's server reports what it served, and a stray message is refused") {
  const P2pCollective& ps = p2p_collective("ps", "<test>");
  ThreadPeerHub hub(2);
  CollectiveRanks server;
  server.rank = 1;
  server.workers = 1;
  server.servers = 1;
  std::vector<float> stray(4, 1.0f);
  hub.peer(0).send(1, stray.data(), stray.size(), 999);
  CHECK_THROWS_WITH(ps.serve(server, hub.peer(1), nullptr),
                    Catch::Contains("unexpected message (tag 999"));

  ThreadPeerHub run_hub(2);
  CollectiveRanks worker = server;
  worker.rank = 0;
  ServedCall call;
  bool served = false;
  std::vector<float> data = {1.0f, 2.0f, 3.0f};
  on_threads(2, [&](int rank) {
    if (rank == 1) {
      served = ps.serve(server, run_hub.peer(1), &call);
      return;
    }
    ps.mean(worker, run_hub.peer(0), data.data(), 2.0, data.size());
  });
  CHECK(served);
  CHECK(data == std::vector<float>{1.0f, 2.0f, 3.0f});  // the mean of one worker is its vector
  CHECK(call.messages == 2);                            // one push in, one reply out
  CHECK(call.bytes == static_cast<long long>(3 * sizeof(float)));
  CHECK(call.processing_s >= 0);
}

TEST_CASE("an algorithm exec does not have is refused, naming the file and the key") {
  CHECK_THROWS_WITH(p2p_collective("butterfly", "job.yaml"),
                    Catch::Contains("job.yaml") && Catch::Contains("collective"));
}
