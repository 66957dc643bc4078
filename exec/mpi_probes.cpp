// mpi_probes.cpp: round trips and concurrent bulk flows between MPI ranks (mpi_probes.hpp).
//
// Every call validates its arguments before any message (the same on every rank, so every rank
// throws alike), starts with a barrier and ends with a broadcast or a sum, so every rank returns
// the same answer. A concurrent-rate probe runs one progress loop per rank (MPI_Testsome over its
// sends and receives, no threads). A flow's end is a zero-byte message with the flow's own tag:
// MPI does not let it overtake the flow's chunks, so when it arrives no more data comes, and the
// receives still posted are cancelled. A rank waits for the others (the barrier, the broadcast,
// the sum) without spinning: it tests its request every 200 us and sleeps in between, so ranks
// that a probe is not timing leave the cores to those it times (which spin, in MPI_Recv or
// MPI_Testsome). Measured with testbed-two-nodes' 6 ranks on 2 cores beside two busy loops:
// calibrate --network --mpi's echo noise was 0.95-1.63 ms in 5 runs with every waiter spinning
// (two found one switch instead of two), 0.11-0.19 ms in 3 runs with waiters asleep; on free
// cores, spinning, 0.07-0.24 ms in 6 (2026-12-01, after stop 55's CI failed in this probe's
// test). MPI errors are fatal (no error handler is set), so a wait never throws with its request
// still running. What it leaves out: recovering from a lost rank (a flow that has not ended 30 s
// after the duration throws), and chunk sizes other than 128 KiB.
#include "exec/mpi_probes.hpp"

#include <stdexcept>
#include <string>

#ifdef TAUPLAN_HAVE_MPI

#include <mpi.h>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "exec/mpi_peers.hpp"
#include "exec/mpi_watchdog.hpp"

namespace tauplan::exec {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRoundTripTag = 0;
constexpr int kFirstFlowTag = 1;    // flow f sends its chunks and its end with this + f
constexpr int kLargestTag = 32767;  // the least MPI_TAG_UB the standard allows
constexpr int kEchoBytes = 8;
constexpr int kWarmupEchoes = 3;
// 128 KiB: above OpenMPI's TCP eager limit (64 KiB), so every chunk is a rendezvous and a sender
// never floods a receiver with unexpected eager data (with 60 KiB eager chunks, two flows into one
// rank over loopback measured nothing in their window); small enough that a 12.5 MB/s link shared
// by 3 flows completes about 30 chunks a flow in a 0.9 s window.
constexpr int kChunkBytes = 128 * 1024;
// Sends in flight (and receives posted) per flow: 1 MiB, above a bandwidth-delay product of 16 ms
// at 50 MB/s (800 KB), as a rendezvous costs a round trip before each chunk's data; with 2 chunks
// of 256 KiB one flow alone over a 16 ms round trip got 9 MB/s of a 12.5 MB/s testbed route.
constexpr int kOutstandingPerFlow = 8;
constexpr double kWindowEndMargin_s = 0.1;
constexpr double kMinimumWindow_s = 0.1;
constexpr double kEndGrace_s = 30;  // after the duration, a flow must have ended by then

void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI probes: error in ") + call);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string flow_name(const std::pair<int, int>& flow) {
  return std::to_string(flow.first) + "->" + std::to_string(flow.second);
}

void validate_round_trips(int a, int b, int count, int hosts) {
  if (a < 0 || a >= hosts || b < 0 || b >= hosts || a == b)
    throw std::invalid_argument("MPI probes: round trips between hosts " + std::to_string(a) +
                                " and " + std::to_string(b) + " of " + std::to_string(hosts) +
                                " (two distinct hosts needed)");
  if (count < 0)
    throw std::invalid_argument("MPI probes: negative round-trip count " + std::to_string(count));
}

void validate_flows(const std::vector<std::pair<int, int>>& flows, double duration_s,
                    double warmup_s, int hosts) {
  if (!std::isfinite(duration_s) || !std::isfinite(warmup_s) || warmup_s < 0 ||
      duration_s - kWindowEndMargin_s - warmup_s <= kMinimumWindow_s)
    throw std::invalid_argument("MPI probes: a duration of " + std::to_string(duration_s) +
                                " s with a warm-up of " + std::to_string(warmup_s) +
                                " s leaves no window (duration > warm-up + 0.2 s needed)");
  if (flows.size() > static_cast<std::size_t>(kLargestTag - kFirstFlowTag))
    throw std::invalid_argument("MPI probes: too many flows (" + std::to_string(flows.size()) +
                                ")");
  std::set<std::pair<int, int>> seen;
  for (const std::pair<int, int>& flow : flows) {
    const bool in_range =
        flow.first >= 0 && flow.first < hosts && flow.second >= 0 && flow.second < hosts;
    if (!in_range || flow.first == flow.second)
      throw std::invalid_argument("MPI probes: flow " + flow_name(flow) + " is not between two " +
                                  "distinct hosts of " + std::to_string(hosts));
    if (!seen.insert(flow).second)
      throw std::invalid_argument("MPI probes: flow " + flow_name(flow) + " given twice");
  }
}

// One rank's part of a concurrent-rate probe: the sends of its outgoing flows and the receives of
// its incoming ones, each flow holding kOutstandingPerFlow request slots.
/// Least-squares slope of bytes against seconds; 0 when every point has the same time.
double arrival_slope(const std::vector<std::pair<double, double>>& points) {
  double mean_t = 0, mean_b = 0;
  for (const auto& [t, b] : points) {
    mean_t += t;
    mean_b += b;
  }
  mean_t /= static_cast<double>(points.size());
  mean_b /= static_cast<double>(points.size());
  double tt = 0, tb = 0;
  for (const auto& [t, b] : points) {
    tt += (t - mean_t) * (t - mean_t);
    tb += (t - mean_t) * (b - mean_b);
  }
  return tt > 0 ? tb / tt : 0.0;
}

class ConcurrentProbe {
 public:
  ConcurrentProbe(MPI_Comm comm, int rank, const std::vector<std::pair<int, int>>& flows,
                  double duration_s, double warmup_s)
      : comm_(comm),
        flows_(flows),
        duration_s_(duration_s),
        warmup_s_(warmup_s),
        send_chunk_(kChunkBytes, 0),
        ended_(flows.size(), false),
        end_posted_(flows.size(), false),
        bytes_in_window_(flows.size(), 0),
        arrivals_(flows.size()) {
    for (std::size_t f = 0; f < flows.size(); ++f)
      for (int k = 0; k < kOutstandingPerFlow; ++k) {
        if (flows[f].first == rank) slots_.push_back({static_cast<int>(f), true});
        if (flows[f].second == rank) slots_.push_back({static_cast<int>(f), false});
      }
    requests_.assign(slots_.size(), MPI_REQUEST_NULL);
    receive_buffers_.assign(slots_.size(), std::vector<char>());
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].sends) receive_buffers_[i].assign(kChunkBytes, 0);
  }

  // Runs the flows from `start` (right after the barrier); returns each flow's rate as measured
  // here, 0 for the flows this rank does not receive.
  std::vector<double> run(Clock::time_point start) {
    start_ = start;
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].sends)
        post_send(i, kChunkBytes);
      else
        post_receive(i);
    progress_until_done();
    std::vector<double> rates(flows_.size(), 0.0);
    const double window_s = duration_s_ - kWindowEndMargin_s - warmup_s_;
    for (std::size_t f = 0; f < flows_.size(); ++f) {
      // The slope of the bytes received against the time they completed, by least squares over
      // the window's chunks: finer than whole chunks over the window (which round a flow's rate
      // down by up to a chunk), and steadier than the first-to-last span when chunks complete in
      // bursts. Fewer than three chunks: whole chunks over the window.
      rates[f] = arrivals_[f].size() >= 3 ? arrival_slope(arrivals_[f])
                                          : static_cast<double>(bytes_in_window_[f]) / window_s;
    }
    return rates;
  }

 private:
  struct Slot {
    int flow;
    bool sends;  // else receives
  };

  int tag(int flow) const { return kFirstFlowTag + flow; }

  void post_send(std::size_t slot, int bytes) {
    const int flow = slots_[slot].flow;
    check_mpi(MPI_Isend(send_chunk_.data(), bytes, MPI_BYTE, flows_[flow].second, tag(flow), comm_,
                        &requests_[slot]),
              "MPI_Isend");
    ++active_;
  }

  void post_receive(std::size_t slot) {
    const int flow = slots_[slot].flow;
    check_mpi(MPI_Irecv(receive_buffers_[slot].data(), kChunkBytes, MPI_BYTE, flows_[flow].first,
                        tag(flow), comm_, &requests_[slot]),
              "MPI_Irecv");
    ++active_;
  }

  void progress_until_done() {
    std::vector<int> done(requests_.size());
    std::vector<MPI_Status> statuses(requests_.size());
    while (active_ > 0) {
      int done_count = 0;
      check_mpi(MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &done_count,
                             done.data(), statuses.data()),
                "MPI_Testsome");
      if (done_count == MPI_UNDEFINED) break;
      for (int k = 0; k < done_count; ++k) {
        const auto slot = static_cast<std::size_t>(done[static_cast<std::size_t>(k)]);
        --active_;
        if (slots_[slot].sends)
          on_sent(slot);
        else
          on_received(slot, statuses[static_cast<std::size_t>(k)]);
      }
      if (active_ > 0 && seconds_since(start_) > duration_s_ + kEndGrace_s) throw_not_ended();
    }
  }

  // A chunk (or the end) left: send the next chunk while the duration lasts, then the end once.
  void on_sent(std::size_t slot) {
    const int flow = slots_[slot].flow;
    if (end_posted_[flow]) return;
    if (seconds_since(start_) < duration_s_) {
      post_send(slot, kChunkBytes);
      return;
    }
    end_posted_[flow] = true;
    post_send(slot, 0);
  }

  void on_received(std::size_t slot, const MPI_Status& status) {
    const int flow = slots_[slot].flow;
    int bytes = 0;
    check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
    if (bytes > 0) {
      count_chunk(flow, bytes);
      if (!ended_[flow]) post_receive(slot);
      return;
    }
    ended_[flow] = true;
    cancel_receives(flow);
  }

  void count_chunk(int flow, int bytes) {
    const double at_s = seconds_since(start_);
    if (at_s >= warmup_s_ && at_s <= duration_s_ - kWindowEndMargin_s) {
      const auto f = static_cast<std::size_t>(flow);
      bytes_in_window_[f] += bytes;
      arrivals_[f].push_back({at_s, static_cast<double>(bytes_in_window_[f])});
    }
  }

  // The flow's end arrived: its receives still posted match nothing more, unless one already
  // matched a chunk sent before the end (then it completes instead of being cancelled).
  void cancel_receives(int flow) {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].sends || slots_[i].flow != flow || requests_[i] == MPI_REQUEST_NULL) continue;
      check_mpi(MPI_Cancel(&requests_[i]), "MPI_Cancel");
      MPI_Status status;
      check_mpi(MPI_Wait(&requests_[i], &status), "MPI_Wait");
      --active_;
      int cancelled = 0;
      check_mpi(MPI_Test_cancelled(&status, &cancelled), "MPI_Test_cancelled");
      if (cancelled) continue;
      int bytes = 0;
      check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
      count_chunk(flow, bytes);
    }
  }

  [[noreturn]] void throw_not_ended() const {
    std::string open;
    for (std::size_t f = 0; f < flows_.size(); ++f)
      for (std::size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].flow == static_cast<int>(f) && requests_[i] != MPI_REQUEST_NULL) {
          open += (open.empty() ? "" : ", ") + flow_name(flows_[f]);
          break;
        }
    throw std::runtime_error("MPI probes: flows " + open + " have not ended " +
                             std::to_string(kEndGrace_s) + " s after the duration of " +
                             std::to_string(duration_s_) + " s");
  }

  MPI_Comm comm_;
  const std::vector<std::pair<int, int>>& flows_;
  double duration_s_;
  double warmup_s_;
  Clock::time_point start_;
  std::vector<char> send_chunk_;  // read by every send at once, never written
  std::vector<Slot> slots_;
  std::vector<MPI_Request> requests_;               // per slot, MPI_REQUEST_NULL when idle
  std::vector<std::vector<char>> receive_buffers_;  // per slot (empty for sends)
  std::vector<bool> ended_;                         // per flow: its end arrived here
  std::vector<bool> end_posted_;                    // per flow: this rank sent its end
  std::vector<long long> bytes_in_window_;          // per flow, received here
  // per flow: (completion time, bytes received in the window so far) of each chunk in it
  std::vector<std::vector<std::pair<double, double>>> arrivals_;
  int active_ = 0;  // requests not MPI_REQUEST_NULL
};

class MpiProbeNetwork final : public ProbeNetwork {
 public:
  MpiProbeNetwork() {
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiProbeNetwork() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  MpiProbeNetwork(const MpiProbeNetwork&) = delete;
  MpiProbeNetwork& operator=(const MpiProbeNetwork&) = delete;

  int host_count() const override { return size_; }

  std::vector<double> round_trips(int a, int b, int count) override {
    validate_round_trips(a, b, count, size_);
    barrier();
    std::vector<double> seconds(static_cast<std::size_t>(count), 0.0);
    if (rank_ == a || rank_ == b) {
      const MpiWait wait("an MPI round-trip probe");
      char message[kEchoBytes] = {};
      for (int i = 0; i < kWarmupEchoes + count; ++i) {
        if (rank_ == b) {
          check_mpi(
              MPI_Recv(message, kEchoBytes, MPI_BYTE, a, kRoundTripTag, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
          check_mpi(MPI_Send(message, kEchoBytes, MPI_BYTE, a, kRoundTripTag, comm_), "MPI_Send");
          continue;
        }
        const Clock::time_point sent = Clock::now();
        check_mpi(MPI_Send(message, kEchoBytes, MPI_BYTE, b, kRoundTripTag, comm_), "MPI_Send");
        check_mpi(
            MPI_Recv(message, kEchoBytes, MPI_BYTE, b, kRoundTripTag, comm_, MPI_STATUS_IGNORE),
            "MPI_Recv");
        if (i >= kWarmupEchoes)
          seconds[static_cast<std::size_t>(i - kWarmupEchoes)] = seconds_since(sent);
      }
    }
    const MpiWait wait("the broadcast of the round trips");
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibcast(seconds.data(), count, MPI_DOUBLE, a, comm_, &request), "MPI_Ibcast");
    wait_asleep(request, "MPI_Ibcast");
    return seconds;
  }

  std::vector<double> concurrent_rates(const std::vector<std::pair<int, int>>& flows,
                                       double duration_s, double warmup_s) override {
    validate_flows(flows, duration_s, warmup_s, size_);
    ConcurrentProbe probe(comm_, rank_, flows, duration_s, warmup_s);
    barrier();
    const Clock::time_point start = Clock::now();
    std::vector<double> local;
    {
      const MpiWait wait("an MPI concurrent-rate probe");
      local = probe.run(start);
    }
    std::vector<double> rates(flows.size(), 0.0);
    const MpiWait wait("the sum of the concurrent rates");
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(local.data(), rates.data(), static_cast<int>(flows.size()), MPI_DOUBLE,
                             MPI_SUM, comm_, &request),
              "MPI_Iallreduce");
    wait_asleep(request, "MPI_Iallreduce");
    return rates;
  }

  std::string method() const override {
    return "MPI point-to-point over MPI_COMM_WORLD (OpenMPI), ranks = hosts, wall clock "
           "(steady_clock) on each rank: round trip = an 8-byte message sent and echoed back, "
           "timed on the sending rank after 3 unrecorded echoes, ranks not timed waiting asleep; "
           "rates = bytes of 128 KiB chunks (rendezvous; 8 sends in flight per flow) received "
           "inside the window [warm-up, duration - 0.1 s] "
           "on the receiving rank's clock: the least-squares slope of the bytes received against "
           "the chunks' completion times (whole chunks over the window when fewer than three "
           "completed)";
  }

 private:
  void barrier() const {
    const MpiWait wait("the barrier before a network probe");
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
    wait_asleep(request, "MPI_Ibarrier");
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace

std::unique_ptr<ProbeNetwork> make_mpi_probe_network() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized)
    throw std::runtime_error("MPI probes: MPI is not initialised (start an MpiSession first)");
  return std::make_unique<MpiProbeNetwork>();
}

int mpi_probe_rank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return 0;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

}  // namespace tauplan::exec

#else  // no MPI

namespace tauplan::exec {

std::unique_ptr<ProbeNetwork> make_mpi_probe_network() {
  throw std::runtime_error("MPI probes: tauplan was built without MPI");
}

int mpi_probe_rank() {
  return 0;
}

}  // namespace tauplan::exec

#endif
