// bucket_stream_test.cpp: the overlap stream's hand-offs (exec/bucket_stream.hpp): order,
// readiness, overlap with a compute thread that waits for it, errors, and shutdown.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "exec/bucket_stream.hpp"

using tauplan::exec::BucketStream;

namespace {

// Polls `flag` for up to 10 s; false when it never became true.
bool eventually(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("buckets run in order, each once the gradient is final from its first index",
          "[exec][overlap]") {
  BucketStream stream;
  std::atomic<std::size_t> marked{1000};  // what the compute side has released so far
  std::vector<std::size_t> seen_at_entry;
  std::vector<int> order;
  std::vector<BucketStream::Bucket> buckets;
  const std::vector<std::size_t> firsts{600, 300, 0};
  for (int j = 0; j < 3; ++j)
    buckets.push_back({firsts[static_cast<std::size_t>(j)], [&, j] {
                         order.push_back(j);
                         seen_at_entry.push_back(marked.load());
                         return 2LL * j;
                       }});
  stream.start_round(buckets);
  for (std::size_t first : {800u, 600u, 450u, 300u, 100u}) {
    marked = first;
    stream.mark_ready(first);
  }
  marked = 0;
  stream.step_done();
  stream.wait_all();
  REQUIRE(order == std::vector<int>{0, 1, 2});
  for (std::size_t j = 0; j < 3; ++j)
    CHECK(seen_at_entry[j] <= firsts[j]);  // never before its slice was final
  for (std::size_t j = 0; j < 3; ++j) {
    const BucketStream::Done done = stream.wait(j);
    CHECK(done.messages == 2 * static_cast<long long>(j));
    CHECK(done.leave >= done.enter);
  }
  // The next round starts afresh: nothing is final until marked again.
  std::atomic<bool> ran{false};
  stream.start_round({{0, [&] {
                         ran = true;
                         return 0LL;
                       }}});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(ran.load());
  stream.step_done();
  stream.wait_all();
  CHECK(ran.load());
}

TEST_CASE("a bucket's collective runs while the compute thread is still computing",
          "[exec][overlap]") {
  // The compute side releases bucket 0 and then will not end its pass until bucket 0 has
  // entered: a stream that ran buckets only after the pass would never enter (10 s deadline).
  BucketStream stream;
  std::atomic<bool> entered{false};
  stream.start_round({{50,
                       [&] {
                         entered = true;
                         return 0LL;
                       }},
                      {0, [] { return 0LL; }}});
  stream.mark_ready(50);
  const bool overlapped = eventually(entered);
  stream.step_done();
  stream.wait_all();
  REQUIRE(overlapped);
  CHECK(stream.wait(0).during_backward);
  CHECK_FALSE(stream.wait(1).during_backward);
}

TEST_CASE("a bucket's error reaches its wait and every later one, and the stream runs on",
          "[exec][overlap]") {
  BucketStream stream;
  int later_runs = 0;
  stream.start_round({{0, [] { return 1LL; }},
                      {0, []() -> long long { throw std::runtime_error("peer lost"); }},
                      {0, [&] {
                         ++later_runs;
                         return 0LL;
                       }}});
  stream.step_done();
  CHECK_THROWS_WITH(stream.wait(1), "peer lost");
  CHECK_THROWS_WITH(stream.wait(2), "peer lost");
  CHECK_THROWS_WITH(stream.wait_all(), "peer lost");
  CHECK(later_runs == 0);
  stream.start_round({{0, [] { return 7LL; }}});
  stream.step_done();
  CHECK(stream.wait(0).messages == 7);
}

TEST_CASE("a stream destroyed with buckets never released ends, and misuse is a logic error",
          "[exec][overlap]") {
  {
    BucketStream stream;
    stream.start_round({{0, [] { return 0LL; }}});
    CHECK_THROWS_AS(stream.start_round({}), std::logic_error);  // the last one not waited for
    CHECK_THROWS_AS(stream.wait(5), std::logic_error);
  }  // joins: the pending bucket is dropped, not waited for
  SUCCEED("destroyed");
}
