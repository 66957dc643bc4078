// probe.cpp: TCP measurement threads inside namespaces; see probe.hpp.
#include "exec/testbed/probe.hpp"

#include <arpa/inet.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_delivered (glibc's lacks it)
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "exec/testbed/system.hpp"

namespace tauplan::testbed {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

namespace {

/// A socket closed when the object goes.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("testbed probe: " + what);
}

void wait_for(int fd, short events, double deadline, const char* what) {
  for (;;) {
    const double left = deadline - now_s();
    if (left <= 0) fail(std::string("timed out (") + what + ")");
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (r < 0 && errno != EINTR) fail(std::string("poll failed (") + what + ")");
    if (r > 0) return;
  }
}

/// Measurement threads run SCHED_FIFO (below the fabric's priority) when allowed, so that a busy
/// machine delays neither end of a measurement (a late reader would count bytes that arrived
/// earlier as arriving later).
void realtime_thread() {
  sched_param priority{};
  priority.sched_priority = 5;
  pthread_setschedparam(pthread_self(), SCHED_FIFO, &priority);
}

/// Bytes of a connection the peer has acknowledged, selectively acknowledged ones included:
/// segments delivered (tcpi_delivered, Linux >= 4.18) x the sending MSS. Unlike bytes read in
/// order at the receiver, a loss does not hold back the bytes behind it until its retransmission
/// arrives, so a rate over a window does not take in the burst that follows a loss before it.
double delivered_bytes(int fd) {
  tcp_info info{};
  socklen_t length = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) fail("TCP_INFO failed");
  return static_cast<double>(info.tcpi_delivered) * static_cast<double>(info.tcpi_snd_mss);
}

void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

sockaddr_in address_of(const std::string& address, int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) fail("bad address " + address);
  return sa;
}

/// Listens on `address` port 0 in the calling thread's namespace; returns the socket and port.
Socket listen_on(const std::string& address, int& port) {
  Socket s(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.fd() < 0) fail("socket failed");
  sockaddr_in sa = address_of(address, 0);
  if (bind(s.fd(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    fail("cannot bind " + address + ": " + std::strerror(errno));
  if (listen(s.fd(), 16) != 0) fail("listen failed");
  socklen_t length = sizeof sa;
  getsockname(s.fd(), reinterpret_cast<sockaddr*>(&sa), &length);
  port = ntohs(sa.sin_port);
  return s;
}

Socket accept_one(const Socket& listener, double deadline) {
  wait_for(listener.fd(), POLLIN, deadline, "accept");
  Socket s(accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (s.fd() < 0) fail("accept failed");
  set_nodelay(s.fd());
  return s;
}

Socket connect_to(const std::string& address, int port, double deadline) {
  Socket s(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.fd() < 0) fail("socket failed");
  set_nodelay(s.fd());
  sockaddr_in sa = address_of(address, port);
  if (connect(s.fd(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 && errno != EINPROGRESS)
    fail("cannot connect to " + address + ": " + std::strerror(errno));
  wait_for(s.fd(), POLLOUT, deadline, "connect");
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) fail("cannot connect to " + address + ": " + std::strerror(error));
  return s;
}

void send_all(int fd, const char* data, std::size_t size, double deadline) {
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      fail(std::string("send failed: ") + std::strerror(errno));
    wait_for(fd, POLLOUT, deadline, "send");
  }
}

/// Receives exactly `size` bytes (into a scratch buffer, sizes may exceed it).
void receive_exactly(int fd, std::vector<char>& scratch, std::size_t size, double deadline) {
  std::size_t got = 0;
  while (got < size) {
    const std::size_t want = std::min(scratch.size(), size - got);
    const ssize_t n = recv(fd, scratch.data(), want, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) fail("peer closed the connection");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      fail(std::string("recv failed: ") + std::strerror(errno));
    wait_for(fd, POLLIN, deadline, "receive");
  }
}

/// Runs `server(listener)` in a thread inside to.netns and `client(port)` in a thread inside
/// from.netns; rethrows the first failure.
template <typename Server, typename Client>
void run_pair(const Endpoint& from, const Endpoint& to, Server server, Client client) {
  std::promise<int> port_promise;
  std::future<int> port_future = port_promise.get_future();
  std::exception_ptr server_error;
  std::exception_ptr client_error;
  std::thread server_thread([&] {
    try {
      realtime_thread();
      NamespaceGuard in(to.netns);
      int port = 0;
      Socket listener = listen_on(to.address, port);
      port_promise.set_value(port);
      server(listener);
    } catch (...) {
      server_error = std::current_exception();
      try {
        port_promise.set_value(-1);
      } catch (...) {
      }
    }
  });
  try {
    const int port = port_future.get();
    if (port > 0) {
      std::thread client_thread([&] {
        try {
          realtime_thread();
          NamespaceGuard in(from.netns);
          client(port);
        } catch (...) {
          client_error = std::current_exception();
        }
      });
      client_thread.join();
    }
  } catch (...) {
    client_error = std::current_exception();
  }
  server_thread.join();
  if (server_error) std::rethrow_exception(server_error);
  if (client_error) std::rethrow_exception(client_error);
}

}  // namespace

std::vector<double> ping_pong(const Endpoint& from, const Endpoint& to, int count,
                              int message_bytes, double timeout_s) {
  if (count < 1 || message_bytes < 1) fail("ping_pong needs count and size >= 1");
  const double deadline = now_s() + timeout_s;
  const int total = count + 3;
  std::vector<double> round_trips;
  run_pair(
      from, to,
      [&](const Socket& listener) {
        Socket s = accept_one(listener, deadline);
        std::vector<char> buffer(static_cast<std::size_t>(message_bytes));
        for (int i = 0; i < total; ++i) {
          receive_exactly(s.fd(), buffer, buffer.size(), deadline);
          send_all(s.fd(), buffer.data(), buffer.size(), deadline);
        }
      },
      [&](int port) {
        Socket s = connect_to(to.address, port, deadline);
        std::vector<char> buffer(static_cast<std::size_t>(message_bytes), 'p');
        for (int i = 0; i < total; ++i) {
          const double start = now_s();
          send_all(s.fd(), buffer.data(), buffer.size(), deadline);
          receive_exactly(s.fd(), buffer, buffer.size(), deadline);
          if (i >= 3) round_trips.push_back(now_s() - start);
        }
      });
  return round_trips;
}

std::vector<TransferSample> transfer_times(const Endpoint& from, const Endpoint& to,
                                           const std::vector<double>& sizes, int repeats,
                                           double timeout_s) {
  if (sizes.empty() || repeats < 1) fail("transfer_times needs sizes and repeats >= 1");
  const double deadline = now_s() + timeout_s;
  std::vector<std::size_t> order;  // sizes to send, in order: warm-up first
  const double largest = *std::max_element(sizes.begin(), sizes.end());
  order.push_back(static_cast<std::size_t>(largest));
  for (int r = 0; r < repeats; ++r)
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      // Rotate the order each repeat so that no size always follows the same one.
      const std::size_t k = (i + static_cast<std::size_t>(r)) % sizes.size();
      order.push_back(static_cast<std::size_t>(sizes[k]));
    }
  std::vector<TransferSample> samples;
  run_pair(
      from, to,
      [&](const Socket& listener) {
        Socket s = accept_one(listener, deadline);
        std::vector<char> scratch(1 << 20);
        for (std::size_t size : order) {
          receive_exactly(s.fd(), scratch, size, deadline);
          send_all(s.fd(), "k", 1, deadline);
        }
      },
      [&](int port) {
        Socket s = connect_to(to.address, port, deadline);
        std::vector<char> data(1 << 20, 'x');
        std::vector<char> reply(1);
        for (std::size_t i = 0; i < order.size(); ++i) {
          const double start = now_s();
          std::size_t left = order[i];
          while (left > 0) {
            const std::size_t chunk = std::min(left, data.size());
            send_all(s.fd(), data.data(), chunk, deadline);
            left -= chunk;
          }
          receive_exactly(s.fd(), reply, 1, deadline);
          if (i > 0) samples.push_back({static_cast<double>(order[i]), now_s() - start});
        }
      });
  return samples;
}

namespace {

/// A sender's samples: (time, bytes the receiver has acknowledged, SACKed ones included).
using Timeline = std::vector<std::pair<double, double>>;

/// What the threads of one streams() call share.
struct StreamRun {
  StreamRun(const std::vector<std::pair<Endpoint, Endpoint>>& flows_, double duration_s_,
            double deadline_)
      : flows(flows_),
        duration_s(duration_s_),
        deadline(deadline_),
        ports(flows_.size(), 0),
        timelines(flows_.size()),
        errors(2 * flows_.size()) {}
  const std::vector<std::pair<Endpoint, Endpoint>>& flows;
  const double duration_s;
  const double deadline;
  std::atomic<int> listening{0};
  std::atomic<int> connected{0};
  std::atomic<double> start_time{0.0};
  std::vector<int> ports;
  // Sender samples, one per 2 ms or so.
  std::vector<Timeline> timelines;
  std::vector<std::exception_ptr> errors;  // receivers', then senders'
};

/// Polls `condition` every 200 us until it holds; fails past the deadline.
void wait_until(double deadline, const std::function<bool()>& condition, const char* what) {
  while (!condition()) {
    if (now_s() > deadline) fail(std::string("timed out waiting for ") + what);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

/// Flow f's receiver: listens in its namespace, then reads and drops until the sender stops.
void receive_stream(StreamRun& run, std::size_t f) {
  try {
    realtime_thread();
    NamespaceGuard in(run.flows[f].second.netns);
    int port = 0;
    Socket listener = listen_on(run.flows[f].second.address, port);
    run.ports[f] = port;
    ++run.listening;
    Socket s = accept_one(listener, run.deadline);
    std::vector<char> buffer(1 << 20);
    for (;;) {
      const ssize_t got = recv(s.fd(), buffer.data(), buffer.size(), 0);
      if (got > 0) continue;
      if (got == 0) break;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) fail("recv failed");
      wait_for(s.fd(), POLLIN, run.deadline, "stream receive");
    }
  } catch (...) {
    run.errors[f] = std::current_exception();
    ++run.listening;
  }
}

/// Flow f's sender: connects, waits for the common start, sends for duration_s and samples
/// the delivered bytes every 2 ms.
void send_stream(StreamRun& run, std::size_t f) {
  try {
    if (run.ports[f] <= 0) {
      ++run.connected;
      return;
    }
    realtime_thread();
    NamespaceGuard in(run.flows[f].first.netns);
    Socket s = connect_to(run.flows[f].second.address, run.ports[f], run.deadline);
    ++run.connected;
    wait_until(
        run.deadline, [&] { return run.start_time.load() > 0; }, "the start");
    const double stop = run.start_time.load() + run.duration_s;
    std::vector<char> data(1 << 18, 's');
    Timeline& line = run.timelines[f];
    double last_sample = 0;
    for (double t = now_s(); t < stop; t = now_s()) {
      if (t - last_sample >= 2e-3) {
        line.emplace_back(t, delivered_bytes(s.fd()));
        last_sample = t;
      }
      const ssize_t sent = send(s.fd(), data.data(), data.size(), MSG_NOSIGNAL);
      if (sent > 0) continue;
      if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        fail(std::string("send failed: ") + std::strerror(errno));
      pollfd p{s.fd(), POLLOUT, 0};
      poll(&p, 1, 2);
    }
    line.emplace_back(now_s(), delivered_bytes(s.fd()));
    shutdown(s.fd(), SHUT_WR);
  } catch (...) {
    run.errors[run.flows.size() + f] = std::current_exception();
    ++run.connected;
  }
}

/// Delivered bytes at time t, interpolated between a timeline's samples.
double bytes_at(const Timeline& line, double t) {
  if (line.empty() || t <= line.front().first) return 0.0;
  for (std::size_t i = 1; i < line.size(); ++i)
    if (line[i].first >= t) {
      const auto& [t0, b0] = line[i - 1];
      const auto& [t1, b1] = line[i];
      return b0 + (b1 - b0) * (t - t0) / (t1 - t0);
    }
  return line.back().second;
}

}  // namespace

std::vector<StreamRate> streams(const std::vector<std::pair<Endpoint, Endpoint>>& flows,
                                double duration_s, double warmup_s) {
  const std::size_t n = flows.size();
  if (n == 0) return {};
  if (!(duration_s > warmup_s + 0.2)) fail("streams need a duration > warm-up + 0.2 s");
  if (!(warmup_s >= 0)) fail("streams need a warm-up >= 0");
  const double timeout_s = duration_s + 15.0;
  StreamRun run(flows, duration_s, now_s() + timeout_s);
  std::vector<std::thread> threads;

  for (std::size_t f = 0; f < n; ++f)
    threads.emplace_back([&run, f] { receive_stream(run, f); });
  try {
    wait_until(
        run.deadline, [&] { return run.listening.load() == static_cast<int>(n); }, "listeners");
  } catch (...) {
    for (auto& t : threads)
      t.join();
    throw;
  }
  for (std::size_t f = 0; f < n; ++f)
    threads.emplace_back([&run, f] { send_stream(run, f); });
  try {
    wait_until(
        run.deadline, [&] { return run.connected.load() == static_cast<int>(n); }, "connections");
  } catch (...) {
    run.start_time.store(now_s());
    for (auto& t : threads)
      t.join();
    throw;
  }
  const double start = now_s();
  run.start_time.store(start);
  for (auto& t : threads)
    t.join();
  for (const auto& error : run.errors)
    if (error) std::rethrow_exception(error);

  const double window_start = start + warmup_s;
  const double window_end = start + duration_s - 0.1;
  std::vector<StreamRate> rates;
  for (std::size_t f = 0; f < n; ++f) {
    StreamRate rate;
    rate.seconds = window_end - window_start;
    rate.bytes = bytes_at(run.timelines[f], window_end) - bytes_at(run.timelines[f], window_start);
    rate.rate_Bps = rate.bytes / rate.seconds;
    rates.push_back(rate);
  }
  return rates;
}

std::vector<double> NamespaceProbes::round_trips(int a, int b, int count) {
  constexpr int kEchoBytes = 8;  // a small message: the round trip, not a transfer
  // 10 s to connect and warm up, plus 1 s an echo (a testbed route is at most 2 s one way, but a
  // round trip beyond 1 s is a broken fabric, not a measurement).
  const double timeout_s = 10.0 + 1.0 * count;
  return ping_pong(endpoints_.at(static_cast<std::size_t>(a)),
                   endpoints_.at(static_cast<std::size_t>(b)), count, kEchoBytes, timeout_s);
}

std::vector<double> NamespaceProbes::concurrent_rates(const std::vector<std::pair<int, int>>& flows,
                                                      double duration_s, double warmup_s) {
  std::vector<std::pair<Endpoint, Endpoint>> pairs;
  for (const auto& [src, dst] : flows)
    pairs.push_back({endpoints_.at(static_cast<std::size_t>(src)),
                     endpoints_.at(static_cast<std::size_t>(dst))});
  std::vector<double> rates;
  for (const StreamRate& r : streams(pairs, duration_s, warmup_s))
    rates.push_back(r.rate_Bps);
  return rates;
}

std::string NamespaceProbes::method() const {
  return "TCP sockets between threads inside the testbed's host namespaces, wall clock "
         "(CLOCK_MONOTONIC): round trips of 8-byte echoes (TCP_NODELAY); rates of bulk flows "
         "from the bytes each receiver acknowledged (TCP_INFO) over a common window";
}

}  // namespace tauplan::testbed
