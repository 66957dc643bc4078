// plan.cpp: building and ordering the round DAG.
#include "model/ir/plan.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <stdexcept>

namespace tauplan::model {

using Adjacency =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op, boost::no_property>;

class PlanGraphStorage {
 public:
  Adjacency adjacency;
};

namespace {

Adjacency& adjacency(PlanGraphHandle& graph) {
  return graph.storage().adjacency;
}

const Adjacency& adjacency(const PlanGraphHandle& graph) {
  return graph.storage().adjacency;
}

}  // namespace

PlanGraphHandle::PlanGraphHandle() : storage_(std::make_unique<PlanGraphStorage>()) {}
PlanGraphHandle::PlanGraphHandle(const PlanGraphHandle& other)
    : storage_(std::make_unique<PlanGraphStorage>(other.storage())) {}
// A move takes the graph and leaves no storage; storage() makes an empty one when it is next
// read, so a moved-from Plan is an empty plan (as the adjacency list's own move left it).
PlanGraphHandle::PlanGraphHandle(PlanGraphHandle&& other) noexcept = default;
PlanGraphHandle& PlanGraphHandle::operator=(const PlanGraphHandle& other) {
  if (this != &other) storage_ = std::make_unique<PlanGraphStorage>(other.storage());
  return *this;
}
PlanGraphHandle& PlanGraphHandle::operator=(PlanGraphHandle&& other) noexcept {
  if (this != &other) storage_ = std::move(other.storage_);
  return *this;
}
PlanGraphHandle::~PlanGraphHandle() = default;

PlanGraphStorage& PlanGraphHandle::storage() {
  if (!storage_) storage_ = std::make_unique<PlanGraphStorage>();
  return *storage_;
}

const PlanGraphStorage& PlanGraphHandle::storage() const {
  if (!storage_) storage_ = std::make_unique<PlanGraphStorage>();
  return *storage_;
}

OpId Plan::add(Op op) {
  return boost::add_vertex(std::move(op), adjacency(graph));
}

void Plan::depend(OpId before, OpId after) {
  boost::add_edge(before, after, adjacency(graph));
}

const Op& Plan::op(OpId id) const {
  return adjacency(graph)[id];
}

Op& Plan::op(OpId id) {
  return adjacency(graph)[id];
}

std::size_t Plan::op_count() const {
  return boost::num_vertices(adjacency(graph));
}

std::size_t Plan::dependency_count() const {
  return boost::num_edges(adjacency(graph));
}

std::vector<OpId> Plan::predecessors(OpId id) const {
  std::vector<OpId> ids;
  for (auto e : boost::make_iterator_range(boost::in_edges(id, adjacency(graph))))
    ids.push_back(boost::source(e, adjacency(graph)));
  return ids;
}

std::vector<OpId> Plan::successors(OpId id) const {
  std::vector<OpId> ids;
  for (auto e : boost::make_iterator_range(boost::out_edges(id, adjacency(graph))))
    ids.push_back(boost::target(e, adjacency(graph)));
  return ids;
}

void Plan::remove(OpId id) {
  boost::clear_vertex(id, adjacency(graph));
  boost::remove_vertex(id, adjacency(graph));
}

int Plan::host_of(const Endpoint& endpoint) const {
  const std::vector<int>& hosts =
      endpoint.role == Endpoint::Role::Worker ? worker_hosts : server_hosts;
  return hosts.at(static_cast<size_t>(endpoint.index));
}

std::vector<OpId> Plan::topological_order() const {
  // Kahn's algorithm, taking ready ops in index order, so the order is deterministic and
  // follows insertion order where the dependencies allow.
  const size_t n = op_count();
  std::vector<size_t> waiting(n);
  std::vector<OpId> order;
  order.reserve(n);
  for (OpId v = 0; v < n; ++v) {
    waiting[v] = boost::in_degree(v, adjacency(graph));
    if (waiting[v] == 0) order.push_back(v);
  }
  for (size_t next = 0; next < order.size(); ++next)
    for (auto e : boost::make_iterator_range(boost::out_edges(order[next], adjacency(graph)))) {
      const OpId target = boost::target(e, adjacency(graph));
      if (--waiting[target] == 0) order.push_back(target);
    }
  if (order.size() != n) throw std::logic_error("plan '" + strategy + "' has a dependency cycle");
  return order;
}

int Plan::count(OpKind kind) const {
  int n = 0;
  for (OpId v : op_ids())
    if (op(v).kind == kind) ++n;
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
