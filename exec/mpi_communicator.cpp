// mpi_communicator.cpp: the MPI session (OpenMPI's TCP tick set before MPI_Init and read back
// after it), the run's layout (workers, servers, nodes), the plan's algorithm for the mean, a
// ring all-gather for Adasum, and the collectives the trainer uses (barrier, max, all-gather of
// timings, trace gather), each watched (mpi_watchdog.hpp); the plan's collectives over subgroups
// of the workers run the same algorithm on a communicator split off for each group.
// Compiled only when MPI is found.
#include "exec/mpi_communicator.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <stdexcept>

#include "exec/mpi_peers.hpp"
#include "exec/mpi_watchdog.hpp"
#include "exec/p2p_collective.hpp"
#include "model/base/error.hpp"

namespace tauplan::exec {
namespace {

constexpr int kTagClockProbe = 52;
constexpr int kClockProbes = 16;  // ping-pongs per rank for its clock offset

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
constexpr std::size_t kHostNameBytes = 128;

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI error in ") + what);
}

// OpenMPI reads its TCP sockets from the progress loop only every mpi_event_tick_rate us while
// a rank has nothing outstanding of its own (the parameter's default -1 means OPAL's 10000 us);
// 1 reads them on every call.
constexpr const char* kEventTickVariable = "OMPI_MCA_mpi_event_tick_rate";
constexpr const char* kEventTickParameter = "mpi_event_tick_rate";
constexpr int kNameBytes = 256;
std::string tcp_progress_text;  // mpi_tcp_progress()'s answer, once MPI is initialised

/// Sets the tick to 1 us for the MPI_Init to come unless the environment sets it already (an
/// empty value counts as unset: it is replaced); returns who set it ("" when setenv failed).
std::string prefer_prompt_tcp_progress() {
  const char* existing = std::getenv(kEventTickVariable);
  if (existing && *existing) return std::string("the environment's ") + kEventTickVariable;
  return setenv(kEventTickVariable, "1", 1) == 0 ? "set by tauplan" : "";
}

/// What a tick of `us` microseconds means to OpenMPI.
std::string describe_event_tick(int us) {
  if (us < 0) return std::string(kEventTickParameter) + " OpenMPI's default (10000 us)";
  if (us == 0) return std::string(kEventTickParameter) + " 0 (never: once a minute)";
  return std::string(kEventTickParameter) + " " + std::to_string(us) + " us";
}

/// The tick MPI_Init really took, read back through MPI's tool interface; empty when the library
/// has no such integer control variable.
std::string read_event_tick() {
  // The tool interface is asked for MPI's own thread level: OpenMPI 4.1's MPI_T_init_thread
  // overwrites the level MPI_Query_thread answers with the one asked for here.
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  int provided = 0;
  if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS) return "";
  std::string text;
  int index = 0;
  char name[kNameBytes];
  char description[kNameBytes];
  int name_bytes = kNameBytes;
  int description_bytes = kNameBytes;
  int verbosity = 0;
  int binding = 0;
  int scope = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum enumeration;
  if (MPI_T_cvar_get_index(kEventTickParameter, &index) == MPI_SUCCESS &&
      MPI_T_cvar_get_info(index, name, &name_bytes, &verbosity, &type, &enumeration, description,
                          &description_bytes, &binding, &scope) == MPI_SUCCESS &&
      type == MPI_INT) {
    MPI_T_cvar_handle handle;
    int count = 0;
    int value = 0;
    if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
      if (count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS)
        text = describe_event_tick(value);
      MPI_T_cvar_handle_free(&handle);
    }
  }
  MPI_T_finalize();
  return text;
}

}  // namespace

std::string mpi_tcp_progress() {
  return tcp_progress_text;
}

bool mpi_compiled() {
  return true;
}

std::string mpi_process_host() {
  if (const char* testbed = std::getenv("TAUPLAN_TESTBED_HOST"); testbed && *testbed)
    return testbed;
  char name[kHostNameBytes] = "";
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

bool launched_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

// ------------------------------------------------------------------ session

#if TAUPLAN_SANITIZED
namespace {
std::atomic<bool> mpi_was_started{false};
}  // namespace
// LeakSanitizer asks this at exit. OpenMPI's components (dlopen'ed, unloaded by MPI_Finalize)
// leave process-lifetime allocations that LSan reports from "<unknown module>", which no
// suppression can name: an MPI process's leak check is skipped, every other process keeps it.
extern "C" int __lsan_is_turned_off() {
  return mpi_was_started.load() ? 1 : 0;
}
#endif

MpiSession::MpiSession(int* argc, char*** argv) {
#if TAUPLAN_SANITIZED
  mpi_was_started = true;
#endif
  int initialised = 0;
  MPI_Initialized(&initialised);
  std::string setter = initialised ? "MPI initialised before tauplan" : "";
  if (!initialised) {
    setter = prefer_prompt_tcp_progress();
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    owns_ = true;
  }
  const std::string tick = read_event_tick();
  if (!tick.empty()) tcp_progress_text = tick + (setter.empty() ? "" : " (" + setter + ")");
  start_mpi_watchdog(rank(), size());
}

MpiSession::~MpiSession() {
  if (owns_ && std::uncaught_exceptions() == 0) {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) {
      const MpiWait wait("MPI_Finalize");
      MPI_Finalize();
    }
  }
  // When an exception is unwinding, MPI is left as it is: another rank may be waiting for this
  // one, and MPI_Finalize could wait for it in turn; the process exits with its error and the
  // launcher ends the others.
  stop_mpi_watchdog();
}

int MpiSession::rank() const {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int MpiSession::size() const {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void MpiSession::broadcast(void* data, int bytes, int root) const {
  const MpiWait wait("MPI_Bcast");
  check(MPI_Bcast(data, bytes, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
}

void MpiSession::barrier(bool deadline) const {
  const MpiWait wait(deadline ? "a barrier between strategies"
                              : "a barrier while rank 0 trains alone (no deadline)",
                     deadline);
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void MpiSession::set_wait_timeout(double seconds) const {
  set_mpi_wait_timeout(seconds);
}

// ------------------------------------------------------------------ communicator

/// A collective's subgroup of the workers on a communicator of its own (ranks in group order).
struct Subgroup {
  MPI_Comm comm = MPI_COMM_NULL;  ///< the members (MPI_COMM_NULL: not a member)
  CollectiveRanks ranks;          ///< rank: this rank's position (-1: not a member)
  std::unique_ptr<MpiPeers> peers;
};

struct MpiCommunicator::State {
  const P2pCollective* algorithm = nullptr;
  std::map<std::vector<int>, Subgroup> subgroups;  // the plan's groups other than all K
  MPI_Comm comm = MPI_COMM_NULL;                   // every rank of the run
  CollectiveRanks layout;
  MPI_Comm role_comm = MPI_COMM_NULL;  // the workers (or the servers) among themselves
  std::unique_ptr<MpiPeers> peers;
  std::unique_ptr<MpiPeers> worker_peers;  // on a copy of role_comm (workers), made when asked
  MPI_Comm worker_comm = MPI_COMM_NULL;
  std::vector<std::string> hosts;             // per rank
  std::vector<std::string> collective_names;  // trace names of one round's collectives
  std::vector<float> gathered;                // Adasum: K blocks of n + 1 floats
  double clock_offset_s = 0;                  // rank 0's steady clock minus this rank's (workers)
  double largest_rtt_s = 0;  // the largest least round trip to rank 0 over the workers
};

MpiCommunicator::MpiCommunicator(const model::Plan& plan, const model::Platform& platform,
                                 const KeyOrigins& origins)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  s.algorithm = &p2p_collective(plan.collective, origins);
  s.algorithm->check(plan.worker_hosts, platform);
  const int servers = s.algorithm->uses_servers() ? static_cast<int>(plan.server_hosts.size()) : 0;
  if (world != plan.workers + servers)
    throw InputError(
        origins.of("workers"),
        servers == 0
            ? "the MPI world size " + std::to_string(world) + " (one worker per rank: mpirun -np K)"
            : "the MPI world size " + std::to_string(world) + " minus the " +
                  std::to_string(servers) + " server rank(s) of '" + plan.collective +
                  "' (mpirun -np K+s: one rank per worker, then one per server)",
        std::to_string(plan.workers));
  s.layout.rank = rank;
  s.layout.workers = plan.workers;
  s.layout.servers = servers;
  s.layout.nodes = workers_by_node(plan.worker_hosts, platform);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &s.comm), "MPI_Comm_dup");
  check(MPI_Comm_split(s.comm, s.layout.is_server() ? 1 : 0, rank, &s.role_comm), "MPI_Comm_split");
  s.peers = std::make_unique<MpiPeers>(s.comm);

  std::vector<char> names(kHostNameBytes * static_cast<std::size_t>(world), '\0');
  std::string mine = mpi_process_host().substr(0, kHostNameBytes - 1);
  mine.resize(kHostNameBytes, '\0');
  {
    const MpiWait wait("the exchange of host names");
    check(MPI_Allgather(mine.data(), static_cast<int>(kHostNameBytes), MPI_CHAR, names.data(),
                        static_cast<int>(kHostNameBytes), MPI_CHAR, s.comm),
          "MPI_Allgather");
  }
  for (int r = 0; r < world; ++r)
    s.hosts.emplace_back(names.data() + kHostNameBytes * static_cast<std::size_t>(r));
  for (model::OpId v : plan.topological_order())
    if (plan.op(v).kind == model::OpKind::Collective)
      s.collective_names.push_back(trace_name(plan.op(v)));
  make_subgroups(plan, platform, origins);
}

void MpiCommunicator::make_subgroups(const model::Plan& plan, const model::Platform& platform,
                                     const KeyOrigins& origins) {
  State& s = *state_;
  for (CollectiveSubgroup& planned : plan_subgroups(plan, platform, *s.algorithm, origins)) {
    Subgroup& sub = s.subgroups[planned.group];
    const auto at = std::find(planned.group.begin(), planned.group.end(), s.layout.rank);
    const bool member = at != planned.group.end() && !s.layout.is_server();
    const int position = member ? static_cast<int>(at - planned.group.begin()) : -1;
    // Every rank takes part in the split (servers and non-members get MPI_COMM_NULL), in the
    // plan's order, so that no two ranks wait on different splits.
    check(MPI_Comm_split(s.comm, member ? 0 : MPI_UNDEFINED, position, &sub.comm),
          "MPI_Comm_split");
    sub.ranks.rank = position;
    sub.ranks.workers = static_cast<int>(planned.group.size());
    sub.ranks.nodes = std::move(planned.nodes);
    if (member) sub.peers = std::make_unique<MpiPeers>(sub.comm);
  }
}

void MpiCommunicator::combine_group(const std::vector<int>& group,
                                    const std::vector<float*>& member_buffers,
                                    const std::vector<double>& member_weights, std::size_t n,
                                    CombineRule rule) {
  if (static_cast<int>(group.size()) == workers())
    return member_buffers.empty() ? void() : combine(member_buffers, member_weights, n, rule);
  if (member_buffers.empty()) return;  // not a member
  assert(member_buffers.size() == 1 && member_weights.size() == 1);
  Subgroup& sub = state_->subgroups.at(group);
  if (rule != CombineRule::Mean)
    throw std::logic_error("exec: Adasum over a subgroup of MPI ranks is not implemented");
  state_->algorithm->mean(sub.ranks, *sub.peers, member_buffers.front(), member_weights.front(), n);
}

MpiCommunicator::~MpiCommunicator() {
  if (std::uncaught_exceptions() > 0) return;  // see ~MpiSession
  for (auto& [group, sub] : state_->subgroups) {
    sub.peers.reset();  // its sends completed before its communicator goes
    if (sub.comm != MPI_COMM_NULL) MPI_Comm_free(&sub.comm);
  }
  state_->peers.reset();
  state_->worker_peers.reset();
  if (state_->worker_comm != MPI_COMM_NULL) MPI_Comm_free(&state_->worker_comm);
  if (state_->role_comm != MPI_COMM_NULL) MPI_Comm_free(&state_->role_comm);
  if (state_->comm != MPI_COMM_NULL) MPI_Comm_free(&state_->comm);
}

bool MpiCommunicator::is_server() const {
  return state_->layout.is_server();
}

PeerGroup& MpiCommunicator::worker_peers() {
  State& s = *state_;
  if (s.layout.is_server()) throw std::logic_error("a server rank has no worker peers");
  if (!s.worker_peers) {  // collective over the workers: every worker asks at the same point
    const MpiWait wait("the workers' own communicator (MPI_Comm_dup)");
    check(MPI_Comm_dup(s.role_comm, &s.worker_comm), "MPI_Comm_dup");
    s.worker_peers = std::make_unique<MpiPeers>(s.worker_comm);
  }
  return *s.worker_peers;
}

int MpiCommunicator::rank() const {
  return state_->layout.rank;
}

int MpiCommunicator::size() const {
  return state_->layout.workers + state_->layout.servers;
}

int MpiCommunicator::workers() const {
  return state_->layout.workers;
}

int MpiCommunicator::local_workers() const {
  return is_server() ? 0 : 1;
}

int MpiCommunicator::first_local_worker() const {
  return is_server() ? 0 : state_->layout.rank;
}

void MpiCommunicator::combine(const std::vector<float*>& local_buffers,
                              const std::vector<double>& local_weights, std::size_t n,
                              CombineRule rule) {
  assert(local_buffers.size() == 1 && local_weights.size() == 1 && !is_server());
  State& s = *state_;
  float* buffer = local_buffers.front();
  if (rule == CombineRule::Mean)
    return s.algorithm->mean(s.layout, *s.peers, buffer, local_weights.front(), n);
  adasum_by_all_gather(s.layout, *s.peers, buffer, local_weights.front(), n, s.gathered);
}

void MpiCommunicator::barrier() {
  const MpiWait wait("a barrier of the workers");
  check(MPI_Barrier(state_->role_comm), "MPI_Barrier");
}

double MpiCommunicator::max_all(double value) {
  const MpiWait wait("a maximum over the workers (MPI_Allreduce)");
  double out = value;
  check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, state_->role_comm), "MPI_Allreduce");
  return out;
}

std::vector<double> MpiCommunicator::all_gather(const std::vector<double>& values) {
  const MpiWait wait("the all-gather of the round's timings");
  std::vector<double> out(values.size() * static_cast<std::size_t>(state_->layout.workers));
  check(MPI_Allgather(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, out.data(),
                      static_cast<int>(values.size()), MPI_DOUBLE, state_->role_comm),
        "MPI_Allgather");
  return out;
}

void MpiCommunicator::align_start() {
  State& s = *state_;
  {
    const MpiWait wait("the start barrier of the run");
    check(MPI_Barrier(s.comm), "MPI_Barrier");
  }
  if (s.layout.is_server()) return;
  const MpiWait wait("the clock offsets of the workers");
  double best_rtt = 0;
  for (int r = 1; r < s.layout.workers; ++r) {
    for (int probe = 0; probe < kClockProbes; ++probe) {
      if (s.layout.rank == 0) {
        double ping = 0;
        check(MPI_Recv(&ping, 1, MPI_DOUBLE, r, kTagClockProbe, s.role_comm, MPI_STATUS_IGNORE),
              "MPI_Recv");
        const double now = steady_seconds();
        check(MPI_Send(&now, 1, MPI_DOUBLE, r, kTagClockProbe, s.role_comm), "MPI_Send");
      } else if (s.layout.rank == r) {
        const double sent = steady_seconds();
        double remote = 0;
        check(MPI_Send(&sent, 1, MPI_DOUBLE, 0, kTagClockProbe, s.role_comm), "MPI_Send");
        check(MPI_Recv(&remote, 1, MPI_DOUBLE, 0, kTagClockProbe, s.role_comm, MPI_STATUS_IGNORE),
              "MPI_Recv");
        const double received = steady_seconds();
        const double rtt = received - sent;
        if (probe == 0 || rtt < best_rtt) {
          best_rtt = rtt;
          s.clock_offset_s = remote - (sent + received) / 2;
        }
      }
    }
  }
  check(MPI_Allreduce(&best_rtt, &s.largest_rtt_s, 1, MPI_DOUBLE, MPI_MAX, s.role_comm),
        "MPI_Allreduce");
}

std::chrono::steady_clock::time_point MpiCommunicator::agree_round_start() {
  State& s = *state_;
  const MpiWait wait("the agreed start of a round");
  const double arrival = steady_seconds() + s.clock_offset_s;  // on rank 0's clock
  double latest = arrival;
  check(MPI_Reduce(&arrival, &latest, 1, MPI_DOUBLE, MPI_MAX, 0, s.role_comm), "MPI_Reduce");
  double start = latest + 2 * s.largest_rtt_s + 200e-6;
  check(MPI_Bcast(&start, 1, MPI_DOUBLE, 0, s.role_comm), "MPI_Bcast");
  const double local = start - s.clock_offset_s;
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(local)));
}

void MpiCommunicator::finish() {
  if (!is_server()) state_->algorithm->finish(state_->layout, *state_->peers);
}

std::vector<std::string> MpiCommunicator::gather_to_first(const std::string& text) {
  const MpiWait wait("the gather of the trace to rank 0");
  State& s = *state_;
  const int processes = size();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(processes), 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, s.comm), "MPI_Gather");
  std::vector<int> offsets(lengths.size(), 0);
  for (std::size_t r = 1; r < lengths.size(); ++r)
    offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::vector<char> all(
      s.layout.rank == 0 ? static_cast<std::size_t>(offsets.back() + lengths.back()) : 0);
  check(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                    MPI_CHAR, 0, s.comm),
        "MPI_Gatherv");
  std::vector<std::string> out;
  if (s.layout.rank != 0) return out;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    out.emplace_back(all.data() + offsets[r], static_cast<std::size_t>(lengths[r]));
  return out;
}

bool MpiCommunicator::combines_from_second_thread() const {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_SERIALIZED;
}

long long MpiCommunicator::messages_sent() const {
  long long sent = state_->peers->messages_sent();
  for (const auto& [group, sub] : state_->subgroups)
    if (sub.peers) sent += sub.peers->messages_sent();
  return sent;
}

std::vector<std::string> MpiCommunicator::process_hosts() const {
  return state_->hosts;
}

std::vector<TraceEvent> MpiCommunicator::serve(long long trace_rounds,
                                               ServerProcessing* processing) {
  using Clock = std::chrono::steady_clock;
  State& s = *state_;
  assert(is_server());
  if (processing != nullptr) {
    *processing = ServerProcessing{};
    processing->server = s.layout.rank - s.layout.workers;
    processing->host = s.hosts.at(static_cast<std::size_t>(s.layout.rank));
  }
  align_start();
  const auto origin = Clock::now();
  std::vector<TraceEvent> events;
  const auto per_round = static_cast<long long>(s.collective_names.size());
  for (long long call = 0;; ++call) {
    ServedCall served;
    const long long sent_before = s.peers->messages_sent();
    if (!s.algorithm->serve(s.layout, *s.peers, &served)) break;
    const auto done = Clock::now();
    const Clock::time_point first = served.first_message;
    if (processing != nullptr) {
      processing->arrive(first);
      processing->add(served.processing_s, served.messages, served.bytes);
      processing->end(done);
    }
    const long long round = per_round > 0 ? call / per_round : 0;
    if (round >= trace_rounds || per_round == 0) continue;
    TraceEvent e;
    e.name = s.collective_names[static_cast<std::size_t>(call % per_round)];
    e.category = "comm";
    e.track = s.layout.rank;  // K + j for server j
    e.round = round;
    e.start_s = std::chrono::duration<double>(first - origin).count();
    e.duration_s = std::chrono::duration<double>(done - first).count();
    e.messages = s.peers->messages_sent() - sent_before;
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace tauplan::exec
