// server_work_simulated_test.cpp: a parameter server's own processing (model/ir/server_work.hpp)
// in SimGrid against the analytic engine and the closed form: the synchronous ps call's server
// stage runs on the server host between push and pull; the asynchronous server's apply carries
// its processing and saturates at 1 / (apply + processing).
//
// Platform: platforms/test-ps.xml (workers h0..h3, server ps0, all at 1e12 flop/s) with the
// server props written into ps0 (a copy in the temporary folder).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/analytic/analytic.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sim_job.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

namespace {

const std::string kServerWorkTestPs = std::string(TAUPLAN_PLATFORM_DIR) + "/test-ps.xml";

/// test-ps.xml with ps0's props server_flop_per_message and server_flop_per_byte (none when
/// both are empty), the root zone's props `zone_props` and every link's latency `link_latency`
/// (test-ps's 10 us when empty), written to the temporary folder.
std::string platform_with_server_work(const std::string& per_message, const std::string& per_byte,
                                      const std::string& zone_props = "",
                                      const std::string& link_latency = "") {
  std::string xml = test::file_text(kServerWorkTestPs);
  const std::string server = "<host id=\"ps0\" speed=\"1Tf\">";
  const size_t at = xml.find(server);
  REQUIRE(at != std::string::npos);
  std::string props;
  if (!per_message.empty())
    props += "<prop id=\"server_flop_per_message\" value=\"" + per_message + "\"/>";
  if (!per_byte.empty()) props += "<prop id=\"server_flop_per_byte\" value=\"" + per_byte + "\"/>";
  xml.insert(at + server.size(), props);
  xml = test::with_root_zone_props(xml, zone_props);
  props += zone_props + link_latency;
  if (!link_latency.empty())
    for (size_t l = xml.find("latency=\"10us\""); l != std::string::npos;
         l = xml.find("latency=\"10us\"", l + 1))
      xml.replace(l, 14, "latency=\"" + link_latency + "\"");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tauplan-server-work-" + std::to_string(::getpid()) + "-" +
                             std::to_string(std::hash<std::string>()(props)) + ".xml"))
                               .string();
  std::ofstream(path) << xml;
  return path;
}

struct ServerWorkRows {
  double analytic = 0;
  double simgrid = 0;
  nlohmann::json simgrid_row;
};

ServerWorkRows run_both_with_server_work(const std::string& platform_file,
                                         const std::string& strategy,
                                         const model::StrategyOptions& o, const model::Workload& w,
                                         double iterations,
                                         const sim::SimOptions& sim_options = {}) {
  const auto result = test::in_child([=] {
    return test::analyze_and_simulate(platform_file, strategy, o, w, iterations, sim_options);
  });
  INFO(result.text);
  REQUIRE(result.kind == "ok");
  const auto j = result.json();
  return {j[0]["round_s"].get<double>(), j[1]["round_s"].get<double>(), j[1]};
}

}  // namespace

TEST_CASE("server work in SimGrid: the sync ps round gains the server's processing") {
  // One bucket of N = 4e6 B; K = 4: 8 messages x 1e8 flop + 1.6e7 B x 1e3 flop = 1.68e10 flop,
  // 16.8 ms at ps0's 1e12 flop/s, between the push and the pull.
  model::StrategyOptions o = test::options(4, 100, 1, "ps");
  o.bucket_bytes = 1e12;
  const model::Workload w = test::round_workload();
  const std::string bare = platform_with_server_work("", "");
  const std::string busy = platform_with_server_work("1e8", "1e3");
  const ServerWorkRows without = run_both_with_server_work(bare, "sync", o, w, 10);
  const ServerWorkRows with = run_both_with_server_work(busy, "sync", o, w, 10);
  const double work_s = (8 * 1e8 + 4 * 4e6 * 1e3) / 1e12;
  CHECK(with.analytic - without.analytic == Approx(work_s).epsilon(1e-9));
  CHECK(with.simgrid - without.simgrid == Approx(work_s).epsilon(1e-6));
  CHECK(with.simgrid == Approx(with.analytic).epsilon(1e-3));
  std::filesystem::remove(bare);
  std::filesystem::remove(busy);
}

TEST_CASE("server work in SimGrid: an async server saturates at 1 / (apply + processing)") {
  // 1e5 parameters: per update 2e5 flop of SGD + 2 x 1e9 + 4e5 B x 1e5 = 4.22e10 flop, 42.2 ms;
  // the four workers alone would update every 25 ms.
  const model::Workload w = test::async_test_workload(1e5);
  const model::StrategyOptions o = test::async_test_options(4);
  const std::string busy = platform_with_server_work("1e9", "1e5");
  const ServerWorkRows rows = run_both_with_server_work(busy, "async-ps", o, w, 200);
  const double update_s = (2e5 + 2 * 1e9 + 4e5 * 1e5) / 1e12;
  CHECK(rows.analytic == Approx(update_s).epsilon(1e-12));
  CHECK(rows.simgrid == Approx(update_s).epsilon(1e-6));
  CHECK(rows.simgrid_row["servers_detail"][0]["apply_busy"].get<double>() > 0.95);
  std::filesystem::remove(busy);
}

TEST_CASE("server queues in SimGrid under a rendezvous: one thread receives, applies, sends") {
  // test-ps with 5 ms links (10 ms routes), 4e7 B pushes, C = 10 ms. Under MPI's rendezvous
  // (exec's server ranks) the server's one thread holds a push for its clear-to-send and all but
  // the first 64 KiB (which came with the request), applies it (2e7 flop), and holds a reply
  // until its clear-to-send is back: 4 x 10 ms + N / 1e9 + 2e-5 s per update (the analytic
  // engine's closed form, tests/model/analytic/async_ps_model_test.cpp); a plain protocol holds the
  // receive queue for 10 ms + N / 1e9 and the send queue apart.
  const model::Workload w = test::async_test_workload(1e7);
  model::StrategyOptions o = test::async_test_options(4);
  o.batch = 10;
  const std::string rendezvous =
      platform_with_server_work("", "",
                                "<prop id=\"message_protocol\" value=\"rendezvous\"/>"
                                "<prop id=\"eager_limit_bytes\" value=\"65536\"/>",
                                "5ms");
  const ServerWorkRows rows = run_both_with_server_work(rendezvous, "async-ps", o, w, 400);
  const double held_s = 4 * 10e-3 + 4e7 / 1e9 + 2e7 / 1e12;
  CHECK(rows.analytic == Approx(held_s).epsilon(1e-9));
  CHECK(rows.simgrid == Approx(held_s).epsilon(5e-3));
  CHECK(rows.simgrid_row["servers_detail"][0]["one_thread"] == true);
  CHECK(rows.simgrid_row["servers_detail"][0]["apply_busy"].get<double>() > 0.95);
  const std::string plain = platform_with_server_work("", "", "", "5ms");
  const ServerWorkRows whole = run_both_with_server_work(plain, "async-ps", o, w, 400);
  CHECK(whole.simgrid == Approx(10e-3 + 4e7 / 1e9).epsilon(5e-3));
  // A worker that fails mid-cycle (0.35 s: its update is in flight, queued for the one thread or
  // held by it, as every worker's is here) loses that update; the thread goes on serving the
  // others (no deadlock on its turn), and the job loses less than the restart.
  sim::SimOptions failing;
  failing.restart_s = 1;
  failing.failures.push_back(sim::parse_failure("h1@0.35s", {"<test>", "failures"}));
  const ServerWorkRows failed =
      run_both_with_server_work(rendezvous, "async-ps", o, w, 400, failing);
  CHECK(failed.simgrid_row["updates_dropped"] == 1);
  CHECK(failed.simgrid_row["simulated_rounds"] == rows.simgrid_row["simulated_rounds"]);
  const double lost =
      failed.simgrid_row["total_s"].get<double>() - rows.simgrid_row["total_s"].get<double>();
  CHECK(lost > 0);
  CHECK(lost < 1);
  std::filesystem::remove(rendezvous);
  std::filesystem::remove(plain);
}
