// thread_message_communicator.cpp: the plan's collective algorithm between threads.
#include "exec/thread_message_communicator.hpp"

#include <cassert>
#include <stdexcept>
#include <utility>

#include "model/base/error.hpp"

namespace tauplan::exec {

ThreadMessageCommunicator::ThreadMessageCommunicator(const model::Plan& plan,
                                                     const model::Platform& platform,
                                                     const KeyOrigins& origins)
    : InProcessCommunicator(plan.workers), pool_(plan.workers) {
  algorithm_ = &p2p_collective(plan.collective, origins);
  algorithm_->check(plan.worker_hosts, platform);
  ranks_.workers = plan.workers;
  ranks_.servers = algorithm_->uses_servers() ? static_cast<int>(plan.server_hosts.size()) : 0;
  if (algorithm_->uses_servers() && ranks_.servers < 1)
    throw InputError(origins.of("servers"),
                     "at least one server host for '" + plan.collective + "'", "none");
  ranks_.nodes = workers_by_node(plan.worker_hosts, platform);
  for (CollectiveSubgroup& planned : plan_subgroups(plan, platform, *algorithm_, origins)) {
    Group& group = subgroups_[planned.group];
    group.ranks.workers = static_cast<int>(planned.group.size());
    group.ranks.nodes = std::move(planned.nodes);
    group.hub = std::make_unique<ThreadPeerHub>(group.ranks.workers);
  }
  all_.ranks = ranks_;
  all_.hub = std::make_unique<ThreadPeerHub>(ranks_.workers + ranks_.servers);
  try {
    for (int j = 0; j < ranks_.servers; ++j)
      servers_.emplace_back([this, j] {
        CollectiveRanks server = ranks_;
        server.rank = ranks_.workers + j;
        try {
          while (algorithm_->serve(server, all_.hub->peer(server.rank), nullptr)) {
          }
        } catch (...) {
          fail(*all_.hub);  // the workers waiting for this server give up
        }
      });
  } catch (...) {  // a server thread could not start: stop the ones that did
    stop_servers();
    throw;
  }
}

ThreadMessageCommunicator::~ThreadMessageCommunicator() {
  stop_servers();
}

void ThreadMessageCommunicator::stop_servers() {
  if (!finished_) all_.hub->abort();  // servers waiting for workers that will not come
  for (std::thread& server : servers_)
    if (server.joinable()) server.join();
}

void ThreadMessageCommunicator::fail(ThreadPeerHub& hub) {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!first_error_) first_error_ = std::current_exception();  // the cause comes first
  }
  hub.abort();  // every rank waiting on the hub throws (after the cause is kept)
}

void ThreadMessageCommunicator::rethrow_first_error() {
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (first_error_) std::rethrow_exception(first_error_);
}

void ThreadMessageCommunicator::run_workers(Group& group, const std::vector<float*>& buffers,
                                            const std::vector<double>& weights, std::size_t n,
                                            CombineRule rule) {
  assert(static_cast<int>(buffers.size()) == group.ranks.workers);
  group.scratch.resize(buffers.size());
  try {
    pool_.run(group.ranks.workers, [&](int k) {
      try {
        CollectiveRanks me = group.ranks;
        me.rank = k;
        PeerGroup& peers = group.hub->peer(k);
        const auto index = static_cast<std::size_t>(k);
        if (rule == CombineRule::Mean)
          algorithm_->mean(me, peers, buffers[index], weights[index], n);
        else
          adasum_by_all_gather(me, peers, buffers[index], weights[index], n, group.scratch[index]);
      } catch (...) {
        fail(*group.hub);  // the other workers (and servers) waiting for this one give up
        throw;
      }
    });
  } catch (...) {
    rethrow_first_error();  // the cause, not a rank's "aborted"
    throw;
  }
}

void ThreadMessageCommunicator::combine(const std::vector<float*>& local_buffers,
                                        const std::vector<double>& local_weights, std::size_t n,
                                        CombineRule rule) {
  run_workers(all_, local_buffers, local_weights, n, rule);
}

void ThreadMessageCommunicator::combine_group(const std::vector<int>& group,
                                              const std::vector<float*>& member_buffers,
                                              const std::vector<double>& member_weights,
                                              std::size_t n, CombineRule rule) {
  if (static_cast<int>(group.size()) == workers())
    return combine(member_buffers, member_weights, n, rule);
  run_workers(subgroups_.at(group), member_buffers, member_weights, n, rule);
}

void ThreadMessageCommunicator::finish() {
  if (finished_) return;
  if (!servers_.empty())
    pool_.run(ranks_.workers, [&](int k) {
      CollectiveRanks me = ranks_;
      me.rank = k;
      algorithm_->finish(me, all_.hub->peer(k));
    });
  for (std::thread& server : servers_)
    server.join();
  finished_ = true;
  rethrow_first_error();
}

long long ThreadMessageCommunicator::messages_sent() const {
  long long sent = 0;
  const auto add = [&](const Group& group, int ranks) {
    for (int r = 0; r < ranks; ++r)
      sent += group.hub->peer(r).messages_sent();
  };
  add(all_, ranks_.workers + ranks_.servers);
  for (const auto& [members, group] : subgroups_)
    add(group, group.ranks.workers);
  return sent;
}

}  // namespace tauplan::exec
