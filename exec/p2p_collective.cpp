// p2p_collective.cpp: the registry of the collective algorithms over point-to-point messages,
// and the building blocks they share (chunks, ring phases, push and pull to servers).
//
// Adding an algorithm: one file p2p_<name>.cpp with its class and factory, one line in
// registry() below.
#include "exec/p2p_collective.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <map>
#include <numeric>
#include <stdexcept>

#include "exec/combine.hpp"
#include "model/base/error.hpp"
#include "model/base/registry.hpp"

namespace tauplan::exec {
namespace {

const model::Registry<P2pCollective>& registry() {
  static const model::Registry<P2pCollective> algorithms(
      "collective",
      {make_p2p_ring, make_p2p_ps, make_p2p_tree, make_p2p_sparknet, make_p2p_hierarchical});
  return algorithms;
}

int modulo(int a, int m) {
  return ((a % m) + m) % m;
}

}  // namespace

const P2pCollective& p2p_collective(const std::string& name, const KeyOrigins& origins) {
  const auto [file, key] = origins.of("collective");
  return registry().get(name, file, key);
}

std::vector<std::string> p2p_collective_names() {
  return registry().names();
}

// ------------------------------------------------------------------ building blocks

std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, int parts, int i) {
  assert(parts >= 1 && i >= 0 && i < parts);
  const auto p = static_cast<std::size_t>(parts);
  const auto index = static_cast<std::size_t>(i);
  const std::size_t base = n / p, extra = n % p;
  const std::size_t begin = index * base + std::min(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

float* reused_floats(ReusedBuffer which, std::size_t n) {
  thread_local std::array<std::vector<float>, static_cast<std::size_t>(ReusedBuffer::Count)> kept;
  std::vector<float>& buffer = kept[static_cast<std::size_t>(which)];
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

float* weighted_with_weight(const float* data, double weight, std::size_t n) {
  float* out = reused_floats(ReusedBuffer::Weighted, n + 1);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(weight * static_cast<double>(data[i]));
  out[n] = static_cast<float>(weight);
  return out;
}

void divide_by_weight(const float* sum, std::size_t n, float* out) {
  const double total = static_cast<double>(sum[n]);
  assert(total > 0);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(static_cast<double>(sum[i]) / total);
}

void ring_reduce_scatter(PeerGroup& peers, const std::vector<int>& ring, int position, float* data,
                         std::size_t n, int tag, const char* what) {
  const int r = static_cast<int>(ring.size());
  if (r < 2) return;
  const int next = ring[static_cast<std::size_t>(modulo(position + 1, r))];
  const int previous = ring[static_cast<std::size_t>(modulo(position - 1, r))];
  const PeerWaitLabel label(peers, what);
  float* incoming = reused_floats(ReusedBuffer::Incoming, chunk_range(n, r, 0).second);
  for (int step = 0; step < r - 1; ++step) {
    const auto [send_begin, send_end] = chunk_range(n, r, modulo(position - step, r));
    const auto [recv_begin, recv_end] = chunk_range(n, r, modulo(position - step - 1, r));
    peers.send_recv(next, data + send_begin, send_end - send_begin, previous, incoming,
                    recv_end - recv_begin, tag);
    for (std::size_t i = recv_begin; i < recv_end; ++i)
      data[i] += incoming[i - recv_begin];
  }
}

void ring_all_gather(PeerGroup& peers, const std::vector<int>& ring, int position, float* data,
                     std::size_t n, int shift, int tag, const char* what) {
  const int r = static_cast<int>(ring.size());
  if (r < 2) return;
  const int next = ring[static_cast<std::size_t>(modulo(position + 1, r))];
  const int previous = ring[static_cast<std::size_t>(modulo(position - 1, r))];
  const PeerWaitLabel label(peers, what);
  for (int step = 0; step < r - 1; ++step) {
    const auto [send_begin, send_end] = chunk_range(n, r, modulo(position + shift - step, r));
    const auto [recv_begin, recv_end] = chunk_range(n, r, modulo(position + shift - step - 1, r));
    peers.send_recv(next, data + send_begin, send_end - send_begin, previous, data + recv_begin,
                    recv_end - recv_begin, tag);
  }
}

namespace {

void push_pull_mean(const CollectiveRanks& ranks, PeerGroup& peers, float* data, double weight,
                    std::size_t n, int push_tag, int pull_tag, const char* what) {
  const PeerWaitLabel label(peers, what);
  // Shard j and its weight at [begin_j + j, end_j + j] of one buffer of n + s floats.
  float* shards = reused_floats(ReusedBuffer::Shards, n + static_cast<std::size_t>(ranks.servers));
  for (int j = 0; j < ranks.servers; ++j) {
    const auto [begin, end] = chunk_range(n, ranks.servers, j);
    float* shard = shards + begin + static_cast<std::size_t>(j);
    std::copy(data + begin, data + end, shard);
    shard[end - begin] = static_cast<float>(weight);
    peers.post_recv(ranks.workers + j, data + begin, end - begin, pull_tag);
    peers.post_send(ranks.workers + j, shard, end - begin + 1, push_tag);
  }
  peers.complete_posted();
}

bool serve_push_pull(const CollectiveRanks& ranks, PeerGroup& peers, int push_tag, int pull_tag,
                     int stop_tag, const char* what, ServedCall* call) {
  using Clock = std::chrono::steady_clock;
  const PeerWaitLabel label(peers, what);
  const PeerEnvelope first = peers.probe(0, PeerGroup::kAnyTag);
  const int tag = first.tag;
  const std::size_t count = first.bytes / sizeof(float);
  ServedCall served;
  served.first_message = Clock::now();
  const auto k_count = static_cast<std::size_t>(ranks.workers);
  if (tag == stop_tag) {
    float none = 0;
    for (int k = 0; k < ranks.workers; ++k)
      peers.recv(k, &none, 0, stop_tag);
    return false;
  }
  if (tag != push_tag || count < 1)
    throw std::logic_error("server rank: unexpected message (tag " + std::to_string(tag) + ", " +
                           std::to_string(count) + " floats) from worker 0");
  const std::size_t len = count - 1;
  float* pushes = reused_floats(ReusedBuffer::Pushes, k_count * count);
  std::vector<const float*> pushed;
  for (int k = 0; k < ranks.workers; ++k) {
    pushed.push_back(pushes + static_cast<std::size_t>(k) * count);
    peers.post_recv(k, pushes + static_cast<std::size_t>(k) * count, count, push_tag);
  }
  peers.complete_posted();
  const auto pushed_in = Clock::now();  // the server's own work starts: every push is here
  float* mean = reused_floats(ReusedBuffer::Mean, len);
  mean_of_pushes(pushed, len, mean);
  for (int k = 0; k < ranks.workers; ++k)
    peers.post_send(k, mean, len, pull_tag);
  served.processing_s = std::chrono::duration<double>(Clock::now() - pushed_in).count();
  served.messages = 2LL * ranks.workers;
  served.bytes = static_cast<long long>(k_count * len * sizeof(float));
  peers.complete_posted();
  if (call != nullptr) *call = served;
  return true;
}

void stop_servers(const CollectiveRanks& ranks, PeerGroup& peers, int stop_tag) {
  const PeerWaitLabel label(peers, "the stop message to the server ranks");
  const float none = 0;
  for (int j = 0; j < ranks.servers; ++j)
    peers.post_send(ranks.workers + j, &none, 0, stop_tag);
  peers.complete_posted();
}

class PushPullCollective : public P2pCollective {
 public:
  explicit PushPullCollective(const PushPullNames& names) : names_(names) {}
  const char* name() const override { return names_.name; }
  bool uses_servers() const override { return true; }
  void mean(const CollectiveRanks& ranks, PeerGroup& peers, float* data, double weight,
            std::size_t n) const override {
    push_pull_mean(ranks, peers, data, weight, n, names_.push_tag, names_.pull_tag,
                   names_.worker_wait);
  }
  bool serve(const CollectiveRanks& ranks, PeerGroup& peers, ServedCall* call) const override {
    return serve_push_pull(ranks, peers, names_.push_tag, names_.pull_tag, names_.stop_tag,
                           names_.server_wait, call);
  }
  void finish(const CollectiveRanks& ranks, PeerGroup& peers) const override {
    stop_servers(ranks, peers, names_.stop_tag);
  }

 private:
  PushPullNames names_;
};

}  // namespace

std::unique_ptr<P2pCollective> make_push_pull_collective(const PushPullNames& names) {
  return std::make_unique<PushPullCollective>(names);
}

// ------------------------------------------------------------------ shared by the communicators

void adasum_by_all_gather(const CollectiveRanks& ranks, PeerGroup& peers, float* data,
                          double weight, std::size_t n, std::vector<float>& gathered) {
  constexpr int kTagAdasumGather = 51;
  const auto k = static_cast<std::size_t>(ranks.workers);
  const std::size_t block = n + 1;
  gathered.assign(k * block, 0.0f);
  float* own = gathered.data() + block * static_cast<std::size_t>(ranks.rank);
  std::copy(data, data + n, own);
  own[n] = static_cast<float>(weight);
  std::vector<int> ring(k);
  std::iota(ring.begin(), ring.end(), 0);
  ring_all_gather(peers, ring, ranks.rank, gathered.data(), gathered.size(), 0, kTagAdasumGather,
                  "the all-gather for Adasum");
  std::vector<const float*> inputs;
  std::vector<double> weights;
  for (std::size_t w = 0; w < k; ++w) {
    inputs.push_back(gathered.data() + w * block);
    weights.push_back(static_cast<double>(gathered[w * block + n]));
  }
  combine_adasum(inputs, weights, n, data);
}

std::vector<std::vector<int>> workers_by_node(const std::vector<int>& worker_hosts,
                                              const model::Platform& platform) {
  std::vector<std::vector<int>> nodes;
  std::map<std::string, std::size_t> index;
  for (std::size_t k = 0; k < worker_hosts.size(); ++k) {
    const std::string& node = platform.hosts.at(static_cast<std::size_t>(worker_hosts[k])).node;
    const auto [it, inserted] = index.emplace(node, nodes.size());
    if (inserted) nodes.emplace_back();
    nodes[it->second].push_back(static_cast<int>(k));
  }
  return nodes;
}

std::vector<CollectiveSubgroup> plan_subgroups(const model::Plan& plan,
                                               const model::Platform& platform,
                                               const P2pCollective& algorithm,
                                               const KeyOrigins& origins) {
  std::vector<CollectiveSubgroup> subgroups;
  for (model::OpId v : plan.topological_order()) {
    const model::Op& op = plan.op(v);
    if (op.kind != model::OpKind::Collective || op.group.empty() ||
        static_cast<int>(op.group.size()) == plan.workers)
      continue;
    if (std::any_of(subgroups.begin(), subgroups.end(),
                    [&](const CollectiveSubgroup& seen) { return seen.group == op.group; }))
      continue;
    if (algorithm.uses_servers())
      throw InputError(origins.of("collective"),
                       "a peer-to-peer algorithm for a collective over a subgroup of the workers "
                       "(its server ranks serve all K)",
                       "'" + plan.collective + "'");
    std::vector<int> member_hosts;
    for (int w : op.group)
      member_hosts.push_back(plan.worker_hosts.at(static_cast<std::size_t>(w)));
    algorithm.check(member_hosts, platform);  // hierarchical: equal members per node
    subgroups.push_back(CollectiveSubgroup{op.group, workers_by_node(member_hosts, platform)});
  }
  return subgroups;
}

}  // namespace tauplan::exec
