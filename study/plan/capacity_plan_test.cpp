// capacity_plan_test.cpp: `tauplan plan` in this process (study/plan/capacity_plan.hpp), on a tiny
// inventory of two node types and no simulator re-check: it keeps every feasible configuration
// of the planner's search; its best is the cheapest (min-cost), the fastest (min-time) or the
// cheapest that meets the deadline, and with none meeting it names the fastest as the nearest;
// its frontier is Pareto (no point dominated, every configuration weakly dominated by one of it);
// the best configuration's numbers equal the analytic engine's on the candidate job and platform
// the re-check would simulate; bad flags and inventories are one-line InputErrors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/study_test_support.hpp"
#include "study/plan/capacity_plan.hpp"
#include "study/plan/inventory.hpp"
#include "study/plan/planner.hpp"

namespace fs = std::filesystem;
using namespace tauplan;
using nlohmann::json;

namespace {  // a tiny inventory: 2 x 4 V100 and 2 x 1 K80, sync and local SGD

const char* kInventory =
    "workload: resnet-50\n"
    "target: {convergence: critical-batch, min_steps: 2000, critical_batch: 1024, drift: 0.1}\n"
    "objective: min-cost\n"
    "node_types:\n"
    "  - {name: v100, gpu_model: V100-SXM2-16GB, gpus_per_node: 4, nodes: 2, price_per_hour: 12,\n"
    "     network: {bandwidth: 25Gbps, latency: 10us, gpu_bandwidth: 15.75GBps, gpu_latency: "
    "6us}}\n"
    "  - {name: k80, gpu_model: K80, gpus_per_node: 1, nodes: 2, price_per_hour: 0.9,\n"
    "     network: {bandwidth: 16Gbps, latency: 18us}}\n"
    "search:\n"
    "  strategies: [sync, local-sgd]\n"
    "  collectives: [ring, tree]\n"
    "  batch_per_worker: [32, 64]\n"
    "  tau: [1, 4]\n"
    "  split: [even, speed]\n"
    "  max_gpus: 12\n";

study::PlanRequest request(const std::string& inventory, const std::string& out) {
  study::PlanRequest r;
  r.inventory = inventory;
  r.out = out;
  r.recheck = 0;
  r.no_plot = true;
  return r;
}

/// The smallest `field` over the evaluations that `keep` accepts (infinity when none).
template <typename Field, typename Keep>
double smallest(const study::PlanSearch& search, Field field, Keep keep) {
  double best = std::numeric_limits<double>::infinity();
  for (const study::Evaluation& e : search.evaluations)
    if (keep(e)) best = std::min(best, field(e));
  return best;
}

double cost_of(const study::Evaluation& e) {
  return e.cost;
}
double time_of(const study::Evaluation& e) {
  return e.time_s;
}
bool any(const study::Evaluation&) {
  return true;
}

}  // namespace

TEST_CASE("plan: the best is the cheapest, or the fastest, configuration of the whole search") {
  const test::Scratch scratch("plan-best");
  const std::string inventory = scratch.write("inv.yaml", kInventory);
  const study::PlanSearch search = study::search_plans(study::load_inventory(inventory));
  REQUIRE(search.evaluations.size() > 10);

  const study::PlanOutcome cheap = study::run_plan(request(inventory, scratch.path("cost")));
  CHECK(cheap.objective_met);
  const json& doc = cheap.document;
  CHECK(doc.at("search").at("feasible") == search.evaluations.size());
  CHECK(doc.at("best").at("cost").get<double>() == smallest(search, cost_of, any));
  CHECK(doc.at("answer") == cheap.answer);
  CHECK(cheap.answer.rfind("best for min-cost: ", 0) == 0);
  CHECK(doc.at("recheck").empty());
  // evaluated.csv: the header and every feasible configuration; plan.json is the document.
  const std::string evaluated = study::read_text(scratch.path("cost/evaluated.csv"));
  CHECK(static_cast<size_t>(std::count(evaluated.begin(), evaluated.end(), '\n')) ==
        1 + search.evaluations.size());
  CHECK(json::parse(study::read_text(scratch.path("cost/plan.json"))).at("best") == doc.at("best"));
  CHECK_FALSE(fs::exists(scratch.path("cost/frontier.gp")));  // --no-plot

  study::PlanRequest fastest = request(inventory, scratch.path("time"));
  fastest.objective = "min-time";
  const study::PlanOutcome quick = study::run_plan(fastest);
  CHECK(quick.document.at("best").at("time_s").get<double>() == smallest(search, time_of, any));
}

TEST_CASE("plan: the frontier is Pareto: none dominated, every configuration behind one of it") {
  const test::Scratch scratch("plan-frontier");
  const std::string inventory = scratch.write("inv.yaml", kInventory);
  const study::PlanSearch search = study::search_plans(study::load_inventory(inventory));
  const json frontier =
      study::run_plan(request(inventory, scratch.path("out"))).document.at("frontier");
  REQUIRE_FALSE(frontier.empty());
  for (size_t i = 1; i < frontier.size(); ++i) {
    // By increasing time, so by decreasing cost.
    CHECK(frontier[i].at("time_s").get<double>() > frontier[i - 1].at("time_s").get<double>());
    CHECK(frontier[i].at("cost").get<double>() < frontier[i - 1].at("cost").get<double>());
  }
  for (const study::Evaluation& e : search.evaluations) {
    const bool behind = std::any_of(frontier.begin(), frontier.end(), [&e](const json& f) {
      return f.at("time_s").get<double>() <= e.time_s && f.at("cost").get<double>() <= e.cost;
    });
    CHECK(behind);
  }
}

TEST_CASE(
    "plan: under a deadline, the cheapest that meets it, or else the fastest as the nearest") {
  const test::Scratch scratch("plan-deadline");
  const std::string inventory = scratch.write("inv.yaml", kInventory);
  const study::PlanSearch search = study::search_plans(study::load_inventory(inventory));
  const double fastest = smallest(search, time_of, any);
  const double cheapest = smallest(search, cost_of, any);
  // Halfway between the fastest time and that of the cheapest configurations: they all miss
  // it, the fastest meets it.
  const double cheapest_time = smallest(
      search, time_of, [cheapest](const study::Evaluation& e) { return e.cost == cheapest; });
  REQUIRE(cheapest_time > fastest);
  const double deadline = std::floor((fastest + cheapest_time) / 2);
  REQUIRE(deadline > fastest);

  study::PlanRequest r = request(inventory, scratch.path("met"));
  r.objective = "min-cost-under-deadline";
  r.deadline = fmt::format("{:.0f}s", deadline);
  const study::PlanOutcome met = study::run_plan(r);
  REQUIRE(met.objective_met);
  const json& best = met.document.at("best");
  CHECK(best.at("time_s").get<double>() <= deadline);
  CHECK(best.at("cost").get<double>() ==
        smallest(search, cost_of,
                 [deadline](const study::Evaluation& e) { return e.time_s <= deadline; }));
  CHECK(best.at("cost").get<double>() > cheapest);
  CHECK(best.at("deadline_miss_probability") == 0.0);
  CHECK(met.document.at("context").at("deadline_s") == deadline);

  r.out = scratch.path("missed");
  r.deadline = "1s";
  const study::PlanOutcome missed = study::run_plan(r);
  CHECK_FALSE(missed.objective_met);
  CHECK(missed.answer.rfind("no configuration meets the deadline of 1 s; the nearest is ", 0) == 0);
  CHECK(missed.document.at("best").is_null());
  CHECK(missed.document.at("nearest").at("time_s").get<double>() == fastest);
}

TEST_CASE("plan: the best configuration's numbers are the analytic engine's on its candidate") {
  const test::Scratch scratch("plan-candidate");
  const std::string inventory = scratch.write("inv.yaml", kInventory);
  const study::Inventory inv = study::load_inventory(inventory);
  const study::PlanSearch search = study::search_plans(inv);
  REQUIRE(search.best >= 0);
  const study::Evaluation& e = search.evaluations[static_cast<size_t>(search.best)];
  const json best = study::run_plan(request(inventory, scratch.path("out"))).document.at("best");
  CHECK(best.at("cost").get<double>() == e.cost);
  CHECK(best.at("round_s").get<double>() == e.round_s);
  CHECK(best.at("workers") == e.config.gpus);
  // The candidate the re-check would simulate, run through the analytic engine instead.
  study::Selection selection = e.config.selection;
  selection.servers = e.config.servers;
  scratch.write("candidate/platform.xml", study::selection_platform_xml(inv, selection));
  const std::string job =
      scratch.write("candidate/job.yaml", study::candidate_job_yaml(inv, e, "platform.xml"));
  const study::EngineOutput direct = study::run_engine("analytic", job, {});
  REQUIRE(direct.rows.size() == 1);
  const model::ResultRow& row = direct.rows[0];
  CHECK(row.strategy == e.config.strategy);
  CHECK(row.workers == e.config.gpus);
  CHECK(row.rounds == e.rounds);
  CHECK(row.round_s == Approx(e.round_s).epsilon(1e-9));
  CHECK(row.total_s == Approx(e.failure_free_s).epsilon(1e-9));
  // On-demand nodes only: the expected time is the failure-free time, the cost its price.
  CHECK(e.time_s == Approx(e.failure_free_s).epsilon(1e-12));
  CHECK(e.cost == Approx(e.price_per_hour * e.time_s / 3600).epsilon(1e-12));
}

TEST_CASE("plan: bad flags and inventories are one-line InputErrors") {
  const test::Scratch scratch("plan-bad");
  const std::string inventory = scratch.write("inv.yaml", kInventory);
  study::PlanRequest r = request(inventory, scratch.path("out"));
  auto error = [&r] { return test::input_error([&r] { study::run_plan(r); }); };
  r.objective = "fastest";
  CHECK(error() ==
        "command line: --objective: expected min-time, min-cost or "
        "min-cost-under-deadline, got 'fastest'");
  r.objective = "min-cost-under-deadline";
  CHECK(test::names_file_and_key(error(), inventory, "deadline"));
  r.deadline = "0s";
  CHECK(test::names_file_and_key(error(), "command line", "--deadline"));
  r = request(test::source_path("tests/fixtures/bad/i-unknown-key.yaml"), scratch.path("out"));
  CHECK(test::names_file_and_key(error(), r.inventory, "budget"));
  CHECK_FALSE(fs::exists(scratch.path("out")));
  r = request(inventory, scratch.write("blocker", "a file\n") + "/out");
  CHECK(test::names_file_and_key(error(), "command line", "--out"));
}
