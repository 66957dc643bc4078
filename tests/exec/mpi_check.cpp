// mpi_check.cpp: run under `mpirun -np W` (W = 2..6): every MPI collective algorithm against the
// thread communicator.
//
// For every algorithm that fits W ranks with K = 2..4 workers (ring, tree, hierarchical: K = W;
// ps: K = W - s for s = 1, 2 server ranks; sparknet: K = W - 1), each rank builds the plan and
// the MpiCommunicator, then:
//  1. one combine (weighted mean, unequal integer weights) of known random vectors of n = 1, 3,
//     1001 and 40003 floats (a ring of 2's chunks of 20002 floats go as two-way pieces of
//     MpiPeers::kExchangePieceFloats, the last one short), compared with
//     ThreadCommunicator::combine of the same K vectors: the largest difference relative to the
//     largest |mean| must be <= 1e-6 (and 0 for ps and sparknet, whose servers call combine_mean in
//     worker order: bit for bit by construction);
//  2. 12 steps of sync and of local-sgd (tau 3) trained through MPI and through K threads: the
//     final parameters must agree to 1e-6 relative (bitwise for ps and sparknet);
//  3. Adasum (an all-gather then the thread communicator's tree): bitwise;
//  3b. a combine over a subgroup (K >= 3: workers K-1 and 1, in that order; Plan collectives
//     over subgroups): the members' result equals ThreadCommunicator::combine_group's to 1e-6,
//     the other workers' vectors are untouched; a server algorithm refuses such a plan
//     (InputError naming `collective`);
//  1b/2b. on every server rank of ps and sparknet, its own processing record (serve()'s
//     ServerProcessing): one call per combine (case 1) and per collective of a trained round
//     (case 2: 12 steps, all run), 2K messages and K x its shard's floats x 4 bytes a call (the
//     shard: chunk_range of the n floats over the s servers), its index and host, and
//     0 < processing < serving wall;
//  4. every collective of model/ir/collective.hpp has an MPI implementation; bad inputs: an
//     algorithm exec/ does not know is an InputError naming `collective`, and a plan whose
//     K (+ s) differs from W one naming `workers`.
// Hierarchical runs with one node per worker, all workers on one node, and 2 per node (K = 4).
// Rank 0 prints one line per case with the differences (the per-algorithm figures of the
// report). Exits 0 when every case passes, 1 otherwise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "exec/cpu_replica.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/p2p_collective.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/trainer.hpp"
#include "exec_support.hpp"
#include "model/base/error.hpp"
#include "model/ir/collective.hpp"

using namespace tauplan;
using namespace tauplan::exec;

namespace {

struct Case {
  std::string algorithm;
  int workers = 0;
  int servers = 0;
  int per_node = 1;  // workers per node (hierarchical's shape)
  std::string label() const {
    std::string out = algorithm + " K=" + std::to_string(workers);
    if (servers > 0) out += " s=" + std::to_string(servers);
    if (algorithm == "hierarchical") out += " G=" + std::to_string(per_node);
    return out;
  }
};

model::Platform platform_for(const Case& c) {
  std::vector<model::HostRole> roles(static_cast<std::size_t>(c.workers), model::HostRole::Worker);
  roles.resize(static_cast<std::size_t>(c.workers + c.servers), model::HostRole::Server);
  model::Platform p =
      model::make_crossbar_platform(std::vector<double>(roles.size(), 1e9), 1e9, 1e-5, 0, roles);
  for (int k = 0; k < c.workers; ++k)
    p.hosts[static_cast<std::size_t>(k)].node = "n" + std::to_string(k / c.per_node);
  return p;
}

model::Plan plan_for(const Case& c, const model::Platform& platform, const std::string& strategy,
                     double batch, int tau) {
  model::StrategyOptions o;
  o.file = "<mpi_check>";
  o.workers = c.workers;
  o.batch = batch;
  o.tau = tau;
  o.collective = c.algorithm;
  o.servers = std::max(1, c.servers);
  o.check_memory = false;
  return model::make_plan(strategy, o, test::tiny_workload(), platform, model::FixedCounts(1));
}

std::vector<float> random_vector(std::size_t n, int worker) {
  std::mt19937 rng(1000u + static_cast<unsigned>(worker));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v)
    x = normal(rng);
  return v;
}

std::int64_t ulp_distance(float a, float b) {
  std::int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  const std::int64_t oa = ia < 0 ? std::int64_t{INT32_MIN} - ia : ia;
  const std::int64_t ob = ib < 0 ? std::int64_t{INT32_MIN} - ib : ib;
  return oa > ob ? oa - ob : ob - oa;
}

struct Difference {
  double relative = 0;    // max |a - b| / max |b|
  std::int64_t ulps = 0;  // max distance in units in the last place
  bool bitwise = true;
};

Difference compare(const std::vector<float>& got, const std::vector<float>& want) {
  Difference d;
  double worst = 0, scale = 0;
  if (got.size() != want.size()) return {1e300, INT64_MAX, false};
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
    d.ulps = std::max(d.ulps, ulp_distance(got[i], want[i]));
    if (got[i] != want[i]) d.bitwise = false;
  }
  d.relative = scale > 0 ? worst / scale : worst;
  return d;
}

std::vector<Case> cases_for(int world) {
  std::vector<Case> cases;
  for (const std::string& name : p2p_collective_names()) {
    const bool servers = p2p_collective(name, "<mpi_check>").uses_servers();
    std::vector<int> server_counts = servers ? std::vector<int>{1} : std::vector<int>{0};
    if (name == "ps") server_counts = {1, 2};
    for (int s : server_counts) {
      const int k = world - s;
      if (k < 2 || k > 4) continue;
      if (name == "hierarchical") {
        for (int g : {1, k, 2})
          if (k % g == 0 && !(g == 2 && k != 4)) cases.push_back({name, k, s, g});
      } else {
        cases.push_back({name, k, s, 1});
      }
    }
  }
  return cases;
}

/// 1b, 2b: a server rank's record of `calls` calls on vectors of n floats (closed forms).
template <typename Fail>
void check_served(const Case& c, int rank, std::size_t n, long long calls,
                  const ServerProcessing& p, const Fail& fail) {
  const int j = rank - c.workers;
  const auto [begin, end] = chunk_range(n, c.servers, j);
  const auto shard_bytes = static_cast<long long>((end - begin) * sizeof(float));
  const std::string where =
      c.label() + " n=" + std::to_string(n) + " server " + std::to_string(j) + ": ";
  if (p.server != j || p.host.empty()) fail(where + "wrong server index or no host");
  if (p.calls != calls)
    fail(where + std::to_string(p.calls) + " calls served, expected " + std::to_string(calls));
  if (p.messages != 2LL * c.workers * calls)
    fail(where + std::to_string(p.messages) + " messages, expected 2 K calls");
  if (p.bytes != calls * c.workers * shard_bytes)
    fail(where + std::to_string(p.bytes) + " bytes, expected K x shard x 4 x calls = " +
         std::to_string(calls * c.workers * shard_bytes));
  if (!(p.processing_s > 0 && p.processing_s < p.wall_s()))
    fail(where + "processing " + std::to_string(p.processing_s) + " s not in (0, wall " +
         std::to_string(p.wall_s()) + " s)");
}

/// 3b: one combine over the subgroup {K-1, 1} of a plan that has a collective over it.
template <typename Fail>
std::string subgroup_case(const Case& c, const model::Platform& platform, int rank,
                          const Fail& fail) {
  model::Plan plan = plan_for(c, platform, "sync", 32, 1);
  model::Op narrow;
  narrow.kind = model::OpKind::Collective;
  narrow.label = "subgroup all-reduce";
  narrow.algorithm = c.algorithm;
  narrow.group = {c.workers - 1, 1};
  plan.add(narrow);
  if (p2p_collective(c.algorithm, "<mpi_check>").uses_servers()) {
    try {
      MpiCommunicator refused(plan, platform, "job.yaml");
      fail(c.label() + ": a subgroup collective was accepted by a server algorithm");
    } catch (const InputError& e) {
      if (e.key() != "collective") fail(c.label() + ": subgroup: wrong key: " + e.what());
    }
    return " subgroup refused (ok);";
  }
  MpiCommunicator comm(plan, platform, "<mpi_check>");
  comm.align_start();
  const std::size_t n = 1001;
  std::vector<std::vector<float>> inputs;
  for (int k = 0; k < c.workers; ++k)
    inputs.push_back(random_vector(n, k));
  std::vector<float> mine = inputs[static_cast<std::size_t>(rank)];
  const bool member = rank == c.workers - 1 || rank == 1;
  const double weight = static_cast<double>(rank + 1);
  comm.combine_group(narrow.group,
                     member ? std::vector<float*>{mine.data()} : std::vector<float*>{}, {weight}, n,
                     CombineRule::Mean);
  comm.barrier();
  ThreadCommunicator threads(c.workers);
  std::vector<float> last = inputs.back(), second = inputs[1];
  threads.combine_group(narrow.group, {last.data(), second.data()},
                        {static_cast<double>(c.workers), 2.0}, n, CombineRule::Mean);
  const Difference d = compare(mine, member ? second : inputs[static_cast<std::size_t>(rank)]);
  if (d.relative > 1e-6 || (!member && !d.bitwise))
    fail(c.label() + " subgroup combine differs from threads on rank " + std::to_string(rank));
  char text[96];
  std::snprintf(text, sizeof text, " subgroup rel %.2g;", d.relative);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  const int rank = session.size() > 0 ? session.rank() : 0;
  const int world = session.size();
  const Dataset data = test::tiny_data();
  int failures = 0;
  const auto fail = [&](const std::string& what) {
    std::printf("rank %d: FAIL: %s\n", rank, what.c_str());
    ++failures;
  };

  for (const Case& c : cases_for(world)) {
    const model::Platform platform = platform_for(c);
    const bool exact = c.servers > 0;  // server algorithms: combine_mean on the server
    std::string line = "W=" + std::to_string(world) + " " + c.label() + ":";

    // 1. One combine of known vectors.
    {
      const model::Plan plan = plan_for(c, platform, "sync", 32, 1);
      MpiCommunicator comm(plan, platform, "<mpi_check>");
      for (std::size_t n :
           {std::size_t{1}, std::size_t{3}, std::size_t{1001}, std::size_t{40003}}) {
        if (comm.is_server()) {
          ServerProcessing served;
          comm.serve(0, &served);
          check_served(c, rank, n, 1, served, fail);
          continue;
        }
        comm.align_start();
        std::vector<std::vector<float>> inputs;
        std::vector<double> weights;
        for (int k = 0; k < c.workers; ++k) {
          inputs.push_back(random_vector(n, k));
          weights.push_back(static_cast<double>(k + 1));  // unequal integer weights
        }
        std::vector<float> mine = inputs[static_cast<std::size_t>(rank)];
        comm.combine({mine.data()}, {weights[static_cast<std::size_t>(rank)]}, n,
                     CombineRule::Mean);
        comm.finish();
        ThreadCommunicator threads(c.workers);
        std::vector<float*> buffers;
        for (auto& v : inputs)
          buffers.push_back(v.data());
        threads.combine(buffers, weights, n, CombineRule::Mean);
        const Difference d = compare(mine, inputs.front());
        char text[160];
        std::snprintf(text, sizeof text, " combine n=%zu rel %.2g (%lld ulp)%s;", n, d.relative,
                      static_cast<long long>(d.ulps), d.bitwise ? " bitwise" : "");
        line += text;
        if (d.relative > 1e-6 || (exact && !d.bitwise))
          fail(c.label() + " combine n=" + std::to_string(n) + " differs from threads");
      }
    }

    // 2. Training: sync and local-sgd through MPI and through K threads. 3. Adasum (ring only).
    struct Run {
      const char* strategy;
      double batch;
      int tau;
      CombineRule rule;
    };
    std::vector<Run> runs = {{"sync", 32, 1, CombineRule::Mean},
                             {"local-sgd", 16, 3, CombineRule::Mean}};
    if (c.algorithm == "ring") runs.push_back({"sync", 32, 1, CombineRule::Adasum});
    for (const Run& r : runs) {
      const model::Plan plan = plan_for(c, platform, r.strategy, r.batch, r.tau);
      TrainOptions o = test::quick_options(12);
      o.combine = r.rule;
      MpiCommunicator comm(plan, platform, "<mpi_check>");
      if (comm.is_server()) {
        ServerProcessing served;
        comm.serve(0, &served);
        long long collectives = 0;  // per round
        for (model::OpId v : plan.topological_order())
          collectives += plan.op(v).kind == model::OpKind::Collective ? 1 : 0;
        check_served(c, rank, test::tiny_shape().parameters(), o.max_steps / r.tau * collectives,
                     served, fail);
        continue;
      }
      const Measurement distributed =
          train(plan, platform, data, test::tiny_shape(), comm, cpu_replica_factory(), o);
      ThreadCommunicator threads(c.workers);
      const Measurement local =
          train(plan, platform, data, test::tiny_shape(), threads, cpu_replica_factory(), o);
      const Difference d = compare(distributed.final_parameters, local.final_parameters);
      const bool must_be_exact = exact || r.rule == CombineRule::Adasum;
      char text[160];
      std::snprintf(text, sizeof text, " %s%s trained rel %.2g (%lld ulp)%s;", r.strategy,
                    r.rule == CombineRule::Adasum ? " adasum" : "", d.relative,
                    static_cast<long long>(d.ulps), d.bitwise ? " bitwise" : "");
      line += text;
      if (d.relative > 1e-6 || (must_be_exact && !d.bitwise) || distributed.communicator != "mpi")
        fail(c.label() + " " + r.strategy + " training differs from threads");
    }
    if (c.workers >= 3) line += subgroup_case(c, platform, rank, fail);
    if (rank == 0) std::printf("%s\n", line.c_str());
  }

  // Every algorithm the model costs (and the simulator lowers) is executed over MPI.
  {
    std::vector<std::string> model_names = model::collective_algorithm_names();
    std::vector<std::string> mpi_names = p2p_collective_names();
    std::sort(model_names.begin(), model_names.end());
    std::sort(mpi_names.begin(), mpi_names.end());
    if (model_names != mpi_names) fail("the MPI algorithms are not the model's collectives");
  }

  // 4. Bad inputs (InputErrors are thrown before any message, on every rank alike).
  {
    const Case ring{"ring", world, 0, 1};
    const model::Platform platform = platform_for(ring);
    model::Plan plan = plan_for(ring, platform, "sync", 32, 1);
    plan.collective = "butterfly";
    try {
      MpiCommunicator unknown(plan, platform, "job.yaml");
      fail("an unknown algorithm was accepted");
    } catch (const InputError& e) {
      if (e.key() != "collective") fail(std::string("unknown algorithm: wrong key: ") + e.what());
      if (rank == 0) std::printf("unknown algorithm: %s (ok)\n", e.what());
    }
    const Case more{"ring", world + 1, 0, 1};
    const model::Platform bigger = platform_for(more);
    try {
      MpiCommunicator wrong(plan_for(more, bigger, "sync", 32, 1), bigger, "job.yaml");
      fail("K = W + 1 was accepted");
    } catch (const InputError& e) {
      if (e.key() != "workers") fail(std::string("K = W + 1: wrong key: ") + e.what());
      if (rank == 0) std::printf("K = W + 1: %s (ok)\n", e.what());
    }
  }
  return failures == 0 ? 0 : 1;
}
