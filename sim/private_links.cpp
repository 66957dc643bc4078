// private_links.cpp: see private_links.hpp.
#include "sim/private_links.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace tauplan::sim {
namespace {

/// How many ops the search for an order between two ops may visit before it gives up (and the
/// pair counts as unordered). Chains of one tensor group meet within a few ops.
constexpr int kOrderSearchBudget = 256;

/// True when a path leads from `from` to `to` (from < to in topological order) through
/// successors and worker sequences, found within the search budget.
bool proved_before(const RoundOrder& order, int from, int to, std::vector<int>& seen_stamp,
                   int stamp) {
  std::vector<int> frontier{from};
  int visited = 0;
  while (!frontier.empty() && visited < kOrderSearchBudget) {
    const int op = frontier.back();
    frontier.pop_back();
    ++visited;
    auto visit = [&](int next) {
      if (next < 0 || next > to || seen_stamp[static_cast<size_t>(next)] == stamp) return false;
      seen_stamp[static_cast<size_t>(next)] = stamp;
      if (next == to) return true;
      frontier.push_back(next);
      return false;
    };
    if (visit(order.next_on_worker[static_cast<size_t>(op)])) return true;
    for (int succ : order.succs[static_cast<size_t>(op)])
      if (visit(succ)) return true;
  }
  return false;
}

void append_bits(std::string& key, double value) {
  char bytes[sizeof(double)];
  std::memcpy(bytes, &value, sizeof(double));
  key.append(bytes, sizeof(double));
}

}  // namespace

std::vector<bool> private_link_ops(const RoundOrder& order) {
  const auto ops = static_cast<int>(order.links.size());
  // The users of each link, in topological order (ops are numbered in it).
  std::unordered_map<int, std::vector<int>> users;
  for (int op = 0; op < ops; ++op)
    for (int link : order.links[static_cast<size_t>(op)])
      users[link].push_back(op);
  // A link whose users form a chain (each proved before the next) is used by one op at a time:
  // any two of them are ordered, since order is transitive. An op is private when every link it
  // crosses is such a link.
  std::vector<int> seen_stamp(static_cast<size_t>(ops), -1);
  int stamp = 0;
  std::unordered_map<long long, bool> proved;  // (a, b) pairs already searched
  auto before = [&](int a, int b) {
    const long long key = static_cast<long long>(a) * ops + b;
    const auto it = proved.find(key);
    if (it != proved.end()) return it->second;
    const bool result = proved_before(order, a, b, seen_stamp, stamp++);
    proved.emplace(key, result);
    return result;
  };
  std::vector<bool> result(static_cast<size_t>(ops), false);
  for (int op = 0; op < ops; ++op)
    result[static_cast<size_t>(op)] = !order.links[static_cast<size_t>(op)].empty();
  for (const auto& [link, on_link] : users) {
    bool chain = true;
    for (size_t i = 1; i < on_link.size() && chain; ++i)
      chain = before(on_link[i - 1], on_link[i]);
    if (!chain)
      for (int op : on_link)
        result[static_cast<size_t>(op)] = false;
  }
  return result;
}

std::vector<int> program_links(const FlowProgram& program, const model::Platform& platform) {
  std::vector<int> links;
  for (const FlowStage& stage : program.stages)
    for (const Flow& flow : stage.flows)
      if (flow.src_host != flow.dst_host) {
        const model::Route& route = platform.route(flow.src_host, flow.dst_host);
        links.insert(links.end(), route.links.begin(), route.links.end());
      }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  return links;
}

std::string program_signature(const FlowProgram& program, const model::Platform& platform) {
  std::string key;
  std::unordered_map<int, int> renamed;
  for (const FlowStage& stage : program.stages) {
    key += 'S';
    append_bits(key, static_cast<double>(stage.repeat));
    append_bits(key, stage.extra_latency_s);
    for (const HostWork& work : stage.work_after) {
      // The work's host by its speed (a host's cores are its own: hosts doing work are not
      // shared links, and a private op's servers do nothing else meanwhile).
      key += 'W';
      append_bits(key, work.flop);
      append_bits(key, platform.hosts[static_cast<size_t>(work.host)].speed_flops);
    }
    for (const Flow& flow : stage.flows) {
      key += 'F';
      append_bits(key, flow.bytes);
      if (flow.src_host == flow.dst_host) {
        key += 'L';  // a host to itself: SimGrid's loopback, the same for every host here
        continue;
      }
      for (int link : platform.route(flow.src_host, flow.dst_host).links) {
        const auto [it, inserted] = renamed.emplace(link, static_cast<int>(renamed.size()));
        const model::Link& l = platform.links[static_cast<size_t>(link)];
        key += 'l';
        append_bits(key, static_cast<double>(it->second));
        if (!inserted) continue;  // its properties are in the key already
        append_bits(key, l.bandwidth_Bps);
        append_bits(key, l.latency_s);
        key += static_cast<char>('0' + static_cast<int>(l.sharing));
      }
    }
  }
  return key;
}

}  // namespace tauplan::sim
