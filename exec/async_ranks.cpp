// async_ranks.cpp: worker and server ranks of asynchronous training over a PeerGroup (see
// async_ranks.hpp).
#include "exec/async_ranks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "exec/combine.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/rank_threads.hpp"
#include "exec/report.hpp"
#include "exec/server_processing.hpp"
#include "model/base/error.hpp"

namespace tauplan::exec {
namespace {

enum Tag : int {
  kPull = 101,          ///< worker -> server: the first pull request
  kPush = 102,          ///< worker -> server: a gradient shard
  kParams = 103,        ///< server -> worker: the shard's parameters and version
  kStop = 104,          ///< server -> worker: training is over
  kBye = 105,           ///< worker -> server: leaving (another server said stop)
  kShardRequest = 106,  ///< lead -> server: send your shard (evaluation)
  kShard = 107,         ///< server -> lead
  kServerStop = 108,    ///< lead -> server: training is over
  kRecord = 109,        ///< any rank -> rank 0: what the rank measured (JSON text)
};

/// The fixed part of every message between a worker and a server; the floats follow it.
struct Header {
  long long step = 0;     ///< push: the worker's step
  long long version = 0;  ///< push: the version it pulled; params: the shard's version
  double loss = 0;        ///< push: the step's training loss
  long long applied = 0;  ///< stop: 1 when the push it answers was applied first
};

std::size_t message_bytes(std::size_t floats) {
  return sizeof(Header) + floats * sizeof(float);
}

/// `message` := the header, then n floats.
void pack(const Header& header, const float* floats, std::size_t n, std::vector<char>& message) {
  message.resize(message_bytes(n));
  std::memcpy(message.data(), &header, sizeof header);
  if (n > 0) std::memcpy(message.data() + sizeof(Header), floats, n * sizeof(float));
}

Header header_of(const std::vector<char>& message) {
  if (message.size() < sizeof(Header))
    throw std::logic_error("async message of " + std::to_string(message.size()) +
                           " bytes, shorter than its header");
  Header h;
  std::memcpy(&h, message.data(), sizeof h);
  return h;
}

const float* floats_of(const std::vector<char>& message) {
  return reinterpret_cast<const float*>(message.data() + sizeof(Header));
}

struct Layout {
  int workers = 0;
  int servers = 0;
  std::vector<std::pair<std::size_t, std::size_t>> shards;
  int server_rank(int s) const { return workers + s; }
};

/// A worker rank's end of the messages with the servers, one handler per op of its cycle. At
/// most one exchange per server is on its way (a request or a push, awaiting its reply).
class WorkerExchange {
 public:
  WorkerExchange(PeerGroup& peers, const Layout& layout)
      : peers_(peers),
        layout_(layout),
        servers_(static_cast<std::size_t>(layout.servers)),
        in_(servers_),
        on_its_way_(servers_, false),
        unread_(servers_, false),
        stopped_us_(servers_, false),
        pushed_(servers_, false),
        applied_(servers_, false),
        read_version_(servers_, 0) {}

  bool stopped() const { return stop_; }
  /// Every server this cycle pushed to has applied the push (its reply says so, a stop too).
  bool cycle_applied() const {
    for (std::size_t s = 0; s < servers_; ++s)
      if (pushed_[s] && !applied_[s]) return false;
    return true;
  }
  /// A new cycle: nothing pushed yet.
  void begin_cycle() {
    std::fill(pushed_.begin(), pushed_.end(), false);
    std::fill(applied_.begin(), applied_.end(), false);
    reply_s_.clear();
  }
  /// The cycle's first push leaves now: its exchange and the replies to its pushes are timed
  /// from here.
  void start_pushes() { push_start_ = Clock::now(); }
  /// Seconds since start_pushes.
  double seconds_since_pushes() const { return seconds_since(push_start_); }
  /// Seconds from start_pushes to each reply of a server this cycle pushed to, in arrival order.
  const std::vector<double>& reply_seconds() const { return reply_s_; }
  /// Asks server s for its shard unless a reply of it is unread or on its way.
  void request(std::size_t s) {
    if (!unread_[s] && !on_its_way_[s] && !stop_) send(s, kPull, nullptr, 0, Header{});
  }
  /// Pull: the shard of server s into `parameters` (its range), with its version.
  void pull(std::size_t s, float* parameters) {
    request(s);
    wait(s);
    if (stop_) return;
    const auto [begin, end] = layout_.shards[s];
    if (in_[s].size() != message_bytes(end - begin))
      throw std::logic_error("async worker: a shard of " + std::to_string(in_[s].size()) +
                             " bytes from server " + std::to_string(s));
    std::memcpy(parameters + begin, floats_of(in_[s]), (end - begin) * sizeof(float));
    read_version_[s] = header_of(in_[s]).version;
    unread_[s] = false;
  }
  /// Push: the gradient's shard to server s; its reply (the shard after the apply) is awaited
  /// by apply().
  void push(std::size_t s, long long step, double loss, const float* gradients) {
    wait(s);  // a pull request to s may still be awaiting its reply
    if (stop_) return;
    const auto [begin, end] = layout_.shards[s];
    send(s, kPush, gradients + begin, end - begin, Header{step, read_version_[s], loss, 0});
    pushed_[s] = true;
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
      if (!stopped_us_[s]) {
        pack(Header{}, nullptr, 0, out_);
        peers_.send_bytes(server(s), out_.data(), out_.size(), kBye);
      }
  }

 private:
  int server(std::size_t s) const { return layout_.server_rank(static_cast<int>(s)); }
  void send(std::size_t s, int tag, const float* floats, std::size_t n, const Header& header) {
    pack(header, floats, n, out_);
    peers_.send_message(server(s), std::move(out_), tag);  // out_ is packed afresh each time
    on_its_way_[s] = true;
  }
  /// Completes the exchange with server s, if one is on its way: its reply, params or a stop.
  /// Replies are taken as they come, whichever server sent them (a server's reply holds its one
  /// thread until taken, so waiting for one server while another's reply waits could deadlock:
  /// the lead asks the other servers for their shards before it replies).
  void wait(std::size_t s) {
    while (on_its_way_[s])
      take_reply();
  }
  void take_reply() {
    const PeerEnvelope reply = peers_.recv_any(PeerGroup::kAnySource, PeerGroup::kAnyTag, spare_);
    const int index = reply.from - layout_.workers;
    if (index < 0 || index >= layout_.servers || !on_its_way_[static_cast<std::size_t>(index)] ||
        (reply.tag != kParams && reply.tag != kStop))
      throw std::logic_error("async worker: unexpected message from rank " +
                             std::to_string(reply.from) + " with tag " + std::to_string(reply.tag));
    const auto r = static_cast<std::size_t>(index);
    in_[r].swap(spare_);  // the old reply's buffer takes the next one
    on_its_way_[r] = false;
    unread_[r] = reply.tag == kParams;
    if (pushed_[r]) {
      applied_[r] = reply.tag == kParams || header_of(in_[r]).applied == 1;
      reply_s_.push_back(seconds_since_pushes());
    }
    if (reply.tag == kStop) stop_ = stopped_us_[r] = true;
  }

  PeerGroup& peers_;
  const Layout& layout_;
  std::size_t servers_;
  std::vector<std::vector<char>> in_;  // per server: its last reply
  std::vector<char> spare_;            // where the next reply is received
  std::vector<char> out_;
  std::vector<bool> on_its_way_;  // an exchange awaits the server's reply
  std::vector<bool> unread_;      // a reply with parameters not yet pulled
  std::vector<bool> stopped_us_;  // the server told this worker to stop (it expects no goodbye)
  std::vector<bool> pushed_;      // this cycle pushed to the server
  std::vector<bool> applied_;     // ... and the server applied the push
  std::vector<long long> read_version_;
  Clock::time_point push_start_{};
  std::vector<double> reply_s_;  // this cycle's replies to its pushes, from push_start_
  bool stop_ = false;
};

/// What a worker rank measured, running its cycle of the plan's ops (worker_cycle) until a
/// server says stop.
AsyncWorkerRecord run_worker(PeerGroup& peers, const model::Plan& plan, const Layout& layout, int w,
                             const Dataset& data, const MlpShape& shape,
                             const TrainOptions& options, double slowdown) {
  AsyncWorkerCompute compute(plan, w, data, shape, options, slowdown);
  Replica& replica = compute.replica();
  const std::vector<CycleOp> cycle = worker_cycle(plan, w, options.origins);
  WorkerExchange exchange(peers, layout);
  AsyncWorkerRecord record;
  for (long long n = 0;; ++n) {
    exchange.begin_cycle();
    for (const CycleOp& op : cycle)  // every pull request leaves before the first is awaited
      if (op.kind == CycleOp::Kind::Pull) exchange.request(static_cast<std::size_t>(op.server));
    double loss = 0;
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
            exchange.start_pushes();
            pushed = true;
          }
          exchange.push(s, n, loss, replica.gradients());
          break;
        case CycleOp::Kind::Apply:
          exchange.apply(s);
          break;
      }
    }
    if (pushed) record.exchange_s.push_back(exchange.seconds_since_pushes());
    const std::vector<double>& replies = exchange.reply_seconds();
    if (pushed && !replies.empty()) {
      record.first_reply_s.push_back(*std::min_element(replies.begin(), replies.end()));
      record.last_reply_s.push_back(*std::max_element(replies.begin(), replies.end()));
    }
    if (pushed && exchange.cycle_applied()) ++record.updates;
    if (exchange.stopped()) {
      exchange.leave();
      return record;
    }
  }
}

/// A server rank's loop; the lead (s == 0) also evaluates and decides when to stop.
class ServerRank {
 public:
  ServerRank(PeerGroup& peers, const model::Plan& plan, const Layout& layout, int s,
             const Dataset& data, const MlpShape& shape, const TrainOptions& options)
      : peers_(peers),
        plan_(plan),
        layout_(layout),
        s_(s),
        options_(options),
        range_(layout.shards[static_cast<std::size_t>(s)]) {
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
    processing.host = mpi_process_host();  // this machine's name ("" without MPI)
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
  /// Tells worker w to stop; `applied`: its push that this answers was applied.
  void send_stop(int w, bool applied);
  void enter_stop();
  /// Applies worker w's pushed gradient; returns the seconds of the apply itself.
  double apply(int w);
  /// A push from worker w (its first byte probed at `arrived`): apply, then reply or defer.
  void on_push(int w, Clock::time_point arrived);
  void evaluate_or_stop(double loss);

  PeerGroup& peers_;
  const model::Plan& plan_;
  const Layout& layout_;
  int s_;
  const TrainOptions& options_;
  std::pair<std::size_t, std::size_t> range_;
  std::vector<float> shard_;
  std::vector<char> in_;   // the message being handled
  std::vector<char> out_;  // a reply being prepared
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
  pack(h, shard_.data(), size(), out_);
  long long& awaiting = awaiting_[static_cast<std::size_t>(w)];
  if (awaiting >= 0) {  // the reply of an update (not of a first pull request)
    processing.add_seconds(static_cast<std::size_t>(awaiting), seconds_since(prepare_start));
    awaiting = -1;
  }
  peers_.send_message(w, std::move(out_), kParams);  // out_ is packed afresh each time
  peers_.complete_sends();  // the reply holds the server's one thread, as a blocking send does
}

void ServerRank::reply_or_defer(int w) {
  if (gate_open(w))
    reply(w);
  else
    deferred_.push_back(w);
}

void ServerRank::send_stop(int w, bool applied) {
  Header h;
  h.applied = applied ? 1 : 0;
  pack(h, nullptr, 0, out_);
  peers_.send_bytes(w, out_.data(), out_.size(), kStop);
  peers_.complete_sends();
  finished_[static_cast<std::size_t>(w)] = true;
}

void ServerRank::enter_stop() {
  if (stop_) return;
  stop_ = true;
  for (int w : deferred_)  // each applied, its reply held by the staleness bound
    send_stop(w, true);
  deferred_.clear();
}

double ServerRank::apply(int w) {
  const auto start = Clock::now();
  const Header h = header_of(in_);
  if (in_.size() != message_bytes(size()))
    throw std::logic_error("async server: a push of " + std::to_string(in_.size()) +
                           " bytes for a shard of " + std::to_string(size()) + " floats");
  const float* gradient = floats_of(in_);
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
    send_stop(w, false);
    return;
  }
  processing.arrive(arrived);
  const std::size_t update =
      processing.add(apply(w), 2, static_cast<long long>(size() * sizeof(float)));
  if (stop_) {
    send_stop(w, true);
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
    peers_.send_bytes(layout_.server_rank(s), nullptr, 0, kShardRequest);
    peers_.recv(layout_.server_rank(s), snapshot_.data() + begin, end - begin, kShard);
  }
  point.accuracy = evaluator_->accuracy(snapshot_.data());
  curve.push_back(point);
  eval_s += seconds_since(eval_start);
  reached = options_.target_accuracy > 0 && point.accuracy >= options_.target_accuracy;
  if (!reached && !last) return;
  for (int s = 1; s < layout_.servers; ++s)
    peers_.send_bytes(layout_.server_rank(s), nullptr, 0, kServerStop);
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
    const PeerEnvelope envelope = peers_.recv_any(PeerGroup::kAnySource, PeerGroup::kAnyTag, in_);
    const auto arrived = Clock::now();
    const int source = envelope.from;
    switch (envelope.tag) {
      case kPull:
        if (stop_)
          send_stop(source, false);
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
        peers_.send(source, shard_.data(), size(), kShard);
        peers_.complete_sends();
        break;
      case kServerStop:
        told_to_stop_ = true;
        enter_stop();
        break;
      default:
        throw std::logic_error("async server: unexpected message tag " +
                               std::to_string(envelope.tag));
    }
  }
  wall_s = seconds_since(start_);
}

/// A number of a rank's record: JSON writes NaN and infinities as null (a diverged run's loss).
double number_of(const nlohmann::json& value) {
  return value.is_null() ? std::nan("") : value.get<double>();
}

/// What a rank measured, as JSON for rank 0 (`server` null on a worker rank).
nlohmann::json rank_record(const AsyncWorkerRecord& worker, const ServerRank* server) {
  if (!server)
    return {{"updates", worker.updates},
            {"step_s", worker.step_s},
            {"exchange_s", worker.exchange_s},
            {"first_reply_s", worker.first_reply_s},
            {"last_reply_s", worker.last_reply_s}};
  nlohmann::json record = {{"histogram", server->histogram},
                           {"staleness_sum", server->staleness_sum},
                           {"staleness_count", server->staleness_count},
                           {"clock_skew_max", server->clock_skew_max},
                           {"processing", server_processing_json(server->processing)}};
  if (server->processing.server != 0) return record;
  nlohmann::json curve = nlohmann::json::array();
  for (const AccuracyPoint& p : server->curve)
    curve.push_back({p.round, p.time_s, p.accuracy, p.train_loss});
  record["lead"] = {{"updates", server->updates},
                    {"reached", server->reached},
                    {"wall_s", server->wall_s},
                    {"eval_s", server->eval_s},
                    {"curve", curve},
                    {"update_s", server->update_s}};
  return record;
}

/// On rank 0: every rank's record (rank order, its own first) into the run's AsyncRecord.
AsyncRecord assemble_record(PeerGroup& peers, const Layout& layout, nlohmann::json own) {
  std::vector<nlohmann::json> records{std::move(own)};
  std::vector<char> text;
  for (int r = 1; r < peers.size(); ++r) {
    peers.recv_any(r, kRecord, text);
    records.push_back(nlohmann::json::parse(text.begin(), text.end()));
  }
  AsyncRecord record;
  record.communicator = peers.name();
  const auto k = static_cast<std::size_t>(layout.workers);
  for (std::size_t w = 0; w < k; ++w) {
    AsyncWorkerRecord r;
    r.updates = records[w].at("updates").get<long long>();
    r.step_s = records[w].at("step_s").get<std::vector<double>>();
    r.exchange_s = records[w].at("exchange_s").get<std::vector<double>>();
    r.first_reply_s = records[w].at("first_reply_s").get<std::vector<double>>();
    r.last_reply_s = records[w].at("last_reply_s").get<std::vector<double>>();
    record.workers.push_back(std::move(r));
  }
  for (std::size_t s = k; s < records.size(); ++s) {
    const nlohmann::json& server = records[s];
    const auto histogram = server.at("histogram").get<std::vector<long long>>();
    if (histogram.size() > record.staleness_histogram.size())
      record.staleness_histogram.resize(histogram.size(), 0);
    for (std::size_t i = 0; i < histogram.size(); ++i)
      record.staleness_histogram[i] += histogram[i];
    for (std::size_t w = 0; w < k; ++w) {
      record.workers[w].staleness_sum += server.at("staleness_sum")[w].get<double>();
      record.workers[w].staleness_count +=
          static_cast<long long>(server.at("staleness_count")[w].get<double>());
    }
    record.clock_skew_max =
        std::max(record.clock_skew_max, server.at("clock_skew_max").get<long long>());
    record.servers.push_back(server.at("processing"));
    if (!server.contains("lead")) continue;
    const nlohmann::json& lead = server["lead"];
    record.updates = lead.at("updates").get<long long>();
    record.reached = lead.at("reached").get<bool>();
    record.wall_s = lead.at("wall_s").get<double>();
    record.eval_wall_s = lead.at("eval_s").get<double>();
    record.update_s = lead.at("update_s").get<std::vector<double>>();
    for (const nlohmann::json& p : lead.at("curve")) {
      AccuracyPoint point;
      point.round = point.steps = p[0].get<long long>();
      point.time_s = number_of(p[1]);
      point.accuracy = number_of(p[2]);
      point.train_loss = number_of(p[3]);
      record.curve.push_back(point);
    }
  }
  return record;
}

}  // namespace

Measurement train_async(const model::Plan& plan, const model::Platform& platform,
                        const Dataset& data, const MlpShape& shape, const TrainOptions& options,
                        PeerGroup& peers, bool& reporter) {
  Layout layout;
  layout.workers = plan.workers;
  layout.servers = static_cast<int>(plan.server_hosts.size());
  if (peers.size() != layout.workers + layout.servers)
    throw InputError(options.origins.of("workers"),
                     "workers + servers = the " + peers.name() + " ranks, " +
                         std::to_string(peers.size()) +
                         " (one rank per worker and per server: mpirun -np K+S)",
                     std::to_string(layout.workers) + " workers and " +
                         std::to_string(layout.servers) + " server(s)");
  check_async_job(plan, data, options);
  layout.shards = shard_ranges(shape.parameters(), layout.servers);
  const int rank = peers.rank();
  reporter = rank == 0;

  const std::vector<double> slowdowns = worker_slowdowns(plan, platform);
  AsyncWorkerRecord worker_record;
  std::unique_ptr<ServerRank> server;
  peers.barrier();
  if (rank < layout.workers) {
    const double slowdown =
        options.emulate_slowdown ? slowdowns[static_cast<std::size_t>(rank)] : 1.0;
    worker_record = run_worker(peers, plan, layout, rank, data, shape, options, slowdown);
  } else {
    server = std::make_unique<ServerRank>(peers, plan, layout, rank - layout.workers, data, shape,
                                          options);
    server->run();
  }
  peers.barrier();
  // What each rank measured meets on rank 0.
  nlohmann::json own = rank_record(worker_record, server.get());
  if (rank != 0) {
    const std::string text = own.dump();
    peers.send_bytes(0, text.data(), text.size(), kRecord);
    peers.barrier();  // rank 0 has read every record
    return Measurement{};
  }
  const AsyncRecord record = assemble_record(peers, layout, std::move(own));
  peers.barrier();
  return async_measurement(record, plan, platform, data, shape, options);
}

Measurement train_async_threads(const model::Plan& plan, const model::Platform& platform,
                                const Dataset& data, const MlpShape& shape,
                                const TrainOptions& options) {
  check_async_job(plan, data, options);
  const int ranks = plan.workers + static_cast<int>(plan.server_hosts.size());
  ThreadPeerHub hub(ranks);
  Measurement measurement;
  on_threads(
      ranks,
      [&](int r) {
        bool reporter = false;
        Measurement m = train_async(plan, platform, data, shape, options, hub.peer(r), reporter);
        if (reporter) measurement = std::move(m);
      },
      [&hub] { hub.abort(); });
  return measurement;
}

}  // namespace tauplan::exec
