// testbed_control.cpp: the study behind `tauplan testbed` (see testbed_control.hpp).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/calibrate.hpp"
#include "exec/cpu_steal.hpp"
#include "exec/job_keys.hpp"
#include "exec/message_probe.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/mpi_peers.hpp"
#include "exec/server_probe.hpp"
#include "exec/testbed/launcher.hpp"
#include "exec/testbed/lifecycle.hpp"
#include "exec/testbed/netcal.hpp"
#include "exec/testbed/system.hpp"
#include "exec/window_probe.hpp"
#include "model/base/error.hpp"
#include "model/base/statistics.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/result.hpp"
#include "sim/platform_loader.hpp"
#include "study/common/child_process.hpp"
#include "study/common/files.hpp"
#include "study/common/inputs.hpp"
#include "study/testbed/testbed_control.hpp"

namespace tauplan::study {

void require_testbed_rights() {
  const tb::TestbedBlocker blocker = tb::testbed_blocker();
  if (!blocker.key.empty()) throw InputError("testbed", blocker.key, blocker.expected, blocker.why);
}

namespace {

std::string mbps(double bytes_per_s) {
  return fmt::format("{:.4g} MB/s", bytes_per_s / 1e6);
}

std::string ms(double seconds) {
  return fmt::format("{:.4g} ms", seconds * 1e3);
}

void print_state(const tb::State& state, std::ostream& out) {
  const tb::Spec& spec = state.spec;
  out << fmt::format("testbed {} of {}: {} hosts, scale {:.6g} ({}), mtu {} ({}), TCP {}\n",
                     spec.prefix, spec.platform_file, spec.hosts.size(), spec.scale,
                     spec.scale_reason, spec.mtu, spec.mtu_reason, state.tcp_congestion_control);
  out << fmt::format("{:<5} {:<16} {:<7} {:<10} {:<12} {}\n", "rank", "host", "role", "namespace",
                     "address", "node");
  for (std::size_t i = 0; i < spec.hosts.size(); ++i) {
    const tb::SpecHost& h = spec.hosts[i];
    out << fmt::format("{:<5} {:<16} {:<7} {:<10} {:<12} {}\n", i, h.name, h.role, h.netns,
                       h.address, h.node);
  }
  out << fmt::format("{:<22} {:<12} {:>14} {:>12} {:>14} {:>12} {:>10}\n", "link", "sharing",
                     "platform B/s", "platform s", "testbed B/s", "testbed s", "queue B");
  for (const tb::SpecLink& l : spec.links)
    out << fmt::format("{:<22} {:<12} {:>14.6g} {:>12.6g} {:>14.6g} {:>12.6g} {:>10.0f}\n", l.name,
                       tb::sharing_name(l.sharing), l.platform_bandwidth_Bps, l.platform_latency_s,
                       l.bandwidth_Bps, l.latency_s, l.queue_bytes);
  double min_lat = 1e300, max_lat = 0, min_bw = 1e300, max_bw = 0;
  for (const tb::SpecRoute& r : spec.routes) {
    min_lat = std::min(min_lat, r.latency_s);
    max_lat = std::max(max_lat, r.latency_s);
    min_bw = std::min(min_bw, r.bandwidth_Bps);
    max_bw = std::max(max_bw, r.bandwidth_Bps);
  }
  out << fmt::format("routes: {} ordered pairs, latency {} to {}, bandwidth {} to {}\n",
                     spec.routes.size(), ms(min_lat), ms(max_lat), mbps(min_bw), mbps(max_bw));
  out << fmt::format("fabric pid {}, time to live {:.0f} s, state {}\n", state.fabric_pid,
                     state.ttl_s, tb::state_path(spec.prefix));
}

}  // namespace

void testbed_describe(const TestbedDescribeRequest& a, std::ostream& out) {
  const model::Platform platform = sim::load_platform(a.platform);
  nlohmann::json hosts = nlohmann::json::array();
  for (const model::Host& h : platform.hosts)
    hosts.push_back({{"name", h.name},
                     {"role", h.role == model::HostRole::Server ? "server" : "worker"},
                     {"node", h.node}});
  nlohmann::json doc = {{"platform", a.platform}, {"hosts", hosts}};
  if (a.spec) {
    tb::Options options;
    options.hosts = a.hosts;
    options.scale = a.scale;
    options.prefix = a.prefix;
    doc["spec"] = tb::to_json(tb::make_spec(platform, options));
  }
  out << doc.dump(1) << "\n";
}

void testbed_up(const TestbedUpRequest& a, std::ostream& out) {
  require_testbed_rights();
  tb::check_prefix(a.prefix, "command line");
  const model::Platform platform = sim::load_platform(a.platform);
  tb::Options options;
  options.hosts = a.hosts;
  options.scale = a.scale;
  options.prefix = a.prefix;
  options.mtu = a.mtu;
  options.queue_s = a.queue_s;
  if (!(a.max_packet_rate > 0))
    throw InputError("command line", "--max-packet-rate", "a positive number of packets/s",
                     fmt::format("{}", a.max_packet_rate));
  options.limits.max_packet_rate = a.max_packet_rate;
  const tb::Spec spec = tb::make_spec(platform, options);
  if (!(a.ttl_s > 0))
    throw InputError("command line", "--ttl", "a positive number of seconds",
                     fmt::format("{}", a.ttl_s));
  tb::UpOptions up;
  up.fabric.ttl_s = a.ttl_s;
  up.fabric.realtime_priority = a.realtime_priority;
  up.fabric.early_s = a.early_s;
  up.tcp_congestion_control = a.congestion_control;
  up.executable = tb::self_executable();
  tb::State state;
  try {
    state = tb::bring_up(spec, up);
  } catch (const tb::Interrupted& e) {
    std::fprintf(stderr, "tauplan: testbed up %s; removed what it had made\n", e.what());
    std::fflush(stderr);
    _exit(128 + e.signal);
  }
  if (a.json)
    out << tb::to_json(state).dump(2) << "\n";
  else
    print_state(state, out);
}

void testbed_down(const std::string& prefix, bool json, std::ostream& out) {
  require_testbed_rights();
  tb::check_prefix(prefix, "command line");
  tb::PrefixLock lock(prefix);
  const tb::Leftovers found = tb::find_leftovers(prefix);
  if (found.empty()) tb::remove_prefix_files(prefix);  // the lock just taken, an old log
  if (found.empty())
    throw InputError(tb::state_path(prefix), "testbed", "a testbed to take down",
                     "none with prefix " + prefix + " (no state file, namespace or fabric)");
  tb::remove_testbed(prefix);
  const tb::Leftovers left = tb::find_leftovers(prefix);
  if (!left.empty()) throw std::runtime_error("testbed down: could not remove " + left.describe());
  tb::remove_prefix_files(prefix);
  if (json)
    out << nlohmann::json{{"prefix", prefix}, {"removed", found.describe()}}.dump() << "\n";
  else
    out << "testbed " << prefix << " down: removed " << found.describe() << "\n";
}

void testbed_status(const std::string& prefix, bool json, std::ostream& out) {
  require_testbed_rights();
  tb::check_prefix(prefix, "command line");
  const tb::Status status = tb::testbed_status(prefix);
  if (json) {
    nlohmann::json j = {{"prefix", prefix},
                        {"health", status.health},
                        {"problem", status.problem},
                        {"leftovers", status.leftovers.describe()},
                        {"fabric_cpu_s", status.fabric_cpu_s},
                        {"fabric", status.fabric_stats}};
    if (status.state) j["state"] = tb::to_json(*status.state);
    out << j.dump(2) << "\n";
    return;
  }
  out << "testbed " << prefix << ": " << status.health;
  if (!status.problem.empty()) out << " (" << status.problem << ")";
  out << "\n";
  if (status.state && status.health == "up") {
    print_state(*status.state, out);
    const nlohmann::json& f = status.fabric_stats;
    if (f.is_object()) {
      out << fmt::format(
          "fabric: {:.1f} s CPU, {} packets in, {} delivered, {} dropped at full queues, {} not "
          "for a testbed host\n",
          status.fabric_cpu_s, f.value("received", 0), f.value("delivered", 0),
          f.value("dropped_queue", 0), f.value("dropped_foreign", 0));
      if (f.contains("delivery_lateness")) {
        out << "deliveries by lateness:";
        for (const auto& bin : f.at("delivery_lateness"))
          out << " " << bin.at(0).get<std::string>() << " " << bin.at(1).get<long long>();
        out << "\n";
      }
    }
  } else if (status.health == "down") {
    out << "nothing with prefix " << prefix << " exists\n";
  }
}

namespace {

/// Runs `tauplan testbed PROBE ARGS --out FILE` as one MPI rank per host under `testbed run`
/// and returns the JSON its rank 0 wrote; std::runtime_error naming `what` when it fails.
nlohmann::json run_rank_probe(const std::string& prefix, const std::string& probe,
                              std::vector<std::string> args, const std::string& what) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string stem = (dir / fmt::format("tauplan-{}-{}", probe, getpid())).string();
  std::vector<std::string> command = {
      "testbed", "run", "--prefix", prefix, "--", child::self_executable(), "testbed", probe};
  command.insert(command.end(), args.begin(), args.end());
  command.insert(command.end(), {"--out", stem + ".json"});
  const child::Task task{command, stem + ".out", stem + ".err"};
  int status = 0;
  child::run_all({task}, 1, [&](size_t, int st) { status = st; });
  const std::string err = read_text(stem + ".err");
  nlohmann::json doc;
  if (status == 0) {
    try {
      doc = nlohmann::json::parse(read_text(stem + ".json"));
    } catch (const std::exception&) {
      status = -1;
    }
  }
  for (const char* ext : {".json", ".out", ".err"})
    std::filesystem::remove(stem + ext);
  if (status != 0)
    throw std::runtime_error("testbed calibrate --mpi: " + what + " failed (exit " +
                             std::to_string(status) + "): " + last_line(err));
  return doc;
}

/// Replaces the TCP numbers of every measured route by those of MPI messages between the same
/// hosts (exec/message_probe.hpp, run as one rank per host under `testbed run`) and refits the
/// links; the TCP measurements are kept in tcp_routes.
void measure_messages(const TestbedCalibrateRequest& a, const tb::State& state,
                      tb::NetworkCalibration& cal) {
  std::string pairs;
  for (const tb::RouteMeasurement& m : cal.routes)
    pairs += fmt::format("{}{}:{}", pairs.empty() ? "" : ",", m.src, m.dst);
  // Sizes whose transfer would take more than kLongestMessageS on the slowest route's shaped
  // rate (a testbed at a time scale of about 1.5 or more on 12.5 MB/s links) are left out, the
  // two smallest kept: every route is timed with the same sizes, and 8 MiB at 62.5 kB/s would
  // take 9 minutes a route.
  constexpr double kLongestMessageS = 1.0;
  double slowest = std::numeric_limits<double>::infinity();
  for (const tb::RouteMeasurement& m : cal.routes)
    slowest = std::min(slowest, m.testbed_bandwidth_Bps);
  std::vector<std::string> left_out;
  const std::vector<double> kept =
      tb::message_sizes(a.mpi_sizes, slowest, kLongestMessageS, left_out);
  for (const std::string& line : left_out) {
    std::cerr << "testbed calibrate: " << line << "\n";
    cal.warnings.push_back(line);
  }
  std::string sizes;
  for (double v : kept)
    sizes += fmt::format("{}{:.0f}", sizes.empty() ? "" : ",", v);
  std::cerr << "testbed calibrate: messages over MPI on " << cal.routes.size() << " routes\n";
  const nlohmann::json doc =
      run_rank_probe(a.prefix, "message-probe",
                     {"--pairs", pairs, "--sizes", sizes, "--repeats",
                      std::to_string(a.mpi_repeats), "--waiters", a.mpi_waiters},
                     "the message probe");
  cal.tcp_routes = cal.routes;
  for (tb::RouteMeasurement& m : cal.routes) {
    const nlohmann::json& measured = doc.at("routes");
    const auto found =
        std::find_if(measured.begin(), measured.end(), [&m](const nlohmann::json& r) {
          return r.at("src").get<int>() == m.src && r.at("dst").get<int>() == m.dst;
        });
    const std::string route = state.spec.hosts[static_cast<std::size_t>(m.src)].name + " -> " +
                              state.spec.hosts[static_cast<std::size_t>(m.dst)].name;
    if (found == measured.end())
      throw std::runtime_error("testbed calibrate --mpi: the message probe left out route " +
                               route);
    const nlohmann::json& r = *found;
    // The route's rate and what a message pays on top (tb::fit_messages): the messages' lower
    // envelope, and the least extra time of the smallest messages at that rate. The links'
    // bandwidths are refitted below from these rates.
    m.samples.clear();
    for (const nlohmann::json& sample : r.at("samples"))
      m.samples.push_back({sample.at(0).get<double>(), sample.at(1).get<double>()});
    const tb::MessageFit fit = tb::fit_messages(m.samples, route);
    m.bandwidth_Bps = fit.bandwidth_Bps;
    m.round_trip_s = 2 * fit.alpha_s;
    m.round_trips_s = {r.at("small_round_trip_s").get<double>()};
    m.fit = fit.line;
  }
  cal.links = tb::fit_links_to_messages(state.spec, cal.routes, cal.tcp_routes, cal.warnings);
  // Links no route shows at its rate: the TCP flows that filled them (calibrate_network).
  tb::fill_lower_bounds(state.spec, cal.fills, cal.links, cal.warnings);
  // Links: a message above the eager limit pays three one-way latencies of its route (the
  // rendezvous: request, clear to send, then the data), each the route's TCP one-way latency
  // times one factor c fitted through the origin over the measured routes; every link keeps its
  // TCP latency times c, and the platform says that messages above the eager limit
  // follow a rendezvous, so that the simulator sends the request and the clear to send as
  // transfers of their own (sim/rendezvous.hpp) and the analytic engine charges three latencies.
  // Why not fit each link's latency to the messages (fit_links' smallest correction): the
  // routes measured share a few hosts, and the correction they leave to the links of other hosts
  // is not observable (on testbed-two-nodes it made n0-h1 -> n1-h1 8 ms shorter than n0-h0 ->
  // n1-h0, its mirror image). One factor per testbed (about 1.03: 3.08 one-way latencies a
  // message) predicts every measured alpha within 2% on both testbeds (one route at +6.9%); each
  // route's error is a warning when it exceeds 10%.
  const double factor = tb::scale_latencies_to_messages(state.spec, cal.routes, cal.tcp_routes,
                                                        model::MessageProtocol::kRendezvousTrips,
                                                        cal.links, cal.warnings);
  cal.mpi_latency_factor = factor;
  cal.eager_limit_bytes = a.eager_limit_bytes;
  cal.message_method = fmt::format(
      "MPI point-to-point messages (OpenMPI ob1 over TCP, one rank per host under testbed run), "
      "wall clock at the sender: per route, messages of {} bytes in {} passes after a warm-up "
      "pass, "
      "each answered by 8 bytes, the other ranks waiting {}; one-way time = the exchange less half "
      "the fastest 8-byte round "
      "trip; bandwidth beta = 1 / slope of the messages' lower envelope "
      "(noise only slows a message), alpha = the least t - S / beta of the smallest messages, "
      "written as a round trip of 2 alpha (alpha holds "
      "the rendezvous handshake of messages above the eager limit of {:.0f} bytes); every link's "
      "bandwidth refitted from the routes' beta, its latency = its TCP fit x {:.4g}, the factor "
      "fitted through the origin to alpha against 3 "
      "TCP one-way latencies of the measured routes (a rendezvous: request, clear to send, "
      "data), and the platform's message_protocol is that rendezvous; the TCP measurements are "
      "kept in the JSON (tcp_routes), each route's r2 that of its messages about t = alpha + S / "
      "beta",
      sizes, a.mpi_repeats,
      a.mpi_waiters == "asleep" ? "asleep (MPI_Ibarrier tested every 200 us)"
                                : "in MPI_Barrier (busy-polling)",
      a.eager_limit_bytes, factor);
}

/// The window probe's messages: as long as the slowest chosen route moves in kWindowMessageS
/// (at most 1 MiB, above the eager limit: a rendezvous each, as a ring's chunks), kWindowMessages
/// of them one after another.
constexpr double kWindowMessageS = 0.1;
constexpr int kWindowMessages = 12;
constexpr std::size_t kWindowTriples = 3;

/// The queued-window probe (exec/window_probe.hpp) on up to kWindowTriples measured routes X -> Y
/// whose first link is their narrowest, each with the nearest host Z whose route from X leaves
/// by the same link; the median of their windows becomes cal.queued_window_bytes.
void measure_queued_window(const TestbedCalibrateRequest& a, const tb::State& state,
                           tb::NetworkCalibration& cal) {
  const tb::Spec& spec = state.spec;
  struct Chosen {
    exec::WindowTriple triple;
    double route_Bps = 0;
    double link_Bps = 0;
  };
  std::vector<Chosen> chosen;
  std::vector<bool> used(spec.hosts.size(), false);
  for (const tb::RouteMeasurement& m : cal.routes) {
    if (chosen.size() == kWindowTriples) break;
    if (used[static_cast<std::size_t>(m.src)]) continue;
    const std::vector<int>& links = spec.route(m.src, m.dst).links;
    if (links.empty()) continue;
    const double first_Bps = cal.links[static_cast<std::size_t>(links.front())].bandwidth_Bps;
    bool first_narrowest = true;
    for (int l : links)
      first_narrowest =
          first_narrowest && cal.links[static_cast<std::size_t>(l)].bandwidth_Bps >= first_Bps;
    if (!first_narrowest) continue;
    int pinger = -1;
    std::size_t pinger_links = std::numeric_limits<std::size_t>::max();
    for (int z = 0; z < static_cast<int>(spec.hosts.size()); ++z) {
      if (z == m.src || z == m.dst) continue;
      const std::vector<int>& to_z = spec.route(m.src, z).links;
      if (to_z.empty() || to_z.front() != links.front() || to_z.size() >= pinger_links) continue;
      pinger = z;
      pinger_links = to_z.size();
    }
    if (pinger < 0) continue;
    used[static_cast<std::size_t>(m.src)] = true;
    chosen.push_back({{m.src, m.dst, pinger}, m.bandwidth_Bps, first_Bps});
  }
  if (chosen.empty())
    throw InputError("command line", "--queued-window",
                     "a testbed with a measured route whose first link is its narrowest and a "
                     "third host reached through that link",
                     fmt::format("none among {} measured routes", cal.routes.size()));
  double slowest = std::numeric_limits<double>::infinity();
  for (const Chosen& c : chosen)
    slowest = std::min(slowest, c.route_Bps);
  const double eager_floor = 4 * std::ceil((a.eager_limit_bytes + 4) / 4);
  const double message_bytes =
      std::max(eager_floor, 4 * std::floor(std::min(1048576.0, slowest * kWindowMessageS) / 4));
  std::string triples;
  for (const Chosen& c : chosen)
    triples += fmt::format("{}{}:{}:{}", triples.empty() ? "" : ",", c.triple.sender,
                           c.triple.receiver, c.triple.pinger);
  std::cerr << "testbed calibrate: the queued window over MPI on " << chosen.size() << " senders\n";
  const nlohmann::json doc =
      run_rank_probe(a.prefix, "window-probe",
                     {"--triples", triples, "--bytes", fmt::format("{:.0f}", message_bytes),
                      "--messages", std::to_string(kWindowMessages), "--waiters", a.mpi_waiters},
                     "the queued-window probe");
  std::vector<double> windows;
  const auto name = [&spec](int host) { return spec.hosts[static_cast<std::size_t>(host)].name; };
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const nlohmann::json& r = doc.at("triples").at(i);
    tb::QueuedWindowReading reading;
    reading.sender = name(chosen[i].triple.sender);
    reading.receiver = name(chosen[i].triple.receiver);
    reading.pinger = name(chosen[i].triple.pinger);
    reading.quiet_median_s = r.at("quiet_median_s").get<double>();
    reading.message_waits_s = r.at("message_waits_s").get<std::vector<double>>();
    reading.queue_wait_s = r.at("queue_wait_s").get<double>();
    reading.busy_pings = static_cast<int>(r.at("busy_round_trips_s").size());
    reading.link_Bps = chosen[i].link_Bps;
    reading.window_bytes = reading.queue_wait_s * reading.link_Bps;
    windows.push_back(reading.window_bytes);
    std::cerr << fmt::format(
        "testbed calibrate: {} -> {}, one message after another; {}'s echoes {:.3f} ms quiet "
        "(median), a message's largest {:.3f} ms over that (median of {} messages, {} echoes): "
        "{:.1f} KB queued at {:.4g} MB/s\n",
        reading.sender, reading.receiver, reading.pinger, 1e3 * reading.quiet_median_s,
        1e3 * reading.queue_wait_s, reading.message_waits_s.size(), reading.busy_pings,
        reading.window_bytes / 1e3, reading.link_Bps / 1e6);
    cal.window_readings.push_back(reading);
  }
  const std::size_t n = windows.size();
  cal.queued_window_bytes = model::median(windows);
  cal.message_method += fmt::format(
      "; queued window (root-zone prop queued_window_bytes, the median over {} senders X): X "
      "sends a third host Y {} MPI messages of {:.0f} bytes, each once Y has the one before, "
      "while a host Z reached by X's first link times back-to-back 8-byte round trips to X; a "
      "message's wait = its largest round trip less the median of 20 quiet ones, X's = the "
      "median over its messages after the first; window = that x the calibrated rate of X's first "
      "link",
      n, kWindowMessages, message_bytes);
}

}  // namespace

tb::NetworkCalibration measure_testbed(const TestbedCalibrateRequest& a, const tb::State& state) {
  const exec::StealMeter steal;
  tb::NetworkCalibration cal = tb::calibrate_network(state, a.request, [](const std::string& line) {
    std::cerr << "testbed calibrate: " << line << "\n";
  });
  if (a.mpi) measure_messages(a, state, cal);
  if (a.mpi && a.queued_window) measure_queued_window(a, state, cal);
  cal.steal_fraction = steal.fraction();
  // The link emulator and the probes run on this machine's CPUs: while the hypervisor takes
  // them, the links run slower than shaped (experiments/testbed/README.md, the waiters A/B).
  if (cal.steal_fraction > exec::kStealWarningFraction)
    cal.warnings.push_back(fmt::format(
        "the hypervisor took {} of this machine's CPU time during the calibration (steal, "
        "/proc/stat): the emulated links ran slower than shaped at times, and a calibration "
        "taken at another time may differ by several percent",
        exec::describe_steal(cal.steal_fraction)));
  return cal;
}

void testbed_compute_probe(const ComputeProbeRequest& r) {
  const model::Job job = model::load_job(r.job_file, all_job_keys(), r.overrides);
  const exec::ExecSettings settings = exec::exec_settings(job);
  const exec::Dataset data = exec::load_dataset(settings.data);
  const exec::MlpShape shape = exec::mlp_shape(settings.hidden, data);
  if (!r.server_processing.empty() && r.server_processing != "combine" &&
      r.server_processing != "apply")
    throw InputError("command line", "--server-processing", "combine or apply",
                     r.server_processing);
  exec::MpiSession session(nullptr, nullptr);
  exec::MpiPeers peers;
  exec::CalibrationRequest request;
  request.batches = r.batches;
  request.replicas = r.workers;
  request.seed = static_cast<std::uint64_t>(job.integer("seed"));
  exec::RankRoundSamples samples;
  const std::vector<exec::StepPoint> steps = exec::measure_rank_rounds(
      peers, r.workers, request, data, shape, r.steps_per_round, r.rounds, r.wait_s, &samples);
  std::vector<exec::ServerProbeFit> servers;
  const int server_ranks = peers.size() - r.workers;
  if (!r.server_processing.empty() && server_ranks > 0) {
    exec::ServerProbeRequest probe;
    probe.kind = r.server_processing == "combine" ? exec::ServerProbeKind::Combine
                                                  : exec::ServerProbeKind::Apply;
    probe.workers = r.workers;
    // Each server holds one shard of the parameters (and a sync push carries its weight too).
    probe.shard_floats = (shape.parameters() + static_cast<std::size_t>(server_ranks) - 1) /
                         static_cast<std::size_t>(server_ranks);
    servers = exec::probe_server_processing(peers, r.workers, probe);
  }
  if (peers.rank() != 0) return;
  nlohmann::json doc = {{"steps", exec::steps_json({steps, {}, 0, {}})},
                        {"workers", r.workers},
                        {"ranks", peers.size()},
                        {"steps_per_round", r.steps_per_round},
                        {"rounds", r.rounds},
                        {"wait_s", r.wait_s}};
  // Every measured round, so that another statistic than the median can be taken afterwards.
  doc["step_rounds"] = nlohmann::json::array();
  for (std::size_t i = 0; i < samples.batches.size(); ++i)
    doc["step_rounds"].push_back({{"batch", samples.batches[i]},
                                  {"seconds_per_step_by_round_and_worker", samples.seconds[i]}});
  if (!servers.empty()) {
    doc["server_processing"] = r.server_processing;
    doc["servers"] = nlohmann::json::array();
    for (const exec::ServerProbeFit& f : servers) {
      nlohmann::json points = nlohmann::json::array();
      for (const exec::ServerProbePoint& p : f.points)
        points.push_back({{"messages", p.messages}, {"bytes", p.bytes}, {"seconds", p.seconds}});
      doc["servers"].push_back({{"rank", f.rank},
                                {"seconds_per_message", f.seconds_per_message},
                                {"seconds_per_byte", f.seconds_per_byte},
                                {"points", points}});
    }
  }
  write_text(r.out, doc.dump(1) + "\n");
}

namespace {

/// The internal probes' --waiters: "spin" or "asleep", else InputError.
void require_waiters(const std::string& waiters) {
  if (waiters != "spin" && waiters != "asleep")
    throw InputError("command line", "--waiters", "spin or asleep", waiters);
}

/// The items of a comma-separated list, as written (an empty list has none).
std::vector<std::string> comma_items(const std::string& list) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin < list.size()) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    items.push_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

}  // namespace

void testbed_message_probe(const std::string& pairs, const std::vector<double>& sizes, int repeats,
                           const std::string& waiters, const std::string& out) {
  require_waiters(waiters);
  exec::MpiSession session(nullptr, nullptr);
  exec::MpiPeers peers;
  exec::MessageProbeRequest request;
  if (waiters == "asleep") request.barrier = [&peers] { peers.barrier_asleep(); };
  for (const std::string& item : comma_items(pairs)) {
    const std::size_t colon = item.find(':');
    int src = -1, dst = -1;
    try {
      if (colon == std::string::npos) throw std::invalid_argument(item);
      src = std::stoi(item.substr(0, colon));
      dst = std::stoi(item.substr(colon + 1));
    } catch (const std::exception&) {
      throw InputError("command line", "--pairs", "SRC:DST rank pairs, comma-separated", item);
    }
    request.pairs.emplace_back(src, dst);
  }
  request.sizes_bytes = sizes;
  request.repeats = repeats;
  std::vector<exec::MessageProbeRoute> routes;
  try {
    routes = exec::run_message_probe(peers, request);
  } catch (const std::invalid_argument& e) {
    throw InputError("command line", "testbed message-probe", "pairs of ranks and sizes", e.what());
  }
  if (peers.rank() != 0) return;
  nlohmann::json doc = {{"routes", nlohmann::json::array()}};
  for (const exec::MessageProbeRoute& r : routes) {
    nlohmann::json samples = nlohmann::json::array();
    for (const auto& [bytes, seconds] : r.samples)
      samples.push_back({bytes, seconds});
    doc["routes"].push_back({{"src", r.src},
                             {"dst", r.dst},
                             {"small_round_trip_s", r.small_round_trip_s},
                             {"alpha_s", r.alpha_s},
                             {"beta_Bps", r.beta_Bps},
                             {"r2", r.fit.r2},
                             {"max_relative_residual", r.fit.max_relative_residual},
                             {"samples", samples}});
  }
  write_text(out, doc.dump(1) + "\n");
}

void testbed_window_probe(const std::string& triples, double message_bytes, int messages,
                          const std::string& waiters, const std::string& out) {
  require_waiters(waiters);
  exec::MpiSession session(nullptr, nullptr);
  exec::MpiPeers peers;
  exec::QueuedWindowRequest request;
  if (waiters == "asleep") request.barrier = [&peers] { peers.barrier_asleep(); };
  for (const std::string& item : comma_items(triples)) {
    exec::WindowTriple t;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%d:%d:%d%c", &t.sender, &t.receiver, &t.pinger, &tail) != 3)
      throw InputError("command line", "--triples", "SENDER:RECEIVER:PINGER, comma-separated",
                       item);
    request.triples.push_back(t);
  }
  request.message_bytes = message_bytes;
  request.messages = messages;
  std::vector<exec::QueuedWindowMeasurement> measured;
  try {
    measured = exec::run_queued_window_probe(peers, request);
  } catch (const std::invalid_argument& e) {
    throw InputError("command line", "testbed window-probe", "triples of ranks and a stream",
                     e.what());
  }
  if (peers.rank() != 0) return;
  nlohmann::json doc = {{"triples", nlohmann::json::array()}};
  for (const exec::QueuedWindowMeasurement& m : measured)
    doc["triples"].push_back({{"sender", m.triple.sender},
                              {"receiver", m.triple.receiver},
                              {"pinger", m.triple.pinger},
                              {"quiet_round_trips_s", m.quiet_round_trips_s},
                              {"busy_round_trips_s", m.busy_round_trips_s},
                              {"quiet_median_s", m.quiet_median_s},
                              {"busy_message", m.busy_message},
                              {"message_waits_s", m.message_waits_s},
                              {"queue_wait_s", m.queue_wait_s}});
  write_text(out, doc.dump(1) + "\n");
}

void testbed_calibrate(const TestbedCalibrateRequest& a, std::ostream& out) {
  require_testbed_rights();
  tb::check_prefix(a.prefix, "command line");
  const tb::State state = tb::require_up(a.prefix);
  {
    std::ofstream probe(a.out, std::ios::app);
    if (!probe) throw InputError(a.out, "--out", "a writable file path", "cannot write");
  }
  const tb::NetworkCalibration cal = measure_testbed(a, state);
  const std::string xml = tb::calibrated_platform_xml(state.spec, cal);
  {
    std::ofstream file(a.out, std::ios::trunc);
    file << xml;
    if (!file) throw InputError(a.out, "--out", "a writable file path", "cannot write");
  }
  // The file must load as a platform with the testbed's hosts and routes.
  const model::Platform loaded = sim::load_platform(a.out);
  if (loaded.hosts.size() != state.spec.hosts.size())
    throw std::runtime_error("calibrated platform " + a.out + " has " +
                             std::to_string(loaded.hosts.size()) + " hosts, not " +
                             std::to_string(state.spec.hosts.size()));
  for (const tb::SpecRoute& r : state.spec.routes) {
    const int src = loaded.find_host(state.spec.hosts[static_cast<std::size_t>(r.src)].name);
    const int dst = loaded.find_host(state.spec.hosts[static_cast<std::size_t>(r.dst)].name);
    if (src < 0 || dst < 0 || loaded.route(src, dst).links.size() != r.links.size())
      throw std::runtime_error("calibrated platform " + a.out + " lost the route " +
                               state.spec.hosts[static_cast<std::size_t>(r.src)].name + " -> " +
                               state.spec.hosts[static_cast<std::size_t>(r.dst)].name);
  }
  if (a.json) {
    nlohmann::json j = tb::to_json(cal, state.spec);
    j["out"] = a.out;
    j["context"] = {{"version", model::tauplan_version()},
                    {"commit", model::tauplan_git_commit()},
                    {"testbed_created", state.created},
                    {"tcp_congestion_control", state.tcp_congestion_control},
                    {"fabric_pid", state.fabric_pid}};
    out << j.dump(2) << "\n";
    return;
  }
  const tb::Spec& spec = state.spec;
  out << fmt::format("calibrated {} (scale {:.6g}) in {:.1f} s, steal {} -> {}\n",
                     spec.platform_file, spec.scale, cal.seconds,
                     exec::describe_steal(cal.steal_fraction), a.out);
  out << fmt::format("{:<28} {:>11} {:>11} {:>8} {:>12} {:>12} {:>8} {:>8}\n", "route", "rtt ms",
                     "testbed", "err", "MB/s", "testbed", "err", "R^2");
  for (const tb::RouteMeasurement& m : cal.routes)
    out << fmt::format(
        "{:<28} {:>11.4g} {:>11.4g} {:>7.2f}% {:>12.4g} {:>12.4g} {:>7.2f}% {:>8.5f}\n",
        spec.hosts[static_cast<std::size_t>(m.src)].name + " -> " +
            spec.hosts[static_cast<std::size_t>(m.dst)].name,
        m.round_trip_s * 1e3, m.testbed_round_trip_s * 1e3,
        100 * (m.round_trip_s / m.testbed_round_trip_s - 1), m.bandwidth_Bps / 1e6,
        m.testbed_bandwidth_Bps / 1e6, 100 * (m.bandwidth_Bps / m.testbed_bandwidth_Bps - 1),
        m.fit.r2);
  for (const tb::ShareMeasurement& s : cal.shares) {
    std::string line = fmt::format("{} flow(s) into {}:", s.flows.size(),
                                   spec.hosts[static_cast<std::size_t>(s.flows[0].second)].name);
    double total = 0;
    for (std::size_t f = 0; f < s.flows.size(); ++f) {
      line += fmt::format(" {:.4g}/{:.4g}", s.rates_Bps[f] / 1e6, s.fair_Bps[f] / 1e6);
      total += s.rates_Bps[f];
    }
    out << line
        << fmt::format(" MB/s measured/fair, aggregate {:.4g} MB/s, fabric {:.0f}% of a core\n",
                       total / 1e6, 100 * s.fabric_cpu_s / s.seconds);
  }
  for (const tb::DuplexMeasurement& d : cal.duplex)
    out << fmt::format("both directions {} <-> {}: {:.3f} and {:.3f} of alone\n",
                       spec.hosts[static_cast<std::size_t>(d.a)].name,
                       spec.hosts[static_cast<std::size_t>(d.b)].name,
                       d.both_ab_Bps / d.alone_ab_Bps, d.both_ba_Bps / d.alone_ba_Bps);
  for (const std::string& w : cal.warnings)
    std::cerr << "tauplan: testbed calibrate: warning: " << w << "\n";
}

namespace {

/// The state file of the testbed of `prefix`; InputError naming it when there is none.
tb::State testbed_state(const std::string& prefix) {
  const auto state = tb::read_state(prefix);
  if (!state) throw InputError(tb::state_path(prefix), "testbed", "a state file", "none");
  return *state;
}

}  // namespace

void testbed_fabric(const std::string& prefix, tb::FabricOptions options, int ready_fd) {
  require_testbed_rights();
  tb::check_prefix(prefix, "command line");
  const tb::State state = testbed_state(prefix);
  options.stats_path = tb::fabric_stats_path(prefix);
  const int exit_code =
      tb::run_fabric(state.spec, options, ready_fd, [prefix] { tb::remove_testbed(prefix); });
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(exit_code);
}

void testbed_agent(const std::string& prefix, std::vector<std::string> host_and_command) {
  require_testbed_rights();
  const tb::State state = testbed_state(prefix);
  if (host_and_command.empty())
    throw InputError("command line", "testbed agent", "HOST COMMAND", "nothing");
  const std::string netns = host_and_command.front();
  host_and_command.erase(host_and_command.begin());
  tb::exec_agent(state, netns, host_and_command);
}

void testbed_rank(const std::string& prefix, const std::vector<std::string>& command) {
  tb::exec_rank(testbed_state(prefix), command);
}

void testbed_run(const std::string& prefix, int np, const std::string& host_list,
                 const std::vector<std::string>& command) {
  require_testbed_rights();
  tb::check_prefix(prefix, "command line");
  const tb::State state = tb::require_up(prefix);
  std::vector<std::string> names;
  for (std::size_t begin = 0; begin < host_list.size();) {
    const std::size_t end = std::min(host_list.find(',', begin), host_list.size());
    names.push_back(host_list.substr(begin, end - begin));
    begin = end + 1;
  }
  const std::vector<int> hosts = tb::rank_hosts(state, np, names);
  const int ranks = static_cast<int>(hosts.size());
  const auto argv = tb::mpirun_command(state, hosts, command, tb::self_executable());
  std::fprintf(stderr,
               "tauplan: testbed run: %d rank(s) on %s (scale %.6g), rank r in namespace "
               "%sr<r>, MPI over TCP on %s\n",
               ranks, state.spec.platform_file.c_str(), state.spec.scale, state.spec.prefix.c_str(),
               tb::kEmulatedSubnet);
  std::fflush(stderr);
  tb::exec_in_control_namespace(state, argv);
}

}  // namespace tauplan::study
