// trace_event.cpp: trace events to and from JSON text (one array per process).
#include "exec/trace_event.hpp"

#include <nlohmann/json.hpp>

namespace tauplan::exec {

std::string trace_name(const model::Op& op) {
  const std::string label = op.label.empty() ? model::to_string(op.kind) : op.label;
  if (op.kind != model::OpKind::Collective) return label;
  return label + " (" + op.algorithm + ")";
}

std::string serialize_trace(const std::vector<TraceEvent>& events) {
  nlohmann::json list = nlohmann::json::array();
  for (const TraceEvent& e : events)
    list.push_back(
        {e.name, e.category, e.track, e.round, e.start_s, e.duration_s, e.steps, e.messages});
  return list.dump();
}

std::vector<TraceEvent> parse_trace(const std::string& text) {
  std::vector<TraceEvent> events;
  for (const auto& item : nlohmann::json::parse(text)) {
    TraceEvent e;
    e.name = item.at(0).get<std::string>();
    e.category = item.at(1).get<std::string>();
    e.track = item.at(2).get<int>();
    e.round = item.at(3).get<long long>();
    e.start_s = item.at(4).get<double>();
    e.duration_s = item.at(5).get<double>();
    e.steps = item.at(6).get<long long>();
    e.messages = item.at(7).get<long long>();
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace tauplan::exec
