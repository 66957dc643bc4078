// plan.cpp: building and ordering the round DAG.
#include "model/ir/plan.hpp"

#include <stdexcept>

namespace tauplan::model {

OpId Plan::add(Op op) {
  return boost::add_vertex(std::move(op), graph);
}

void Plan::depend(OpId before, OpId after) {
  boost::add_edge(before, after, graph);
}

int Plan::host_of(const Endpoint& endpoint) const {
  const std::vector<int>& hosts =
      endpoint.role == Endpoint::Role::Worker ? worker_hosts : server_hosts;
  return hosts.at(static_cast<size_t>(endpoint.index));
}

std::vector<OpId> Plan::topological_order() const {
  // Kahn's algorithm, taking ready ops in index order, so the order is deterministic and
  // follows insertion order where the dependencies allow.
  const size_t n = boost::num_vertices(graph);
  std::vector<size_t> waiting(n);
  std::vector<OpId> order;
  order.reserve(n);
  for (OpId v = 0; v < n; ++v) {
    waiting[v] = boost::in_degree(v, graph);
    if (waiting[v] == 0) order.push_back(v);
  }
  for (size_t next = 0; next < order.size(); ++next)
    for (auto e : boost::make_iterator_range(boost::out_edges(order[next], graph))) {
      const OpId target = boost::target(e, graph);
      if (--waiting[target] == 0) order.push_back(target);
    }
  if (order.size() != n) throw std::logic_error("plan '" + strategy + "' has a dependency cycle");
  return order;
}

int Plan::count(OpKind kind) const {
  int n = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(graph)))
    if (graph[v].kind == kind) ++n;
  return n;
}

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::Compute:
      return "compute";
    case OpKind::Update:
      return "update";
    case OpKind::Collective:
      return "collective";
    case OpKind::Barrier:
      return "barrier";
    case OpKind::Transfer:
      return "transfer";
    case OpKind::Apply:
      return "apply";
  }
  return "?";
}

const char* to_string(BatchSplit split) {
  return split == BatchSplit::Even ? "even" : "speed";
}

}  // namespace tauplan::model
