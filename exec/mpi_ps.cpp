// mpi_ps.cpp: parameter server over MPI point-to-point messages (model/ir/collective_ps.cpp's and
// sim/lower_ps.cpp's "ps").
//
// The run has K worker ranks and s server ranks (K..K+s-1, the plan's server hosts). Each call:
// every worker pushes [shard j of x (N/s floats), w] to server j and waits for shard j's mean
// (pull); each server receives the K shards, combine_mean()s them in worker order (so the floats
// are the thread communicator's, bit for bit) and sends the result to every worker. A server
// rank serves call after call until every worker has sent it a stop message at the end of the
// run. Messages: K s pushes and K s pulls per call, as the simulator's flows. Each server reports
// its own processing per call (ServedCall: from the K pushes in to the K replies posted, 2K
// messages, K x its shard's floats x 4 bytes), which measure gathers as the row's `servers`
// (model/ir/server_work.hpp's per-message and per-byte work is fitted to it). Leaves out:
// asynchronous or stale updates, and server-side optimizers (the server only averages).
#include "exec/mpi_algorithm.hpp"

namespace tauplan::exec {
namespace {

constexpr int kTagPush = 31;
constexpr int kTagPull = 32;
constexpr int kTagStop = 33;

class MpiParameterServer : public MpiAlgorithm {
 public:
  const char* name() const override { return "ps"; }
  bool uses_servers() const override { return true; }
  void mean(const MpiLayout& layout, MpiMessages& messages, float* data, double weight,
            std::size_t n) const override {
    push_pull_mean(layout, messages, data, weight, n, kTagPush, kTagPull,
                   "ps push and pull with the server ranks");
  }
  bool serve(const MpiLayout& layout, MpiMessages& messages, ServedCall* call) const override {
    return serve_push_pull(layout, messages, kTagPush, kTagPull, kTagStop,
                           "ps server: the workers' push", call);
  }
  void finish(const MpiLayout& layout, MpiMessages& messages) const override {
    stop_servers(layout, messages, kTagStop);
  }
};

}  // namespace

std::unique_ptr<MpiAlgorithm> make_mpi_ps() {
  return std::make_unique<MpiParameterServer>();
}

}  // namespace tauplan::exec
