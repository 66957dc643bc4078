// engines_test.cpp: the engine registry and running an engine (study/common/engines.hpp): analytic,
// simgrid and exec each under its name and verb, an unknown name one InputError naming the
// origin and key; a child's task is `VERB JOB --key=value ... --json`; a result row survives its
// JSON (unknown fields kept in extra); run_engine gives one row per strategy in the job's order
// with total = rounds x round, speedups T0 / T from the single row, and, for a target in tokens,
// each row's steps (local SGD: rounds x tau), tokens/s, days and GPU-hours. Studies choose
// engines by capability: predictors() lists the engines that predict, at their default network
// model or at each one, and what each engine says it can do matches what its job keys take.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/ir/result.hpp"
#include "model/ir/strategy.hpp"
#include "study/common/engines.hpp"
#include "study/common/inputs.hpp"
#include "study/common/study_test_support.hpp"

using namespace tauplan;
using nlohmann::json;

TEST_CASE("engines: analytic, simgrid and exec, each under its name with its own verb") {
  const std::vector<std::string> names = study::engine_names();
  const std::set<std::string> named(names.begin(), names.end());
  CHECK(named == std::set<std::string>{"analytic", "simgrid", "exec"});
  std::set<std::string> verbs;
  for (const std::string& name : names) {
    const model::Engine& e = study::engine(name);
    CHECK(e.name() == name);
    verbs.insert(e.verb());
  }
  CHECK(verbs == std::set<std::string>{"predict", "simulate", "measure"});
  CHECK(test::names_file_and_key(test::input_error([] { study::engine("quantum"); }),
                                 "command line", "--engine"));
  CHECK(test::names_file_and_key(
      test::input_error([] { study::engine("quantum", "job.yaml", "engine"); }), "job.yaml",
      "engine"));
}

TEST_CASE("engines: chosen by capability, the predicting ones at each network model they take") {
  // What each engine says it can do.
  for (const std::string& name : study::engine_names()) {
    const model::EngineCapabilities can = study::engine(name).capabilities();
    INFO(name);
    // Only an engine that predicts has network models to choose, or shares the process.
    if (!can.predicts) CHECK((can.network_models.empty() && !can.shares_process));
    // An engine with network models takes the job key network_model with those choices, its
    // default first.
    if (!can.network_models.empty()) {
      const auto keys = study::all_job_keys();
      const auto key = std::find_if(keys.begin(), keys.end(), [](const model::KeySpec& k) {
        return k.name == "network_model";
      });
      REQUIRE(key != keys.end());
      CHECK(key->choices == can.network_models);
      CHECK(key->default_value == can.network_models.front());
    }
  }
  CHECK(study::engine("analytic").capabilities().shares_process);
  // Which engines write a trace is the key's readers (KeySpec::read_by), not a capability.
  CHECK_FALSE(study::engine_reads_key(study::engine("analytic"), "trace"));
  CHECK(study::engine_reads_key(study::engine("simgrid"), "trace"));
  CHECK(study::engine_reads_key(study::engine("exec"), "trace"));
  CHECK_FALSE(study::engine("exec").capabilities().predicts);
  CHECK(study::engine("simgrid").capabilities().models_contention);

  // The default network model of each: labelled by the engine's name.
  std::vector<std::string> labels;
  // (The built-in engines, that run as verbs: an engine another test registers in this process
  // is left out.)
  for (const study::Predictor& p :
       study::predictors(study::NetworkModels::Default, study::RunsIn::ChildProcess)) {
    labels.push_back(p.label);
    CHECK(p.engine->capabilities().predicts);
    CHECK(p.engine->name() == p.label);
    CHECK(p.network_model.empty());
    CHECK(p.default_model);
  }
  CHECK(labels == std::vector<std::string>{"analytic", "simgrid"});
  CHECK(study::predicting_engine_names().size() >= labels.size());

  // Each network model: one predictor per model where an engine takes several, the default
  // marked; the engine's own name where it takes none.
  labels.clear();
  int defaults = 0;
  for (const study::Predictor& p :
       study::predictors(study::NetworkModels::Each, study::RunsIn::ChildProcess)) {
    labels.push_back(p.label);
    defaults += p.default_model ? 1 : 0;
    if (p.label == "simgrid_lv08") CHECK((p.network_model == "LV08" && !p.default_model));
    if (p.label == "simgrid_cm02") CHECK((p.network_model == "CM02" && p.default_model));
  }
  CHECK(labels == std::vector<std::string>{"analytic", "simgrid_cm02", "simgrid_lv08"});
  CHECK(defaults == 2);
}

TEST_CASE("engines: a child's task is the verb, the job, one --key=value per key and --json") {
  const model::Engine& simgrid = study::engine("simgrid");
  const study::child::Task task =
      study::engine_task(simgrid, "job.yaml", {{"workers", "4"}, {"batch", "64"}}, "o", "e");
  CHECK(task.args ==
        std::vector<std::string>{"simulate", "job.yaml", "--batch=64", "--workers=4", "--json"});
  CHECK(task.out_path == "o");
  CHECK(task.err_path == "e");
  // Without a job file, only the keys.
  const study::child::Task flags =
      study::engine_task(study::engine("analytic"), "", {{"tau", "5"}}, "", "");
  CHECK(flags.args == std::vector<std::string>{"predict", "--tau=5", "--json"});
}

TEST_CASE("engines: a result row survives its JSON, unknown fields kept in extra") {
  model::ResultRow row;
  row.strategy = "sync";
  row.workers = 8;
  row.tau = 3;
  row.batch = 256;
  row.collective = "ring";
  row.split = "speed";
  row.round_s = 0.25;
  row.compute_s = 0.2;
  row.comm_s = 0.05;
  row.rounds = 1234;
  row.total_s = 308.5;
  row.speedup = 6.5;
  row.engine = "simgrid";
  row.timing = "lockstep";
  row.extra["failures"] = json::array({"h1@3"});
  const model::ResultRow back = study::row_from_json(model::to_json(row));
  CHECK(back.strategy == row.strategy);
  CHECK(back.workers == row.workers);
  CHECK(back.tau == row.tau);
  CHECK(back.batch == row.batch);
  CHECK(back.collective == row.collective);
  CHECK(back.split == row.split);
  CHECK(back.round_s == row.round_s);
  CHECK(back.compute_s == row.compute_s);
  CHECK(back.comm_s == row.comm_s);
  CHECK(back.rounds == row.rounds);
  CHECK(back.total_s == row.total_s);
  CHECK(back.speedup == row.speedup);
  CHECK(back.engine == row.engine);
  CHECK(back.timing == row.timing);
  CHECK(back.extra.at("failures") == row.extra.at("failures"));
  CHECK_FALSE(back.extra.contains("round_s"));
  // Missing or mistyped fields take the defaults; a null speedup is 0.
  const model::ResultRow bare = study::row_from_json({{"workers", "eight"}, {"speedup", nullptr}});
  CHECK(bare.workers == 1);
  CHECK(bare.tau == 1);
  CHECK(bare.speedup == 0);
  CHECK(bare.strategy.empty());
}

TEST_CASE("engines: run_engine's rows, one per strategy, total = rounds x round, speedup T0/T") {
  const test::Scratch scratch("engines-run");
  const std::string job =
      scratch.write("job.yaml", "platform: " + test::source_path("platforms/test-crossbar-4.xml") +
                                    "\nworkload: fashion-mlp\n"
                                    "strategies: [sync, single, local-sgd]\ntau: 5\n");
  const study::EngineOutput out = study::run_engine("analytic", job, {{"workers", "4"}});
  CHECK(out.context.verb == "predict");
  CHECK(out.context.engine == "analytic");
  CHECK(out.context.job_file == job);
  REQUIRE(out.rows.size() == 3);
  CHECK(out.rows[0].strategy == "sync");
  CHECK(out.rows[1].strategy == model::baseline_strategy().name());
  CHECK(out.rows[2].strategy == "local-sgd");
  CHECK(out.rows[0].workers == 4);
  CHECK(out.rows[1].workers == 1);
  CHECK(out.rows[2].tau == 5);
  const double t0 = out.rows[1].total_s;
  for (const model::ResultRow& row : out.rows) {
    CAPTURE(row.strategy);
    CHECK(row.engine == "analytic");
    CHECK(row.total_s == Approx(static_cast<double>(row.rounds) * row.round_s).epsilon(1e-12));
    CHECK(row.speedup == Approx(t0 / row.total_s).epsilon(1e-12));
    CHECK_FALSE(row.extra.contains("tokens"));
  }
  CHECK(out.rows[1].speedup == 1);
}

TEST_CASE("engines: a target in tokens gives each predicted row its steps, tokens/s and GPU-h") {
  const test::Scratch scratch("engines-tokens");
  const std::string job = scratch.write(
      "job.yaml",
      "workload: llama3-70b\nstrategies: [sync, local-sgd]\nworkers: 4\nbatch: 512\ntau: 4\n"
      "compute_s: 10\ncomm_s: 2\ncheck_memory: false\ntokens: 15T\n");
  const study::EngineOutput out = study::run_engine("analytic", job, {});
  REQUIRE(out.rows.size() == 2);
  for (const model::ResultRow& row : out.rows) {
    CAPTURE(row.strategy);
    REQUIRE(row.extra.contains("tokens"));
    const json& t = row.extra.at("tokens");
    // Local SGD counts rounds of tau local steps; sync counts steps.
    const long long steps = row.strategy == "local-sgd" ? row.rounds * row.tau : row.rounds;
    CHECK(t.at("steps").get<long long>() == steps);
    CHECK(t.at("target_tokens").get<double>() == 15e12);
    CHECK(t.at("tokens_per_s").get<double>() == Approx(15e12 / row.total_s));
    CHECK(t.at("days").get<double>() == Approx(row.total_s / 86400));
    CHECK(t.at("gpu_hours").get<double>() == Approx(row.total_s * row.workers / 3600));
    CHECK(row.note.find(" steps, ") != std::string::npos);
  }
  // 15e12 tokens / (8192 x 512) per sync step, rounded up.
  CHECK(out.rows[0].rounds == 3576279);
}
