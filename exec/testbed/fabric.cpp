// fabric.cpp: the event loop of the link emulator (epoll over TUNs, a timerfd, a signalfd).
//
// What it leaves out: see fabric.hpp.
#include "exec/testbed/fabric.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/testbed/system.hpp"

namespace tauplan::testbed {

namespace {

/// Opens the TUN interface `name` inside namespace `netns` (the fd stays bound to it).
int open_tun(const std::string& netns, const std::string& name) {
  NamespaceGuard in(netns);
  const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(std::string("cannot open /dev/net/tun: ") + strerror(errno));
  ifreq request{};
  request.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::snprintf(request.ifr_name, IFNAMSIZ, "%s", name.c_str());
  if (ioctl(fd, TUNSETIFF, &request) != 0) {
    const int saved = errno;
    close(fd);
    throw std::runtime_error("cannot attach to " + name + " in " + netns + ": " + strerror(saved));
  }
  return fd;
}

struct Packet {
  std::vector<std::uint8_t> bytes;
  std::size_t length = 0;
  int src = 0;
  int dst = 0;
  int route = 0;  // index into spec.routes
};

struct Event {
  double due = 0;   // when it may run (wall clock): time - lookahead of its link, or time - early
  double time = 0;  // virtual time: when the packet reaches the link (or its destination)
  std::uint64_t sequence = 0;  // ties: first scheduled runs first
  int packet = 0;
  int hop = 0;  // index of the next link on the route; == route length: deliver
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.due > b.due || (a.due == b.due && a.sequence > b.sequence);
  }
};

struct LinkState {
  double lookahead = 0;  // no packet can reach this link sooner than this after it is read
  double busy_until = 0;
  std::unordered_map<long long, double> busy_per_flow;  // fat pipes: per (src, dst)
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t dropped = 0;
};

constexpr std::size_t kLatenessBins = 8;
// Upper bounds (seconds) of the lateness bins; the last bin holds the rest.
constexpr double kLatenessBounds[kLatenessBins - 1] = {0,      10e-6,  25e-6, 50e-6,
                                                       100e-6, 250e-6, 1e-3};
constexpr const char* kLatenessNames[kLatenessBins] = {
    "early", "0-10us", "10-25us", "25-50us", "50-100us", "100-250us", "250us-1ms", "over 1ms"};

struct Counters {
  std::uint64_t received = 0;
  std::uint64_t delivered = 0;
  std::uint64_t dropped_queue = 0;
  std::uint64_t dropped_foreign = 0;  // not IPv4, or not to another testbed host
  std::uint64_t dropped_pool = 0;
  std::uint64_t write_errors = 0;
  // Deliveries by how late they ran after their virtual time (negative: early, by at most the
  // early margin): the fabric's own timing error, per packet.
  std::array<std::uint64_t, kLatenessBins> delivery_lateness{};
  double max_late_s = 0;
};

class Fabric {
 public:
  Fabric(const Spec& spec, const FabricOptions& options) : spec_(spec), options_(options) {
    links_.resize(spec.links.size());
    for (std::size_t i = 0; i < spec.hosts.size(); ++i) {
      in_addr address{};
      inet_pton(AF_INET, spec.hosts[i].address.c_str(), &address);
      host_by_address_[address.s_addr] = static_cast<int>(i);
    }
    const int n = static_cast<int>(spec.hosts.size());
    route_index_.assign(static_cast<std::size_t>(n * n), -1);
    for (std::size_t r = 0; r < spec.routes.size(); ++r)
      route_index_[static_cast<std::size_t>(spec.routes[r].src * n + spec.routes[r].dst)] =
          static_cast<int>(r);
    // Lookahead of a link: the least latency any route accumulates before reaching it (0 for a
    // link some route starts with). A packet read from a TUN now cannot reach the link before
    // now + lookahead, so an arrival at virtual time t may be queued at wall time t - lookahead
    // without overtaking any packet that should reach the link first (conservative lookahead,
    // as in parallel discrete-event simulation): one timer wake-up per packet (its delivery)
    // instead of one per link.
    for (LinkState& link : links_)
      link.lookahead = std::numeric_limits<double>::infinity();
    for (const SpecRoute& route : spec.routes) {
      double before = 0;
      for (int l : route.links) {
        LinkState& link = links_[static_cast<std::size_t>(l)];
        link.lookahead = std::min(link.lookahead, before);
        before += spec.links[static_cast<std::size_t>(l)].latency_s;
      }
    }
  }

  ~Fabric() {
    for (int fd : tun_fds_)
      if (fd >= 0) close(fd);
    for (int fd : {epoll_fd_, timer_fd_, signal_fd_})
      if (fd >= 0) close(fd);
  }

  void attach() {
    for (const SpecHost& host : spec_.hosts)
      tun_fds_.push_back(open_tun(host.netns, spec_.emulated_interface()));
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    sigprocmask(SIG_BLOCK, &signals, nullptr);
    signal_fd_ = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
    if (epoll_fd_ < 0 || timer_fd_ < 0 || signal_fd_ < 0)
      throw std::runtime_error("cannot create the fabric's epoll, timer or signal descriptors");
    for (std::size_t i = 0; i < tun_fds_.size(); ++i)
      watch(tun_fds_[i], static_cast<std::uint32_t>(i));
    watch(timer_fd_, kTimerTag);
    watch(signal_fd_, kSignalTag);
  }

  /// The event loop; returns the exit status (see run_fabric).
  int loop(const std::function<void()>& on_expiry) {
    const double started = monotonic_s();
    double next_housekeeping = started + 1.0;
    std::vector<std::uint8_t> buffer(65536);
    epoll_event ready[64];
    for (;;) {
      run_due_events(monotonic_s());
      arm_timer();
      const int count = epoll_wait(epoll_fd_, ready, 64, 1000);
      if (count < 0 && errno != EINTR) return fail("epoll_wait failed");
      for (int e = 0; e < count; ++e) {
        const std::uint32_t tag = ready[e].data.u32;
        if (tag == kSignalTag) return 0;
        if (tag == kTimerTag) {
          std::uint64_t expirations = 0;
          if (read(timer_fd_, &expirations, sizeof expirations) < 0) {
          }
          continue;
        }
        if (ready[e].events & (EPOLLERR | EPOLLHUP))
          return fail("TUN of " + spec_.hosts[tag].netns + " went away");
        if (!read_packets(static_cast<int>(tag), buffer))
          return fail("TUN of " + spec_.hosts[tag].netns + " went away");
        run_due_events(monotonic_s());
      }
      const double now = monotonic_s();
      if (now >= next_housekeeping) {
        next_housekeeping = now + 1.0;
        write_stats(now - started);
        for (const SpecHost& host : spec_.hosts) {
          struct stat st {};
          if (stat(("/run/netns/" + host.netns).c_str(), &st) != 0)
            return fail("namespace " + host.netns + " was removed");
        }
        if (now - started > options_.ttl_s) {
          std::fprintf(stderr, "fabric: time to live (%g s) over; removing the testbed\n",
                       options_.ttl_s);
          write_stats(now - started);
          on_expiry();
          return 0;
        }
      }
    }
  }

  nlohmann::json lateness_json() const {
    nlohmann::json bins = nlohmann::json::array();  // in order of lateness: [name, count]
    for (std::size_t b = 0; b < kLatenessBins; ++b)
      bins.push_back({kLatenessNames[b], counters_.delivery_lateness[b]});
    return bins;
  }

  void write_stats(double uptime_s) const {
    if (options_.stats_path.empty()) return;
    nlohmann::json links = nlohmann::json::array();
    for (std::size_t l = 0; l < links_.size(); ++l)
      links.push_back({{"name", spec_.links[l].name},
                       {"packets", links_[l].packets},
                       {"bytes", links_[l].bytes},
                       {"dropped", links_[l].dropped}});
    timespec cpu{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    const nlohmann::json stats = {
        {"pid", getpid()},
        {"uptime_s", uptime_s},
        {"cpu_s", static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9},
        {"received", counters_.received},
        {"delivered", counters_.delivered},
        {"dropped_queue", counters_.dropped_queue},
        {"dropped_foreign", counters_.dropped_foreign},
        {"dropped_pool", counters_.dropped_pool},
        {"write_errors", counters_.write_errors},
        {"delivery_lateness", lateness_json()},
        {"max_late_s", counters_.max_late_s},
        {"links", links}};
    const std::string temp = options_.stats_path + ".tmp";
    {
      std::ofstream out(temp);
      out << stats.dump() << "\n";
      if (!out) return;
    }
    std::rename(temp.c_str(), options_.stats_path.c_str());
  }

 private:
  static constexpr std::uint32_t kTimerTag = 0xfffffff0u;
  static constexpr std::uint32_t kSignalTag = 0xfffffff1u;

  void watch(int fd, std::uint32_t tag) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u32 = tag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0)
      throw std::runtime_error("epoll_ctl failed");
  }

  int fail(const std::string& why) const {
    std::fprintf(stderr, "fabric: %s; stopping\n", why.c_str());
    return 1;
  }

  int new_packet() {
    if (!free_packets_.empty()) {
      const int index = free_packets_.back();
      free_packets_.pop_back();
      return index;
    }
    if (static_cast<int>(packets_.size()) >= options_.max_packets) return -1;
    packets_.emplace_back();
    packets_.back().bytes.resize(static_cast<std::size_t>(spec_.mtu));
    return static_cast<int>(packets_.size()) - 1;
  }

  void release(int packet) { free_packets_.push_back(packet); }

  /// Reads what host `src` sent (at most 256 packets a turn, so no TUN starves the others).
  bool read_packets(int src, std::vector<std::uint8_t>& buffer) {
    for (int turn = 0; turn < 256; ++turn) {
      const ssize_t n = read(tun_fds_[static_cast<std::size_t>(src)], buffer.data(), buffer.size());
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (n == 0) return false;
      ++counters_.received;
      ingest(src, buffer.data(), static_cast<std::size_t>(n), monotonic_s());
    }
    return true;
  }

  void ingest(int src, const std::uint8_t* data, std::size_t length, double now) {
    // IPv4 only, to another testbed host; anything else never leaves the fabric.
    if (length < 20 || (data[0] >> 4) != 4 || length > static_cast<std::size_t>(spec_.mtu)) {
      ++counters_.dropped_foreign;
      return;
    }
    std::uint32_t destination = 0;
    std::memcpy(&destination, data + 16, 4);
    auto host = host_by_address_.find(destination);
    if (host == host_by_address_.end() || host->second == src) {
      ++counters_.dropped_foreign;
      return;
    }
    const int dst = host->second;
    const int n = static_cast<int>(spec_.hosts.size());
    const int route = route_index_[static_cast<std::size_t>(src * n + dst)];
    const int index = new_packet();
    if (index < 0) {
      ++counters_.dropped_pool;
      return;
    }
    // Everything due before this packet was read goes first (FIFO order at its first link).
    run_due_events(now);
    Packet& packet = packets_[static_cast<std::size_t>(index)];
    std::memcpy(packet.bytes.data(), data, length);
    packet.length = length;
    packet.src = src;
    packet.dst = dst;
    packet.route = route;
    arrive(index, 0, now);
  }

  /// Packet `index` reaches hop `hop` of its route at virtual time `time`.
  void arrive(int index, int hop, double time) {
    Packet& packet = packets_[static_cast<std::size_t>(index)];
    const SpecRoute& route = spec_.routes[static_cast<std::size_t>(packet.route)];
    if (hop == static_cast<int>(route.links.size())) {
      deliver(index);
      return;
    }
    const int l = route.links[static_cast<std::size_t>(hop)];
    const SpecLink& link = spec_.links[static_cast<std::size_t>(l)];
    LinkState& state = links_[static_cast<std::size_t>(l)];
    double& busy =
        link.sharing == Sharing::FatPipe
            ? state.busy_per_flow[static_cast<long long>(packet.src) * 65536 + packet.dst]
            : state.busy_until;
    const double start = std::max(time, busy);
    const double size = static_cast<double>(packet.length);
    if ((start - time) * link.wire_rate_Bps + size > link.queue_bytes) {
      ++state.dropped;
      ++counters_.dropped_queue;
      release(index);
      return;
    }
    const double leaves = start + size / link.wire_rate_Bps;
    busy = leaves;
    ++state.packets;
    state.bytes += packet.length;
    const double next = leaves + link.latency_s;
    const bool last = hop + 1 == static_cast<int>(route.links.size());
    const double due =
        last ? next - options_.early_s
             : next -
                   links_[static_cast<std::size_t>(route.links[static_cast<std::size_t>(hop + 1)])]
                       .lookahead;
    heap_.push(Event{due, next, next_sequence_++, index, hop + 1});
  }

  void deliver(int index) {
    const Packet& packet = packets_[static_cast<std::size_t>(index)];
    const ssize_t n =
        write(tun_fds_[static_cast<std::size_t>(packet.dst)], packet.bytes.data(), packet.length);
    if (n < 0)
      ++counters_.write_errors;
    else
      ++counters_.delivered;
    release(index);
  }

  void run_due_events(double now) {
    // Bounded per call: every event held, and those they schedule for now (one per link of a
    // route at most).
    std::size_t budget =
        (heap_.size() + 1) * static_cast<std::size_t>(spec_.limits.max_route_links + 1);
    while (!heap_.empty() && budget-- > 0 && heap_.top().due <= now) {
      const Event event = heap_.top();
      heap_.pop();
      if (event.hop ==
          static_cast<int>(spec_
                               .routes[static_cast<std::size_t>(
                                   packets_[static_cast<std::size_t>(event.packet)].route)]
                               .links.size())) {
        const double late = now - event.time;
        std::size_t bin = 0;
        while (bin + 1 < kLatenessBins && late > kLatenessBounds[bin])
          ++bin;
        ++counters_.delivery_lateness[bin];
        counters_.max_late_s = std::max(counters_.max_late_s, late);
      }
      arrive(event.packet, event.hop, event.time);
    }
  }

  void arm_timer() {
    if (heap_.empty()) return;
    const double when = heap_.top().due;
    if (when == armed_for_) return;
    armed_for_ = when;
    itimerspec spec{};
    const double whole = std::floor(when);
    spec.it_value.tv_sec = static_cast<time_t>(whole);
    spec.it_value.tv_nsec = static_cast<long>((when - whole) * 1e9);
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
  }

  const Spec& spec_;
  FabricOptions options_;
  std::vector<int> tun_fds_;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  int signal_fd_ = -1;
  std::unordered_map<std::uint32_t, int> host_by_address_;
  std::vector<int> route_index_;
  std::vector<LinkState> links_;
  std::vector<Packet> packets_;
  std::vector<int> free_packets_;
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_sequence_ = 0;
  double armed_for_ = -1;
  Counters counters_;
};

void report_ready(int fd, const std::string& message) {
  if (fd < 0) return;
  const std::string line = message + "\n";
  if (write(fd, line.data(), line.size()) < 0) {
  }
  close(fd);
}

}  // namespace

int run_fabric(const Spec& spec, const FabricOptions& options, int ready_fd,
               const std::function<void()>& on_expiry) {
  Fabric fabric(spec, options);
  try {
    fabric.attach();
  } catch (const std::exception& e) {
    report_ready(ready_fd, std::string("error: ") + e.what());
    return 1;
  }
  if (options.realtime_priority > 0) {
    sched_param priority{};
    priority.sched_priority = options.realtime_priority;
    if (sched_setscheduler(0, SCHED_FIFO, &priority) != 0)
      std::fprintf(stderr, "fabric: SCHED_FIFO refused (%s); running at normal priority\n",
                   strerror(errno));
  }
  report_ready(ready_fd, "ready");
  const int status = fabric.loop(on_expiry);
  fabric.write_stats(-1);
  return status;
}

}  // namespace tauplan::testbed
