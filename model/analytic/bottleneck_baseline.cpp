// bottleneck_baseline.cpp: see bottleneck_baseline.hpp.
#include "model/analytic/bottleneck_baseline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace tauplan::model {
namespace {

/// Bytes and flows a stage puts on one link.
struct LinkLoad {
  double bytes = 0;
  int flows = 0;
};

void check_host(int host, const Platform& platform, const std::string& phase) {
  if (host < 0 || static_cast<size_t>(host) >= platform.hosts.size())
    throw std::invalid_argument("bottleneck baseline: stage '" + phase + "' names host " +
                                std::to_string(host) + " of " +
                                std::to_string(platform.hosts.size()));
}

StageBottleneck stage_bottleneck(const TrafficStage& stage, const Platform& platform) {
  if (stage.repeat < 1)
    throw std::invalid_argument("bottleneck baseline: stage '" + stage.phase +
                                "' repeats fewer than once");
  StageBottleneck out;
  out.phase = stage.phase;
  out.repeat = stage.repeat;
  std::map<int, LinkLoad> loads;
  for (const TrafficFlow& flow : stage.flows) {
    check_host(flow.src_host, platform, stage.phase);
    check_host(flow.dst_host, platform, stage.phase);
    if (!(flow.bytes >= 0))
      throw std::invalid_argument("bottleneck baseline: stage '" + stage.phase +
                                  "' has a flow of negative bytes");
    if (flow.src_host == flow.dst_host || flow.bytes == 0) continue;
    const Route& route = platform.route(flow.src_host, flow.dst_host);
    out.latency_s = std::max(out.latency_s, route.latency_s);
    for (int l : route.links) {
      LinkLoad& load = loads[l];
      // A fat pipe gives every flow its whole bandwidth: the largest flow decides.
      if (platform.links.at(static_cast<size_t>(l)).sharing == LinkSharing::FatPipe) {
        load.bytes = std::max(load.bytes, flow.bytes);
      } else {
        load.bytes += flow.bytes;
        ++load.flows;
      }
    }
  }
  double busiest_s = 0;
  for (const auto& [l, load] : loads) {
    const Link& link = platform.links.at(static_cast<size_t>(l));
    out.most_flows_on_a_link = std::max(out.most_flows_on_a_link, load.flows);
    const double seconds = load.bytes / link.bandwidth_Bps;
    if (out.link < 0 || seconds > busiest_s) {
      busiest_s = seconds;
      out.link = l;
      out.link_bytes = load.bytes;
      out.bandwidth_Bps = link.bandwidth_Bps;
    }
  }
  out.seconds = busiest_s + out.latency_s;
  return out;
}

}  // namespace

BottleneckBaseline bottleneck_baseline(const std::vector<TrafficStage>& stages,
                                       const Platform& platform) {
  BottleneckBaseline out;
  for (const TrafficStage& stage : stages) {
    out.stages.push_back(stage_bottleneck(stage, platform));
    const StageBottleneck& b = out.stages.back();
    out.comm_s += static_cast<double>(b.repeat) * b.seconds;
    out.most_flows_on_a_link = std::max(out.most_flows_on_a_link, b.most_flows_on_a_link);
  }
  return out;
}

std::vector<TrafficStage> concurrent_stages(const std::vector<std::vector<TrafficStage>>& jobs) {
  std::vector<TrafficStage> out;
  for (const std::vector<TrafficStage>& job : jobs)
    for (size_t i = 0; i < job.size(); ++i) {
      if (i == out.size()) {
        out.push_back(job[i]);
        continue;
      }
      TrafficStage& merged = out[i];
      merged.flows.insert(merged.flows.end(), job[i].flows.begin(), job[i].flows.end());
      merged.repeat = std::max(merged.repeat, job[i].repeat);
    }
  return out;
}

double baseline_round_s(double analytic_round_s, double analytic_comm_s, double baseline_comm_s) {
  if (!std::isfinite(analytic_round_s) || !std::isfinite(analytic_comm_s) ||
      !std::isfinite(baseline_comm_s))
    return std::numeric_limits<double>::quiet_NaN();
  return std::max(0.0, analytic_round_s - analytic_comm_s) + baseline_comm_s;
}

}  // namespace tauplan::model
