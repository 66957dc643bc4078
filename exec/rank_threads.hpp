// rank_threads.hpp: what the trainers whose ranks are threads share in running them (the MLP's
// layouts, exec/pipeline_parallel.cpp, the transformer's, exec/transformer_trainer.cpp, and
// async-ps, exec/async_ranks.cpp): one thread per rank, and receives timed as communication.
// What it leaves out: the ranks' work and what their messages mean.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/peer_group.hpp"

namespace tauplan::exec {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Runs `body(rank)` on one thread per rank; rethrows the first exception thrown. The first
/// failing rank calls `on_error` (ThreadPeerHub::abort: ranks waiting for it give up).
template <typename Body, typename OnError>
void on_threads(int ranks, Body body, OnError on_error) {
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::exception_ptr first;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (first) return;
          first = std::current_exception();
        }
        on_error();
      }
    });
  for (std::thread& t : threads)
    t.join();
  if (first) std::rethrow_exception(first);
}

template <typename Body>
void on_threads(int ranks, Body body) {
  on_threads(ranks, body, [] {});
}

/// Receives buffer.size() floats from rank `from` (with `tag`), adding the wait to `comm_s`.
inline void timed_receive(PeerGroup& peers, int from, std::vector<float>& buffer, int tag,
                          double& comm_s) {
  const auto start = Clock::now();
  peers.recv(from, buffer.data(), buffer.size(), tag);
  comm_s += seconds_since(start);
}

}  // namespace tauplan::exec
