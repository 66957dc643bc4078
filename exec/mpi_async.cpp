// mpi_async.cpp: worker and server ranks of asynchronous training (see mpi_async.hpp).
#include "exec/mpi_async.hpp"

#include "exec/combine.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/report.hpp"
#include "exec/server_processing.hpp"
#include "model/base/error.hpp"

#ifdef TAUPLAN_HAVE_MPI

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace tauplan::exec {
namespace {

using Clock = std::chrono::steady_clock;

enum Tag : int {
  kPull = 101,          ///< worker -> server: the first pull request
  kPush = 102,          ///< worker -> server: a gradient shard
  kParams = 103,        ///< server -> worker: the shard's parameters and version
  kStop = 104,          ///< server -> worker: training is over
  kBye = 105,           ///< worker -> server: leaving (another server said stop)
  kShardRequest = 106,  ///< lead -> server: send your shard (evaluation)
  kShard = 107,         ///< server -> lead
  kServerStop = 108,    ///< lead -> server: training is over
  kRecord = 109,        ///< lead -> rank 0: what the lead measured
};

/// The fixed part of every message.
struct Header {
  long long step = 0;     ///< push: the worker's step
  long long version = 0;  ///< push: the version it pulled; params: the shard's version
  double loss = 0;        ///< push: the step's training loss
};

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI error in ") + what);
}

int count_of(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::runtime_error("MPI message too large");
  return static_cast<int>(bytes);
}

/// A message buffer: a Header, then floats.
class Message {
 public:
  explicit Message(std::size_t floats) : bytes_(sizeof(Header) + floats * sizeof(float)) {}
  Header header() const {
    Header h;
    std::memcpy(&h, bytes_.data(), sizeof h);
    return h;
  }
  void set_header(const Header& h) { std::memcpy(bytes_.data(), &h, sizeof h); }
  void set_floats(const float* from, std::size_t n) {
    std::memcpy(bytes_.data() + sizeof(Header), from, n * sizeof(float));
  }
  void get_floats(float* to, std::size_t n) const {
    std::memcpy(to, bytes_.data() + sizeof(Header), n * sizeof(float));
  }
  const float* floats() const {
    return reinterpret_cast<const float*>(bytes_.data() + sizeof(Header));
  }
  char* data() { return bytes_.data(); }
  int size(std::size_t floats) const { return count_of(sizeof(Header) + floats * sizeof(float)); }

 private:
  std::vector<char> bytes_;
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Layout {
  int workers = 0;
  int servers = 0;
  std::vector<std::pair<std::size_t, std::size_t>> shards;
  std::size_t largest = 0;
  int server_rank(int s) const { return workers + s; }
};

/// A worker rank's end of the messages with the servers, one handler per op of its cycle.
class WorkerExchange {
 public:
  explicit WorkerExchange(const Layout& layout)
      : layout_(layout),
        servers_(static_cast<std::size_t>(layout.servers)),
        in_(servers_, Message(layout.largest)),
        out_(servers_, Message(layout.largest)),
        receive_(servers_, MPI_REQUEST_NULL),
        send_(servers_, MPI_REQUEST_NULL),
        unread_(servers_, false),
        stopped_us_(servers_, false),
        read_version_(servers_, 0) {
    for (auto& m : out_)
      m.set_header(Header{});
  }

  bool stopped() const { return stop_; }
  /// Asks server s for its shard unless a reply of it is unread or on its way.
  void request(std::size_t s) {
    if (!unread_[s] && receive_[s] == MPI_REQUEST_NULL && !stop_) post(s, kPull, 0);
  }
  /// Pull: the shard of server s into `parameters` (its range), with its version.
  void pull(std::size_t s, float* parameters) {
    request(s);
    wait(s);
    if (stop_) return;
    const auto [begin, end] = layout_.shards[s];
    in_[s].get_floats(parameters + begin, end - begin);
    read_version_[s] = in_[s].header().version;
    unread_[s] = false;
  }
  /// Push: the gradient's shard to server s; its reply (the shard after the apply) is awaited
  /// by apply().
  void push(std::size_t s, long long step, double loss, const float* gradients) {
    wait(s);  // a pull request to s may still be on its way: its buffers are reused here
    if (stop_) return;
    const auto [begin, end] = layout_.shards[s];
    out_[s].set_header(Header{step, read_version_[s], loss});
    out_[s].set_floats(gradients + begin, end - begin);
    post(s, kPush, end - begin);
  }
  /// Apply: waits until server s has applied the push and replied.
  void apply(std::size_t s) { wait(s); }
  /// After a stop: once every exchange is complete, a goodbye to every server that has not
  /// told this worker to stop (it waits for a message from every worker before it leaves,
  /// whether or not this worker's cycle ever reached it).
  void leave() {
    for (std::size_t s = 0; s < servers_; ++s)
      wait(s);
    for (std::size_t s = 0; s < servers_; ++s)
      if (!stopped_us_[s])
        check(MPI_Send(out_[s].data(), out_[s].size(0), MPI_BYTE, server(s), kBye, MPI_COMM_WORLD),
              "MPI_Send");
  }

 private:
  int server(std::size_t s) const { return layout_.server_rank(static_cast<int>(s)); }
  /// Posts the receive of server s's reply, then sends it `tag` with n floats.
  void post(std::size_t s, int tag, std::size_t n) {
    check(MPI_Irecv(in_[s].data(), in_[s].size(layout_.largest), MPI_BYTE, server(s), MPI_ANY_TAG,
                    MPI_COMM_WORLD, &receive_[s]),
          "MPI_Irecv");
    check(MPI_Isend(out_[s].data(), out_[s].size(n), MPI_BYTE, server(s), tag, MPI_COMM_WORLD,
                    &send_[s]),
          "MPI_Isend");
  }
  /// Completes the exchange with server s, if one is on its way.
  void wait(std::size_t s) {
    if (receive_[s] == MPI_REQUEST_NULL) return;
    MPI_Status status;
    check(MPI_Wait(&receive_[s], &status), "MPI_Wait");
    check(MPI_Wait(&send_[s], MPI_STATUS_IGNORE), "MPI_Wait");
    unread_[s] = status.MPI_TAG == kParams;
    if (status.MPI_TAG == kStop) stop_ = stopped_us_[s] = true;
  }

  const Layout& layout_;
  std::size_t servers_;
  std::vector<Message> in_, out_;
  std::vector<MPI_Request> receive_, send_;
  std::vector<bool> unread_;      // a reply with parameters not yet pulled
  std::vector<bool> stopped_us_;  // the server told this worker to stop (it expects no goodbye)
  std::vector<long long> read_version_;
  bool stop_ = false;
};

/// What a worker rank measured, running its cycle of the plan's ops (worker_cycle) until a
/// server says stop.
AsyncWorkerRecord run_worker(const model::Plan& plan, const Layout& layout, int w,
                             const Dataset& data, const MlpShape& shape,
                             const TrainOptions& options, double slowdown) {
  AsyncWorkerCompute compute(plan, w, data, shape, options, slowdown);
  Replica& replica = compute.replica();
  const std::vector<CycleOp> cycle = worker_cycle(plan, w, options.job_file);
  WorkerExchange exchange(layout);
  AsyncWorkerRecord record;
  for (long long n = 0;; ++n) {
    for (const CycleOp& op : cycle)  // every pull request leaves before the first is awaited
      if (op.kind == CycleOp::Kind::Pull) exchange.request(static_cast<std::size_t>(op.server));
    double loss = 0;
    Clock::time_point push_start{};
    bool pushed = false;
    for (const CycleOp& op : cycle) {
      const auto s = static_cast<std::size_t>(op.server);
      switch (op.kind) {
        case CycleOp::Kind::Pull:
          exchange.pull(s, replica.parameters());
          break;
        case CycleOp::Kind::Compute:
          if (exchange.stopped()) break;
          {
            const auto [measured, step_loss] = compute.step(n);
            record.step_s.push_back(measured);
            loss = step_loss;
          }
          break;
        case CycleOp::Kind::Push:
          if (!pushed && !exchange.stopped()) {
            push_start = Clock::now();
            pushed = true;
          }
          exchange.push(s, n, loss, replica.gradients());
          break;
        case CycleOp::Kind::Apply:
          exchange.apply(s);
          break;
      }
    }
    if (pushed) record.exchange_s.push_back(seconds_since(push_start));
    if (exchange.stopped()) {
      exchange.leave();
      return record;
    }
    ++record.updates;
  }
}

/// A server rank's loop; the lead (s == 0) also evaluates and decides when to stop.
class ServerRank {
 public:
  ServerRank(const model::Plan& plan, const Layout& layout, int s, const Dataset& data,
             const MlpShape& shape, const TrainOptions& options)
      : plan_(plan),
        layout_(layout),
        s_(s),
        options_(options),
        range_(layout.shards[static_cast<std::size_t>(s)]),
        in_(layout.largest),
        out_(layout.largest) {
    std::vector<float> all(shape.parameters());
    init_parameters(shape, options.seed, all.data());
    shard_.assign(all.begin() + static_cast<std::ptrdiff_t>(range_.first),
                  all.begin() + static_cast<std::ptrdiff_t>(range_.second));
    const auto k = static_cast<std::size_t>(layout.workers);
    applied_.assign(k, 0);
    awaiting_.assign(k, -1);
    finished_.assign(k, false);
    staleness_sum.assign(k, 0);
    staleness_count.assign(k, 0);
    if (s == 0) {
      evaluator_ = std::make_unique<AsyncEvaluator>(data, shape, options);
      snapshot_.resize(shape.parameters());
    }
    processing.server = s;
    processing.host = mpi_process_host();
  }

  void run();

  // What it measured.
  std::vector<long long> histogram;
  std::vector<double> staleness_sum;
  std::vector<double> staleness_count;
  long long clock_skew_max = 0;
  // The lead's record.
  long long updates = 0;
  bool reached = false;
  double eval_s = 0;
  double wall_s = 0;
  std::vector<AccuracyPoint> curve;
  std::vector<double> update_s;
  /// Its own work, update by update: the apply (the lead's evaluation excluded) and the
  /// preparation of the update's reply, whenever the staleness bound lets it leave.
  ServerProcessing processing;

 private:
  bool lead() const { return s_ == 0; }
  std::size_t size() const { return range_.second - range_.first; }
  bool gate_open(int w) const;
  void reply(int w);
  void reply_or_defer(int w);
  void send_stop(int w);
  void enter_stop();
  /// Applies worker w's pushed gradient; returns the seconds of the apply itself.
  double apply(int w);
  /// A push from worker w (its first byte probed at `arrived`): apply, then reply or defer.
  void on_push(int w, Clock::time_point arrived);
  void evaluate_or_stop(double loss);

  const model::Plan& plan_;
  const Layout& layout_;
  int s_;
  const TrainOptions& options_;
  std::pair<std::size_t, std::size_t> range_;
  std::vector<float> shard_;
  Message in_;
  Message out_;
  long long version_ = 0;
  std::vector<long long> applied_;
  std::vector<long long> awaiting_;  // per worker: the update whose reply is not yet prepared
  std::vector<bool> finished_;
  std::vector<int> deferred_;
  bool stop_ = false;
  bool told_to_stop_ = false;
  std::unique_ptr<AsyncEvaluator> evaluator_;
  std::vector<float> snapshot_;
  Clock::time_point start_;
  double loss_sum_ = 0;
  long long loss_count_ = 0;
};

bool ServerRank::gate_open(int w) const {
  if (plan_.staleness_bound <= 0) return true;
  const long long slowest = *std::min_element(applied_.begin(), applied_.end());
  return applied_[static_cast<std::size_t>(w)] - slowest <= plan_.staleness_bound;
}

void ServerRank::reply(int w) {
  const auto prepare_start = Clock::now();
  const long long slowest = *std::min_element(applied_.begin(), applied_.end());
  clock_skew_max = std::max(clock_skew_max, applied_[static_cast<std::size_t>(w)] - slowest);
  Header h;
  h.version = version_;
  out_.set_header(h);
  out_.set_floats(shard_.data(), size());
  long long& awaiting = awaiting_[static_cast<std::size_t>(w)];
  if (awaiting >= 0) {  // the reply of an update (not of a first pull request)
    processing.add_seconds(static_cast<std::size_t>(awaiting), seconds_since(prepare_start));
    awaiting = -1;
  }
  check(MPI_Send(out_.data(), out_.size(size()), MPI_BYTE, w, kParams, MPI_COMM_WORLD), "MPI_Send");
}

void ServerRank::reply_or_defer(int w) {
  if (gate_open(w))
    reply(w);
  else
    deferred_.push_back(w);
}

void ServerRank::send_stop(int w) {
  out_.set_header(Header{});
  check(MPI_Send(out_.data(), out_.size(0), MPI_BYTE, w, kStop, MPI_COMM_WORLD), "MPI_Send");
  finished_[static_cast<std::size_t>(w)] = true;
}

void ServerRank::enter_stop() {
  if (stop_) return;
  stop_ = true;
  for (int w : deferred_)
    send_stop(w);
  deferred_.clear();
}

double ServerRank::apply(int w) {
  const auto start = Clock::now();
  const Header h = in_.header();
  const float* gradient = in_.floats();
  apply_sgd(shard_.data(), gradient, shard_.size(), static_cast<float>(options_.learning_rate));
  const long long staleness = version_ - h.version;
  ++version_;
  ++applied_[static_cast<std::size_t>(w)];
  if (static_cast<std::size_t>(staleness) >= histogram.size())
    histogram.resize(static_cast<std::size_t>(staleness) + 1, 0);
  ++histogram[static_cast<std::size_t>(staleness)];
  staleness_sum[static_cast<std::size_t>(w)] += static_cast<double>(staleness);
  staleness_count[static_cast<std::size_t>(w)] += 1;
  const double own = seconds_since(start);
  if (lead()) evaluate_or_stop(h.loss);
  return own;
}

void ServerRank::on_push(int w, Clock::time_point arrived) {
  if (stop_) {
    send_stop(w);
    return;
  }
  processing.arrive(arrived);
  const std::size_t update =
      processing.add(apply(w), 2, static_cast<long long>(size() * sizeof(float)));
  if (stop_) {
    send_stop(w);
    processing.end(Clock::now());
    return;
  }
  awaiting_[static_cast<std::size_t>(w)] = static_cast<long long>(update);
  reply_or_defer(w);
  // The bound may let deferred workers go on now.
  std::vector<int> still;
  for (int d : deferred_)
    if (gate_open(d))
      reply(d);
    else
      still.push_back(d);
  deferred_.swap(still);
  processing.end(Clock::now());
}

void ServerRank::evaluate_or_stop(double loss) {
  ++updates;
  update_s.push_back(seconds_since(start_) - eval_s);
  loss_sum_ += loss;
  ++loss_count_;
  const bool last = updates >= options_.max_steps;
  if (updates % std::max(1LL, options_.eval_every_steps) != 0 && !last) return;
  const auto eval_start = Clock::now();
  AccuracyPoint point;
  point.round = point.steps = updates;
  point.time_s = update_s.back();
  point.train_loss = loss_count_ > 0 ? loss_sum_ / static_cast<double>(loss_count_) : 0;
  loss_sum_ = 0;
  loss_count_ = 0;
  std::copy(shard_.begin(), shard_.end(),
            snapshot_.begin() + static_cast<std::ptrdiff_t>(range_.first));
  for (int s = 1; s < layout_.servers; ++s) {
    const auto [begin, end] = layout_.shards[static_cast<std::size_t>(s)];
    check(MPI_Send(nullptr, 0, MPI_BYTE, layout_.server_rank(s), kShardRequest, MPI_COMM_WORLD),
          "MPI_Send");
    check(MPI_Recv(snapshot_.data() + begin, count_of(end - begin), MPI_FLOAT,
                   layout_.server_rank(s), kShard, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
  }
  point.accuracy = evaluator_->accuracy(snapshot_.data());
  curve.push_back(point);
  eval_s += seconds_since(eval_start);
  reached = options_.target_accuracy > 0 && point.accuracy >= options_.target_accuracy;
  if (!reached && !last) return;
  for (int s = 1; s < layout_.servers; ++s)
    check(MPI_Send(nullptr, 0, MPI_BYTE, layout_.server_rank(s), kServerStop, MPI_COMM_WORLD),
          "MPI_Send");
  enter_stop();
}

void ServerRank::run() {
  start_ = Clock::now();
  // A non-lead server also waits for the lead's stop, so that no message is left unreceived.
  auto done = [&] {
    const bool all = std::all_of(finished_.begin(), finished_.end(), [](bool f) { return f; });
    return all && (lead() || told_to_stop_);
  };
  while (!done()) {
    MPI_Status status;
    check(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status), "MPI_Probe");
    const auto arrived = Clock::now();
    int bytes = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
    const int source = status.MPI_SOURCE;
    check(MPI_Recv(in_.data(), bytes, MPI_BYTE, source, status.MPI_TAG, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE),
          "MPI_Recv");
    switch (status.MPI_TAG) {
      case kPull:
        if (stop_)
          send_stop(source);
        else
          reply_or_defer(source);
        break;
      case kPush:
        on_push(source, arrived);
        break;
      case kBye:
        finished_[static_cast<std::size_t>(source)] = true;
        break;
      case kShardRequest:
        check(MPI_Send(shard_.data(), count_of(size()), MPI_FLOAT, source, kShard, MPI_COMM_WORLD),
              "MPI_Send");
        break;
      case kServerStop:
        told_to_stop_ = true;
        enter_stop();
        break;
      default:
        throw std::runtime_error("async server: unexpected MPI message tag " +
                                 std::to_string(status.MPI_TAG));
    }
  }
  wall_s = seconds_since(start_);
}

/// Gathers variable-length vectors (of `type`: MPI_DOUBLE, MPI_CHAR) to rank 0 (in rank order).
template <typename T>
std::vector<std::vector<T>> gather_to_root(const std::vector<T>& mine, int ranks,
                                           MPI_Datatype type) {
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(ranks)),
      offsets(static_cast<std::size_t>(ranks));
  check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  int total = 0;
  for (int r = 0; r < ranks; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<T> all(static_cast<std::size_t>(std::max(total, 1)));
  check(MPI_Gatherv(mine.data(), count, type, all.data(), counts.data(), offsets.data(), type, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::vector<T>> out(static_cast<std::size_t>(ranks));
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r].assign(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  return out;
}

/// Every server rank's processing (its `servers` object, exec/report.hpp) on rank 0, in rank
/// order; the other ranks get an empty array. `server` is null on a worker rank.
nlohmann::json gather_servers(const ServerRank* server, int world) {
  std::vector<char> mine;
  if (server) {
    const std::string text = server_processing_json(server->processing).dump();
    mine.assign(text.begin(), text.end());
  }
  nlohmann::json servers = nlohmann::json::array();
  for (const std::vector<char>& part : gather_to_root(mine, world, MPI_CHAR))
    if (!part.empty()) servers.push_back(nlohmann::json::parse(part.begin(), part.end()));
  return servers;
}

/// On rank 0: the lead server's record (kRecord, packed as doubles by train_async_mpi).
AsyncRecord receive_lead_record(int lead_rank) {
  MPI_Status status;
  check(MPI_Probe(lead_rank, kRecord, MPI_COMM_WORLD, &status), "MPI_Probe");
  int doubles = 0;
  check(MPI_Get_count(&status, MPI_DOUBLE, &doubles), "MPI_Get_count");
  std::vector<double> packed(static_cast<std::size_t>(doubles));
  check(MPI_Recv(packed.data(), doubles, MPI_DOUBLE, lead_rank, kRecord, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE),
        "MPI_Recv");
  AsyncRecord record;
  record.communicator = "mpi";
  record.updates = static_cast<long long>(packed[0]);
  record.reached = packed[1] > 0;
  record.wall_s = packed[2];
  record.eval_wall_s = packed[3];
  const auto points = static_cast<std::size_t>(packed[4]);
  std::size_t at = 5;
  for (std::size_t i = 0; i < points; ++i, at += 4) {
    AccuracyPoint p;
    p.round = p.steps = static_cast<long long>(packed[at]);
    p.time_s = packed[at + 1];
    p.accuracy = packed[at + 2];
    p.train_loss = packed[at + 3];
    record.curve.push_back(p);
  }
  record.update_s.assign(packed.begin() + static_cast<std::ptrdiff_t>(at), packed.end());
  return record;
}

}  // namespace

Measurement train_async_mpi(const model::Plan& plan, const model::Platform& platform,
                            const Dataset& data, const MlpShape& shape, const TrainOptions& options,
                            bool& reporter) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  Layout layout;
  layout.workers = plan.workers;
  layout.servers = static_cast<int>(plan.server_hosts.size());
  if (world != layout.workers + layout.servers)
    throw InputError(options.job_file, "workers",
                     "workers + servers = the MPI world size " + std::to_string(world) +
                         " (one rank per worker and per server: mpirun -np K+S)",
                     std::to_string(layout.workers) + " workers and " +
                         std::to_string(layout.servers) + " server(s)");
  check_async_job(plan, data, options);
  layout.shards = shard_ranges(shape.parameters(), layout.servers);
  for (const auto& [begin, end] : layout.shards)
    layout.largest = std::max(layout.largest, end - begin);
  reporter = rank == 0;

  const std::vector<double> slowdowns = worker_slowdowns(plan, platform);
  const auto k = static_cast<std::size_t>(layout.workers);
  AsyncWorkerRecord worker_record;
  std::unique_ptr<ServerRank> server;
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  if (rank < layout.workers) {
    const double slowdown =
        options.emulate_slowdown ? slowdowns[static_cast<std::size_t>(rank)] : 1.0;
    worker_record = run_worker(plan, layout, rank, data, shape, options, slowdown);
  } else {
    server =
        std::make_unique<ServerRank>(plan, layout, rank - layout.workers, data, shape, options);
    server->run();
  }
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");

  // Statistics meet on rank 0: staleness (every server), per-worker records, the lead's record.
  long long length = server ? static_cast<long long>(server->histogram.size()) : 0;
  long long longest = 0;
  check(MPI_Allreduce(&length, &longest, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce");
  std::vector<long long> histogram(static_cast<std::size_t>(longest), 0), summed(histogram);
  if (server) std::copy(server->histogram.begin(), server->histogram.end(), histogram.begin());
  check(MPI_Reduce(histogram.data(), summed.data(), static_cast<int>(longest), MPI_LONG_LONG,
                   MPI_SUM, 0, MPI_COMM_WORLD),
        "MPI_Reduce");
  std::vector<double> sums(2 * k, 0.0), sums_total(2 * k, 0.0);
  if (server)
    for (std::size_t w = 0; w < k; ++w) {
      sums[w] = server->staleness_sum[w];
      sums[k + w] = server->staleness_count[w];
    }
  check(MPI_Reduce(sums.data(), sums_total.data(), static_cast<int>(2 * k), MPI_DOUBLE, MPI_SUM, 0,
                   MPI_COMM_WORLD),
        "MPI_Reduce");
  long long skew = server ? server->clock_skew_max : 0, skew_max = 0;
  check(MPI_Reduce(&skew, &skew_max, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD), "MPI_Reduce");
  const auto steps = gather_to_root(worker_record.step_s, world, MPI_DOUBLE);
  const auto exchanges = gather_to_root(worker_record.exchange_s, world, MPI_DOUBLE);
  const nlohmann::json servers = gather_servers(server.get(), world);
  const double updates_of_mine = static_cast<double>(worker_record.updates);
  std::vector<double> updates_by(static_cast<std::size_t>(world));
  check(MPI_Gather(&updates_of_mine, 1, MPI_DOUBLE, updates_by.data(), 1, MPI_DOUBLE, 0,
                   MPI_COMM_WORLD),
        "MPI_Gather");
  // The lead's record, packed as doubles.
  std::vector<double> packed;
  const int lead_rank = layout.server_rank(0);
  if (rank == lead_rank) {
    packed = {static_cast<double>(server->updates), server->reached ? 1.0 : 0.0, server->wall_s,
              server->eval_s, static_cast<double>(server->curve.size())};
    for (const AccuracyPoint& p : server->curve)
      packed.insert(packed.end(),
                    {static_cast<double>(p.round), p.time_s, p.accuracy, p.train_loss});
    packed.insert(packed.end(), server->update_s.begin(), server->update_s.end());
    check(MPI_Send(packed.data(), count_of(packed.size()), MPI_DOUBLE, 0, kRecord, MPI_COMM_WORLD),
          "MPI_Send");
  }
  if (rank != 0) return Measurement{};
  AsyncRecord record = receive_lead_record(lead_rank);
  record.staleness_histogram = summed;
  while (!record.staleness_histogram.empty() && record.staleness_histogram.back() == 0)
    record.staleness_histogram.pop_back();
  record.clock_skew_max = skew_max;
  for (std::size_t w = 0; w < k; ++w) {
    AsyncWorkerRecord r;
    r.updates = static_cast<long long>(updates_by[w]);
    r.step_s = steps[w];
    r.exchange_s = exchanges[w];
    r.staleness_sum = sums_total[w];
    r.staleness_count = static_cast<long long>(sums_total[k + w]);
    record.workers.push_back(std::move(r));
  }
  Measurement m = async_measurement(record, plan, platform, data, shape, options);
  if (!servers.empty()) m.extra["servers"] = servers;
  return m;
}

}  // namespace tauplan::exec

#else  // no MPI

namespace tauplan::exec {

Measurement train_async_mpi(const model::Plan& /*plan*/, const model::Platform& /*platform*/,
                            const Dataset& /*data*/, const MlpShape& /*shape*/,
                            const TrainOptions& options, bool& reporter) {
  reporter = true;
  throw InputError(options.job_file, "communicator", "threads (this tauplan was built without MPI)",
                   "mpi");
}

}  // namespace tauplan::exec

#endif
