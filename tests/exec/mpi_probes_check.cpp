// mpi_probes_check.cpp: run under `mpirun -np 3`: the MPI network probes (exec/mpi_probes.hpp)
// answer every rank alike, over loopback.
//
// (a) round_trips(0, 2, 10): 10 positive finite times; (b) one flow 0->1 for 0.8 s (0.3 s
// warm-up): a positive rate; (c) flows {0->1, 2->1} (two into one rank) and {0->1, 1->2} (rank 1
// receives and sends at once): positive rates; (d) a flow 1->1, and a duration of 0.3 s with a
// warm-up of 0.2 s, throw std::invalid_argument on every rank without a message, and the probes
// still work afterwards. Every answer must be the same on every rank (element-wise minimum and
// maximum over the ranks agree). Loopback rates depend on the machine, so only their sign and
// finiteness are checked, never their values. Exits 0 (rank 0 prints "mpi_probes_check: ok"),
// 1 when a check fails (the failing rank says which), 77 (skip) without 3 ranks.
#include <mpi.h>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "exec/mpi_communicator.hpp"
#include "exec/mpi_probes.hpp"

using tauplan::exec::MpiSession;
using tauplan::exec::ProbeNetwork;
using Flows = std::vector<std::pair<int, int>>;

namespace {

class Checks {
 public:
  explicit Checks(int rank) : rank_(rank) {}
  void expect(bool holds, const std::string& what) {
    if (holds) return;
    ++failures_;
    std::fprintf(stderr, "mpi_probes_check: rank %d: FAILED: %s\n", rank_, what.c_str());
  }
  int failures() const { return failures_; }

 private:
  int rank_;
  int failures_ = 0;
};

bool same_on_every_rank(const std::vector<double>& values) {
  const int size = static_cast<int>(values.size());
  int smallest_size = 0, largest_size = 0;
  MPI_Allreduce(&size, &smallest_size, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&size, &largest_size, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (smallest_size != largest_size) return false;
  std::vector<double> smallest(values.size()), largest(values.size());
  MPI_Allreduce(values.data(), smallest.data(), size, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(values.data(), largest.data(), size, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return smallest == largest;
}

bool positive_finite(const std::vector<double>& values, std::size_t expected_size) {
  if (values.size() != expected_size) return false;
  for (double v : values)
    if (!(std::isfinite(v) && v > 0)) return false;
  return true;
}

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values)
    text += (text.empty() ? "" : " ") + std::to_string(v);
  return text;
}

void check_rates(ProbeNetwork& probes, const Flows& flows, const std::string& name, int rank,
                 Checks& checks) {
  const std::vector<double> rates = probes.concurrent_rates(flows, 0.8, 0.3);
  checks.expect(positive_finite(rates, flows.size()), name + ": rates (B/s) " + listed(rates));
  checks.expect(same_on_every_rank(rates), name + ": rates differ between ranks");
  if (rank == 0)
    std::printf("mpi_probes_check: %s: rates (B/s) %s\n", name.c_str(), listed(rates).c_str());
}

// True on every rank when `probe` threw std::invalid_argument on every rank.
template <typename Probe>
bool refused_everywhere(Probe probe) {
  int refused = 0;
  try {
    probe();
  } catch (const std::invalid_argument&) {
    refused = 1;
  }
  int refused_by_all = 0;
  MPI_Allreduce(&refused, &refused_by_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return refused_by_all == 1;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  if (session.size() != 3) {
    if (session.rank() == 0)
      std::printf("mpi_probes_check: needs 3 ranks, got %d: skipped\n", session.size());
    return 77;
  }
  const int rank = session.rank();
  Checks checks(rank);
  const std::unique_ptr<ProbeNetwork> probes = tauplan::exec::make_mpi_probe_network();
  checks.expect(probes->host_count() == 3, "host_count() is not 3");
  checks.expect(tauplan::exec::mpi_probe_rank() == rank, "mpi_probe_rank() is not the rank");

  const std::vector<double> round_trips = probes->round_trips(0, 2, 10);
  checks.expect(positive_finite(round_trips, 10), "round trips 0<->2: " + listed(round_trips));
  checks.expect(same_on_every_rank(round_trips), "round trips 0<->2 differ between ranks");
  if (rank == 0)
    std::printf("mpi_probes_check: round trips 0<->2 (s) %s\n", listed(round_trips).c_str());

  check_rates(*probes, {{0, 1}}, "flow 0->1", rank, checks);
  check_rates(*probes, {{0, 1}, {2, 1}}, "flows 0->1, 2->1", rank, checks);
  check_rates(*probes, {{0, 1}, {1, 2}}, "flows 0->1, 1->2", rank, checks);

  checks.expect(refused_everywhere([&] {
                  probes->concurrent_rates({{1, 1}}, 0.8, 0.3);
                }),
                "a flow 1->1 was not refused on every rank");
  checks.expect(refused_everywhere([&] {
                  probes->concurrent_rates({{0, 1}}, 0.3, 0.2);
                }),
                "a 0.3 s duration with a 0.2 s warm-up was not refused on every rank");
  checks.expect(refused_everywhere([&] { probes->round_trips(1, 1, 5); }),
                "round trips 1<->1 were not refused on every rank");
  const std::vector<double> after = probes->round_trips(2, 1, 3);
  checks.expect(positive_finite(after, 3),
                "round trips 2<->1 after the refusals: " + listed(after));
  checks.expect(same_on_every_rank(after), "round trips 2<->1 after the refusals differ");
  checks.expect(!probes->method().empty(), "method() is empty");

  const int failures = checks.failures();
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (all_failures == 0)
      std::printf("mpi_probes_check: ok\n");
    else
      std::printf("mpi_probes_check: %d checks failed\n", all_failures);
  }
  return all_failures == 0 ? 0 : 1;
}
