// rank_threads.hpp: what the two layout trainers share in running their ranks (the MLP's,
// exec/pipeline_parallel.cpp, and the transformer's, exec/transformer_trainer.cpp): one thread
// per rank, and receives timed as communication. Only those two files include it (other files
// have a Clock and seconds_since of their own). What it leaves out: the ranks' work and what
// their messages mean.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

#include "exec/peer_group.hpp"

namespace tauplan::exec {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Runs `body(rank)` on one thread per rank; rethrows the first exception.
template <typename Body>
void on_threads(int ranks, Body body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads)
    t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Receives buffer.size() floats from rank `from` (with `tag`), adding the wait to `comm_s`.
inline void timed_receive(PeerGroup& peers, int from, std::vector<float>& buffer, int tag,
                          double& comm_s) {
  const auto start = Clock::now();
  peers.recv(from, buffer.data(), buffer.size(), tag);
  comm_s += seconds_since(start);
}

}  // namespace tauplan::exec
