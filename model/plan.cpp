// plan.cpp: building and ordering the round DAG.
#include "model/plan.hpp"

#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <stdexcept>

namespace tauplan::model {

OpId Plan::add(Op op) {
  return boost::add_vertex(std::move(op), graph);
}

void Plan::depend(OpId before, OpId after) {
  boost::add_edge(before, after, graph);
}

std::vector<OpId> Plan::topological_order() const {
  std::vector<OpId> reversed;
  try {
    boost::topological_sort(graph, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    throw std::logic_error("plan '" + strategy + "' has a dependency cycle");
  }
  return {reversed.rbegin(), reversed.rend()};
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
  }
  return "?";
}

const char* to_string(BatchSplit split) {
  return split == BatchSplit::Even ? "even" : "speed";
}

}  // namespace tauplan::model
