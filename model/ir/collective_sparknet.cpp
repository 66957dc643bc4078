// collective_sparknet.cpp: SparkNet's round synchronisation, broadcast then collect via a driver.
//
// The Spark driver broadcasts the averaged parameters (N bytes) to every worker and collects
// every worker's parameters back to average them (SparkNet's ImageNetApp: sc.broadcast, then
// reduce + divide). Analytic cost: fan-out of N from the driver plus fan-in of N to it, each
// bounded by the driver's link. Leaves out: Spark's torrent broadcast and tree reduce (which
// spread the load), task scheduling and serialisation overheads (give S directly to model them).
#include "model/ir/collective.hpp"
#include "model/ir/collective_fan.hpp"

namespace tauplan::model {
namespace {

class SparkNetBroadcastCollect : public CollectiveAlgorithm {
 public:
  const char* name() const override { return "sparknet"; }
  const char* description() const override {
    return "SparkNet: driver broadcasts N to the K workers, then collects N from each";
  }
  int servers_needed() const override { return 1; }
  // Kept to reproduce SparkNet: a one-server parameter server without sharding, never faster
  // than `ps` with one server, so plan searches it only when an inventory asks for it.
  bool searched_by_default() const override { return false; }
  double time_s(const CollectiveCall& call, const Platform& platform) const override {
    if (call.servers.empty() || call.hosts.empty()) return 0;
    const int driver = call.servers.front();
    return fan_out_time_s(driver, call.hosts, call.bytes, platform) +
           fan_in_time_s(call.hosts, driver, call.bytes, platform);
  }
};

}  // namespace

std::unique_ptr<CollectiveAlgorithm> make_sparknet_broadcast_collect() {
  return std::make_unique<SparkNetBroadcastCollect>();
}

}  // namespace tauplan::model
