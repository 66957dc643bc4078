// latency_jitter.cpp: see latency_jitter.hpp.
#include "sim/latency_jitter.hpp"

#include <algorithm>

#include "sim/random.hpp"

namespace tauplan::sim {
namespace {
/// stream_seed's purpose for latency jitter (1 is stragglers, 2 and up failures).
constexpr unsigned long long kLatencyJitterPurpose = 0x1A7E;
}  // namespace

namespace sg4 = simgrid::s4u;

LatencyJitter::LatencyJitter(double amplitude, unsigned long long seed)
    : amplitude_(amplitude), seed_(seed) {
  std::vector<sg4::Link*> links = sg4::Engine::get_instance()->get_all_links();
  std::sort(links.begin(), links.end(),
            [](const sg4::Link* a, const sg4::Link* b) { return a->get_name() < b->get_name(); });
  for (sg4::Link* link : links)
    nominal_.emplace_back(link, link->get_latency());
}

LatencyJitter::~LatencyJitter() {
  for (const auto& [link, latency] : nominal_)
    link->set_latency(latency);
}

std::vector<double> LatencyJitter::factors(double amplitude, unsigned long long seed,
                                           long long round, size_t links) {
  Rng rng(stream_seed(seed, kLatencyJitterPurpose, static_cast<unsigned long long>(round)));
  std::vector<double> result(links);
  for (double& f : result)
    f = 1 + amplitude * (2 * rng.uniform() - 1);
  return result;
}

void LatencyJitter::draw(long long round) {
  const std::vector<double> f = factors(amplitude_, seed_, round, nominal_.size());
  for (size_t i = 0; i < nominal_.size(); ++i)
    nominal_[i].first->set_latency(nominal_[i].second * f[i]);
}

}  // namespace tauplan::sim
