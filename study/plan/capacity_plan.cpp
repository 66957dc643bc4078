// capacity_plan.cpp: the study behind `tauplan plan` (see capacity_plan.hpp).
#include "study/plan/capacity_plan.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/strategy.hpp"
#include "model/ir/token_target.hpp"
#include "study/common/child_process.hpp"
#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/gnuplot.hpp"
#include "study/common/revocation.hpp"
#include "study/plan/planner.hpp"

namespace tauplan::study {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string duration(double s) {
  if (s >= 86400 * 2) return fmt::format("{:.2f} d", s / 86400);
  if (s >= 3600) return fmt::format("{:.2f} h", s / 3600);
  if (s >= 60) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.3g} s", s);
}

std::string money(const study::Inventory& inv, double amount) {
  return fmt::format("{}{:.2f}", inv.currency, amount);
}

/// " (sd 12 min)" when revocations make the time random, else nothing.
std::string spread(const study::Evaluation& e) {
  return e.time_stddev_s > 0 ? " (sd " + duration(e.time_stddev_s) + ")" : "";
}

std::string with_commas(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A target in tokens: what a configuration comes to (steps, tokens/s, days, GPU-hours).
model::TokenSummary token_summary(const study::Inventory& inv, const study::Evaluation& e) {
  // Local SGD counts rounds of tau local steps; the others count steps.
  const model::Strategy* strategy = model::find_strategy(e.config.strategy);
  const long long steps =
      strategy && strategy->counts_rounds() ? e.rounds * e.config.tau : e.rounds;
  return model::summarise_tokens(inv.target.tokens, steps, e.time_s, e.config.gpus);
}

json to_json(const study::Inventory& inv, const study::Evaluation& e) {
  const study::PlanConfig& c = e.config;
  json nodes = json::object();
  for (size_t t = 0; t < c.selection.nodes.size(); ++t)
    if (c.selection.nodes[t] > 0) nodes[inv.node_types[t].name] = c.selection.nodes[t];
  json row = {{"nodes", nodes},
              {"nodes_text", study::describe_selection(inv, c.selection)},
              {"configuration", study::describe_strategy(c)},
              {"workers", c.gpus},
              {"strategy", c.strategy},
              {"collective", c.collective},
              {"servers", c.servers},
              {"split", model::to_string(c.split)},
              {"batch_per_worker", c.batch_per_worker},
              {"batch", c.job_batch()},
              {"tau", c.tau},
              {"round_s", e.round_s},
              {"compute_s", e.compute_s},
              {"comm_s", e.comm_s},
              {"rounds", e.rounds},
              {"failure_free_s", e.failure_free_s},
              {"time_s", e.time_s},
              {"time_stddev_s", e.time_stddev_s},
              {"cost", e.cost},
              {"price_per_hour", e.price_per_hour},
              {"revocations_per_hour", e.revocations_per_hour},
              {"restart_s", e.restart_s},
              {"expected_revocations", e.expected_revocations},
              {"parts_s",
               {{"compute", e.compute_part_s},
                {"straggler", e.straggler_part_s},
                {"communication", e.comm_part_s},
                {"revocations", e.revocation_part_s}}},
              {"memory_capped", e.memory_capped},
              {"memory_per_gpu_bytes", e.memory_per_gpu_bytes},
              {"model_flops", e.model_flops},
              {"peak_flops", e.peak_flops},
              {"mfu", e.mfu() >= 0 ? json(e.mfu()) : json(nullptr)},
              {"bottleneck", study::to_string(e.bottleneck)}};
  if (model::strategy(c.strategy).uses("tensor_parallel"))
    row["layout"] = {{"label", c.layout.label()},
                     {"data_parallel", c.layout.data},
                     {"tensor_parallel", c.layout.tensor},
                     {"pipeline_parallel", c.layout.pipeline},
                     {"micro_batches", c.layout.micro_batches},
                     {"zero_stage", c.layout.zero_stage},
                     {"recompute", model::to_string(c.layout.recompute)}};
  if (inv.target.tokens > 0) row["tokens"] = model::to_json(token_summary(inv, e));
  return row;
}

std::string csv_line(const study::Inventory& inv, const study::Evaluation& e, bool frontier) {
  const study::PlanConfig& c = e.config;
  const std::string layout =
      model::strategy(c.strategy).uses("tensor_parallel") ? c.layout.label() : "";
  return fmt::format(
      "{:.17g},{:.17g},{},{},{},{},{},{},{},{},{:.17g},{},{:.17g},{:.17g},{},{},{}\n", e.time_s,
      e.cost, study::describe_selection(inv, c.selection), c.gpus, c.strategy, c.collective,
      c.servers, model::to_string(c.split), c.batch_per_worker, c.tau, e.round_s, e.rounds,
      e.failure_free_s, e.revocations_per_hour, study::to_string(e.bottleneck), frontier ? 1 : 0,
      layout);
}

const char* kCsvHeader =
    "time_s,cost,nodes,workers,strategy,collective,servers,split,batch_per_worker,tau,round_s,"
    "rounds,failure_free_s,revocations_per_hour,bottleneck,frontier,layout\n";

std::string gnuplot_script(const study::Inventory& inv, const study::PlanSearch& search,
                           const std::string& title) {
  std::string s = fmt::format(
      "# frontier.gp: written by tauplan plan; run `gnuplot frontier.gp` in this folder.\n"
      "# evaluated.csv holds every feasible configuration, frontier.csv the Pareto frontier\n"
      "# (columns: {}",
      kCsvHeader);
  s += fmt::format(
      "set datafile separator ','\n"
      "set xlabel 'expected time to target (hours)'\n"
      "set ylabel 'expected cost ({})'\n"
      "set logscale xy\n"
      "set grid\n"
      "set key outside below center horizontal maxrows 3\n"
      "set title \"{}\" noenhanced\n",
      inv.currency, title);
  if (inv.objective == study::Objective::MinCostUnderDeadline)
    s += fmt::format(
        "set arrow from {0:.9g}, graph 0 to {0:.9g}, graph 1 nohead dashtype 2 lc rgb '#cc0000'\n"
        "set label 'deadline' at {0:.9g}, graph 0.95 right offset -0.5,0 tc rgb '#cc0000'\n",
        inv.deadline_s / 3600);
  s += "bottleneck_color(b) = b eq 'compute' ? 0x1f77b4 : b eq 'communication' ? 0xff7f0e : "
       "b eq 'straggler' ? 0x2ca02c : b eq 'memory' ? 0x9467bd : 0xd62728\n";
  s += fmt::format(
      "plot 'evaluated.csv' skip 1 using ($1/3600):2 with points pt 7 ps 0.25 lc rgb '#c8c8c8' "
      "title 'evaluated ({})', \\\n"
      "     'frontier.csv' skip 1 using ($1/3600):2 with lines lw 1.5 lc rgb '#404040' "
      "title 'Pareto frontier', \\\n"
      "     'frontier.csv' skip 1 using ($1/3600):2:(bottleneck_color(strcol(15))) with points "
      "pt 7 ps 1.2 lc rgb variable notitle",
      search.evaluations.size());
  if (search.best >= 0)
    s += ", \\\n     'best.csv' skip 1 using ($1/3600):2 with points pt 6 ps 3 lw 2 "
         "lc rgb '#000000' title 'best for the objective'";
  // Legend entries for the bottleneck colours of the frontier points.
  const std::pair<const char*, const char*> colours[] = {{"compute", "#1f77b4"},
                                                         {"communication", "#ff7f0e"},
                                                         {"straggler", "#2ca02c"},
                                                         {"memory", "#9467bd"},
                                                         {"revocations", "#d62728"}};
  for (const auto& [name, colour] : colours)
    s += fmt::format(", \\\n     NaN with points pt 7 ps 1.2 lc rgb '{}' title 'bottleneck: {}'",
                     colour, name);
  s += "\n";
  return "set terminal pngcairo size 1000,760 noenhanced\nset output 'frontier.png'\n" + s +
         "set terminal svg size 1000,760 noenhanced\nset output 'frontier.svg'\nreplot\n";
}

struct Recheck {
  size_t evaluation = 0;
  std::string folder;
  int status = -1;
  std::string error;
  double total_s = 0;
  double round_s = 0;
  long long simulated_rounds = 0;
  long long failures = 0;
  bool faults_simulated = false;
  double cost = 0;
};

std::vector<Recheck> recheck_candidates(const study::Inventory& inv,
                                        const study::PlanSearch& search, size_t top,
                                        const fs::path& out_dir, int jobs) {
  std::vector<Recheck> checks;
  std::vector<child::Task> tasks;
  for (size_t r = 0; r < std::min(top, search.ranking.size()); ++r) {
    const size_t index = search.ranking[r];
    const study::Evaluation& e = search.evaluations[index];
    const fs::path folder = out_dir / "candidates" / fmt::format("{:02}", r + 1);
    fs::create_directories(folder);
    study::Selection selection = e.config.selection;
    selection.servers = e.config.servers;
    write_text((folder / "platform.xml").string(), study::selection_platform_xml(inv, selection));
    write_text((folder / "job.yaml").string(), study::candidate_job_yaml(inv, e, "platform.xml"));
    Recheck check;
    check.evaluation = index;
    check.folder = folder.string();
    checks.push_back(check);
    tasks.push_back(engine_task(engine("simgrid"), (folder / "job.yaml").string(), {},
                                (folder / "simulate.json").string(),
                                (folder / "simulate.err").string()));
  }
  child::Progress progress("re-check simgrid", tasks.size(), 0, true);
  child::run_all(tasks, jobs, [&](size_t t, int status) {
    Recheck& check = checks[t];
    check.status = status;
    std::ifstream out(tasks[t].out_path), err(tasks[t].err_path);
    std::stringstream out_text, err_text;
    out_text << out.rdbuf();
    err_text << err.rdbuf();
    if (status == 0) {
      try {
        const json j = json::parse(out_text.str());
        const json& row = j.at("results").at(0);
        check.round_s = row.at("round_s").get<double>();
        const study::Evaluation& e = search.evaluations[check.evaluation];
        check.faults_simulated = row.contains("failures");
        // Revocations: simulated faults when every round was simulated, else the closed form
        // over the simulated round (see RecheckSettings::faults).
        check.total_s = check.faults_simulated ? row.at("total_s").get<double>()
                                               : study::expected_total_time(
                                                     check.round_s, e.rounds,
                                                     e.revocations_per_hour / 3600.0, e.restart_s)
                                                     .mean_s;
        const auto simulated = row.find("simulated_rounds");
        if (simulated != row.end() && simulated->is_number_integer())
          check.simulated_rounds = simulated->get<long long>();
        if (row.contains("failures"))
          check.failures = static_cast<long long>(row["failures"].size());
        check.cost = search.evaluations[check.evaluation].price_per_hour * check.total_s / 3600;
      } catch (const std::exception& ex) {
        check.status = 1;
        check.error = std::string("unreadable simulate output: ") + ex.what();
      }
    } else {
      check.error = last_line(err_text.str());
    }
    progress.advance();
  });
  progress.finish();
  return checks;
}

/// The inventory with the command line's --objective and --deadline applied.
study::Inventory load(const PlanRequest& args) {
  study::Inventory inv = study::load_inventory(args.inventory);
  if (!args.objective.empty()) {
    if (args.objective == "min-time")
      inv.objective = study::Objective::MinTime;
    else if (args.objective == "min-cost")
      inv.objective = study::Objective::MinCost;
    else if (args.objective == "min-cost-under-deadline")
      inv.objective = study::Objective::MinCostUnderDeadline;
    else
      throw InputError("command line", "--objective",
                       "min-time, min-cost or min-cost-under-deadline", "'" + args.objective + "'");
  }
  if (!args.deadline.empty())
    inv.deadline_s = study::parse_deadline(args.deadline, "command line", "--deadline");
  if (args.confidence > 0) inv.deadline_confidence = args.confidence;
  // A deadline only some objectives read: given for another one, it would be ignored.
  if (inv.objective != study::Objective::MinCostUnderDeadline) {
    if (!args.deadline.empty())
      throw InputError("command line", "--deadline",
                       "--deadline with the objective min-cost-under-deadline", args.deadline);
    if (args.confidence > 0)
      throw InputError("command line", "--deadline-confidence",
                       "--deadline-confidence with the objective min-cost-under-deadline",
                       fmt::format("{:g}", args.confidence));
  }
  if (inv.objective == study::Objective::MinCostUnderDeadline && inv.deadline_s <= 0)
    throw InputError(inv.file, "deadline", "a duration (e.g. 12h) for min-cost-under-deadline",
                     "nothing");
  return inv;
}

/// P(time > deadline) under the normal approximation of the total (sum of many rounds).
double miss_probability(const study::Evaluation& e, double deadline_s) {
  if (deadline_s <= 0) return 0;
  if (e.time_stddev_s <= 0) return e.time_s > deadline_s ? 1.0 : 0.0;
  return 0.5 * std::erfc((deadline_s - e.time_s) / (e.time_stddev_s * std::sqrt(2.0)));
}

/// DIR of --out (default: the inventory's name with .plan), created.
fs::path make_plan_folder(const PlanRequest& args) {
  const fs::path out_dir = args.out.empty()
                               ? fs::path(fs::path(args.inventory).stem().string() + ".plan")
                               : fs::path(args.out);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir))
    throw InputError("command line", "--out", "a folder that can be created",
                     "'" + out_dir.string() + "'");
  return out_dir;
}

/// DIR/evaluated.csv (every feasible configuration), DIR/frontier.csv and DIR/best.csv.
void write_plan_csvs(const study::Inventory& inv, const study::PlanSearch& search,
                     const fs::path& out_dir) {
  const auto& ev = search.evaluations;
  std::vector<char> on_frontier(ev.size(), 0);
  for (size_t i : search.frontier)
    on_frontier[i] = 1;
  std::string all = kCsvHeader, frontier = kCsvHeader, best = kCsvHeader;
  for (size_t i = 0; i < ev.size(); ++i)
    all += csv_line(inv, ev[i], on_frontier[i] != 0);
  for (size_t i : search.frontier)
    frontier += csv_line(inv, ev[i], true);
  if (search.best >= 0)
    best += csv_line(inv, ev[static_cast<size_t>(search.best)],
                     on_frontier[static_cast<size_t>(search.best)] != 0);
  write_text((out_dir / "evaluated.csv").string(), all);
  write_text((out_dir / "frontier.csv").string(), frontier);
  write_text((out_dir / "best.csv").string(), best);
}

/// The objective in words, with the deadline (and its probability) when it has one.
std::string objective_text(const study::Inventory& inv) {
  std::string objective = study::to_string(inv.objective);
  if (inv.objective == study::Objective::MinCostUnderDeadline)
    objective += " (deadline " + duration(inv.deadline_s) +
                 (inv.deadline_confidence > 0
                      ? fmt::format(" with probability {:g}", inv.deadline_confidence)
                      : std::string()) +
                 ")";
  return objective;
}

/// The one-line answer: the best configuration, the nearest one when none meets the deadline,
/// or why nothing fits.
std::string plan_answer(const study::Inventory& inv, const study::PlanSearch& search,
                        const std::string& objective) {
  const auto& ev = search.evaluations;
  if (ev.empty())
    return fmt::format(
        "no configuration fits: {} configurations searched, {} do not fit in GPU memory, {} "
        "cannot run their collective",
        search.stats.configurations, search.stats.infeasible_memory, search.stats.infeasible_other);
  if (!search.objective_met) {
    const study::Evaluation& n = ev[static_cast<size_t>(search.nearest)];
    return fmt::format(
        "no configuration meets the deadline of {}; the nearest is {} (K={}), {}: {} "
        "expected{}, {}",
        duration(inv.deadline_s), study::describe_selection(inv, n.config.selection), n.config.gpus,
        study::describe_strategy(n.config), duration(n.time_s), spread(n), money(inv, n.cost));
  }
  const study::Evaluation& b = ev[static_cast<size_t>(search.best)];
  const bool deadline = inv.objective == study::Objective::MinCostUnderDeadline;
  return fmt::format(
      "best for {}: {} (K={}), {}: {} expected{}, {} (bottleneck: {}){}", objective,
      study::describe_selection(inv, b.config.selection), b.config.gpus,
      study::describe_strategy(b.config), duration(b.time_s), spread(b), money(inv, b.cost),
      study::to_string(b.bottleneck),
      deadline && b.time_stddev_s > 0
          ? fmt::format("; P(miss the deadline) = {:.2g}", miss_probability(b, inv.deadline_s))
          : "");
}

/// Writes DIR/frontier.gp and runs gnuplot on it (unless --no-plot or nothing was feasible);
/// returns the line that says where the plot is, or why there is none.
std::string plot_frontier(const PlanRequest& args, const study::Inventory& inv,
                          const study::PlanSearch& search, const std::string& objective,
                          const fs::path& out_dir) {
  const std::string title =
      fmt::format("{}: {} on {} node types, {}", fs::path(inv.file).filename().string(),
                  inv.workload.name, inv.node_types.size(), objective);
  std::string plot_note = "plot skipped (--no-plot)";
  if (!args.no_plot && !search.evaluations.empty()) {
    write_text((out_dir / "frontier.gp").string(), gnuplot_script(inv, search, title));
    std::vector<std::string> notes;
    plot_note = run_gnuplot(out_dir, "frontier.gp", notes)
                    ? fmt::format("plot: {} and {}", (out_dir / "frontier.png").string(),
                                  (out_dir / "frontier.svg").string())
                    : "plot: " + notes.back();
  }
  return plot_note;
}

/// The re-checks in JSON: each configuration with simgrid's time and cost, or its error.
json recheck_json(const study::Inventory& inv, const study::PlanSearch& search,
                  const std::vector<Recheck>& checks) {
  json rechecks = json::array();
  for (const Recheck& c : checks) {
    const study::Evaluation& e = search.evaluations[c.evaluation];
    json r = {{"config", to_json(inv, e)}, {"folder", c.folder}, {"status", c.status}};
    if (c.status == 0) {
      r["simgrid_time_s"] = c.total_s;
      r["simgrid_round_s"] = c.round_s;
      r["simgrid_cost"] = c.cost;
      r["simulated_rounds"] = c.simulated_rounds;
      r["simulated_failures"] = c.failures;
      r["faults_simulated"] = c.faults_simulated;
      r["time_difference"] = e.time_s > 0 ? c.total_s / e.time_s - 1 : 0.0;
    } else {
      r["error"] = c.error;
    }
    rechecks.push_back(r);
  }
  return rechecks;
}

/// The document of DIR/plan.json: context, search counts, answer, best, nearest, frontier,
/// ranking and re-checks.
json plan_document(const study::Inventory& inv, const study::PlanSearch& search,
                   const std::vector<Recheck>& checks, const std::string& answer,
                   const fs::path& out_dir) {
  const auto& ev = search.evaluations;
  json frontier = json::array();
  for (size_t i : search.frontier)
    frontier.push_back(to_json(inv, ev[i]));
  json ranking = json::array();
  for (size_t i : search.ranking)
    ranking.push_back(to_json(inv, ev[i]));
  json best_json;
  if (search.best >= 0) {
    best_json = to_json(inv, ev[static_cast<size_t>(search.best)]);
    if (inv.objective == study::Objective::MinCostUnderDeadline)
      best_json["deadline_miss_probability"] =
          miss_probability(ev[static_cast<size_t>(search.best)], inv.deadline_s);
  }
  return {{"context",
           {{"tool", "tauplan"},
            {"version", model::tauplan_version()},
            {"commit", model::tauplan_git_commit()},
            {"date", model::utc_now_iso8601()},
            {"verb", "plan"},
            {"engine", checks.empty() ? "analytic (search; nothing re-checked)"
                                      : "analytic (search) + simgrid (re-check)"},
            {"inventory", inv.file},
            {"workload", inv.workload.name},
            {"convergence", study::target_convergence(inv)->describe()},
            {"target_accuracy", inv.target.accuracy},
            {"objective", study::to_string(inv.objective)},
            {"deadline_s", inv.deadline_s},
            {"deadline_confidence", inv.deadline_confidence},
            {"currency", inv.currency},
            {"seed", inv.recheck.seed},
            {"out_dir", out_dir.string()}}},
          {"search",
           {{"node_selections", search.stats.subsets},
            {"configurations", search.stats.configurations},
            {"feasible", search.stats.feasible},
            {"infeasible_memory", search.stats.infeasible_memory},
            {"infeasible_other", search.stats.infeasible_other},
            {"seconds", search.stats.seconds}}},
          {"objective_met", search.objective_met},
          {"answer", answer},
          {"best", best_json},
          {"nearest",
           search.nearest >= 0 ? to_json(inv, ev[static_cast<size_t>(search.nearest)]) : json()},
          {"frontier", frontier},
          {"ranking", ranking},
          {"recheck", recheck_json(inv, search, checks)}};
}

/// The header lines: the inventory and the counts of the search.
std::string search_header(const study::Inventory& inv, const study::PlanSearch& search,
                          const std::string& objective) {
  return fmt::format(
      "# plan {}: {} node types, workload {}, {}; objective {}\n"
      "# searched {} configurations ({} node selections, up to {} GPUs) in {:.2f} s: {} "
      "feasible, {} do not fit in memory, {} cannot run their collective\n",
      inv.file, inv.node_types.size(), inv.workload.name,
      study::target_convergence(inv)->describe(), objective,
      with_commas(search.stats.configurations), with_commas(search.stats.subsets),
      inv.search.max_gpus, search.stats.seconds, with_commas(search.stats.feasible),
      with_commas(search.stats.infeasible_memory), with_commas(search.stats.infeasible_other));
}

/// The Pareto frontier as a table, the best one marked, and what its columns mean.
std::string frontier_table(const study::Inventory& inv, const study::PlanSearch& search) {
  const auto& ev = search.evaluations;
  std::string out =
      fmt::format("Pareto frontier, expected time against expected cost ({} points):\n",
                  search.frontier.size());
  size_t width = 5;
  for (size_t i : search.frontier)
    width = std::max(width, study::describe_selection(inv, ev[i].config.selection).size());
  out +=
      fmt::format("  {:>10} {:>11}  {:<{}} {:>3}  {:<40} {:>8} {:>7} {:>8}  {}\n", "time", "cost",
                  "nodes", width, "K", "strategy", "mem GiB", "MFU", "revoc/h", "bottleneck");
  for (size_t i : search.frontier) {
    const study::Evaluation& e = ev[i];
    out += fmt::format("  {:>10} {:>11}  {:<{}} {:>3}  {:<40} {:>8.1f} {:>7} {:>8.3g}  {}{}\n",
                       duration(e.time_s), money(inv, e.cost),
                       study::describe_selection(inv, e.config.selection), width, e.config.gpus,
                       study::describe_strategy(e.config),
                       e.memory_per_gpu_bytes / (1024.0 * 1024 * 1024),
                       e.mfu() >= 0 ? fmt::format("{:.1f}%", 100 * e.mfu()) : std::string("-"),
                       e.revocations_per_hour, study::to_string(e.bottleneck),
                       static_cast<long>(i) == search.best ? "  <- best" : "");
  }
  out +=
      "  mem GiB: per GPU as its fit was checked (a mesh layout's with the reserve for the "
      "CUDA context, NCCL buffers and fragmentation; data-parallel: model state and "
      "activations); MFU: model flop/s over the GPUs' dense peak at their precision\n";
  return out;
}

/// For a target in tokens: what the best (or nearest) configuration comes to; else nothing.
std::string token_line(const study::Inventory& inv, const study::PlanSearch& search) {
  if (!(inv.target.tokens > 0 && (search.best >= 0 || search.nearest >= 0))) return "";
  const long index = search.best >= 0 ? search.best : search.nearest;
  const study::Evaluation& e = search.evaluations[static_cast<size_t>(index)];
  return fmt::format("{} {:g} tokens ({:g} sequences of {}, batch {:g}, steps rounded up): {}\n",
                     search.best >= 0 ? "best" : "nearest", inv.target.tokens,
                     inv.target.tokens / inv.target.sequence, inv.target.sequence,
                     e.config.job_batch(), model::to_text(token_summary(inv, e)));
}

/// The re-checks as a table: analytic against simgrid time, cost and faults (empty without).
std::string recheck_table(const study::Inventory& inv, const study::PlanSearch& search,
                          const std::vector<Recheck>& checks, const fs::path& out_dir) {
  if (checks.empty()) return "";
  std::string out = fmt::format(
      "Re-check in simgrid of the top {} (sim_rounds {}, {}; revocations {}): DIR = {}\n",
      checks.size(), inv.recheck.sim_rounds, inv.recheck.network_model,
      inv.recheck.faults && inv.recheck.sim_rounds == 0
          ? "as simulated faults"
          : "by the closed form over the simulated round",
      (out_dir / "candidates").string());
  out += fmt::format("  {:>2}  {:>10} {:>10} {:>7}  {:>11} {:>11}  {:>6}  {}\n", "#", "analytic",
                     "simgrid", "diff", "cost", "sim cost", "faults", "configuration");
  for (size_t r = 0; r < checks.size(); ++r) {
    const Recheck& c = checks[r];
    const study::Evaluation& e = search.evaluations[c.evaluation];
    const std::string config =
        fmt::format("{} (K={}), {}", study::describe_selection(inv, e.config.selection),
                    e.config.gpus, study::describe_strategy(e.config));
    if (c.status != 0) {
      out += fmt::format("  {:>2}  {:>10} {:>10} {:>7}  {:>11} {:>11}  {:>6}  {}: {}\n", r + 1,
                         duration(e.time_s), "failed", "-", money(inv, e.cost), "-", "-", config,
                         c.error);
      continue;
    }
    out += fmt::format("  {:>2}  {:>10} {:>10} {:>+6.1f}%  {:>11} {:>11}  {:>6}  {}\n", r + 1,
                       duration(e.time_s), duration(c.total_s), 100 * (c.total_s / e.time_s - 1),
                       money(inv, e.cost), money(inv, c.cost), c.failures, config);
  }
  return out;
}

}  // namespace

PlanOutcome run_plan(const PlanRequest& args) {
  const study::Inventory inv = load(args);
  const size_t top =
      args.recheck >= 0 ? static_cast<size_t>(args.recheck) : static_cast<size_t>(inv.recheck.top);
  const study::PlanSearch search = study::search_plans(inv, std::max<size_t>(top, 10));
  const fs::path out_dir = make_plan_folder(args);
  write_plan_csvs(inv, search, out_dir);

  const std::string objective = objective_text(inv);
  const std::string answer = plan_answer(inv, search, objective);

  const int jobs = args.jobs > 0
                       ? args.jobs
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Recheck> checks;
  if (!search.evaluations.empty() && top > 0)
    checks = recheck_candidates(inv, search, top, out_dir, jobs);
  const std::string plot_note = plot_frontier(args, inv, search, objective, out_dir);

  const json document = plan_document(inv, search, checks, answer, out_dir);
  write_text((out_dir / "plan.json").string(), document.dump(2) + "\n");

  PlanOutcome outcome;
  outcome.written = out_dir.string() + "/{plan.json,evaluated.csv,frontier.csv,best.csv}";
  outcome.document = document;
  outcome.answer = answer;
  outcome.objective_met = search.objective_met;
  outcome.text = search_header(inv, search, objective) + frontier_table(inv, search) + answer +
                 "\n" + token_line(inv, search) + recheck_table(inv, search, checks, out_dir) +
                 plot_note + "\n";
  return outcome;
}

}  // namespace tauplan::study
