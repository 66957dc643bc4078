// inputs_test.cpp: a job loaded with what an engine needs (study/common/inputs.hpp): every key
// table together without duplicates; a relative workload or platform resolves against the job file
// that names it (then platforms/, TAUPLAN_PLATFORM_DIR, clusters/); a bad one is one InputError
// naming the job file (or the flag) and the key, with the loader's detail; load_inputs applies the
// overrides; make_context's provenance is the loaded platform's own hash and the job's seed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "exec/job_keys.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/compute_source.hpp"
#include "sim/sim_job.hpp"
#include "study/common/files.hpp"
#include "study/common/inputs.hpp"
#include "study/common/study_test_support.hpp"

namespace fs = std::filesystem;
using namespace tauplan;

namespace {  // jobs loaded with every key the executable knows

model::Job job_of(const std::string& file, const std::map<std::string, std::string>& flags = {}) {
  return model::load_job(file, study::all_job_keys(), flags);
}

const std::string kTinyWorkload = "name: tiny\nparameters: 1000\nflop_per_sample: 6000\n";

}  // namespace

TEST_CASE("inputs: every job key of model, sim and exec, each once") {
  const auto keys = study::all_job_keys();
  CHECK(keys.size() ==
        model::model_job_keys().size() + sim::sim_job_keys().size() + exec::exec_job_keys().size());
  std::set<std::string> names;
  for (const auto& k : keys)
    names.insert(k.name);
  CHECK(names.size() == keys.size());
  for (const char* key : {"workers", "network_model", "allow_synthetic", "tensor_parallel"})
    CHECK(names.count(key) == 1);
}

TEST_CASE("inputs: a relative workload file resolves against the job file that names it") {
  // experiments/transformer/tensor-2.yaml names `workload: block-small.yaml`, beside it.
  const model::Job tensor = job_of(test::source_path("experiments/transformer/tensor-2.yaml"));
  const model::Workload beside = study::load_job_workload(tensor);
  const model::Workload direct =
      model::load_workload(test::source_path("experiments/transformer/block-small.yaml"));
  CHECK(beside.name == direct.name);
  CHECK(beside.parameters == direct.parameters);
  CHECK(beside.flop_per_sample == direct.flop_per_sample);
  // A job in a folder that is not the working folder finds its workload there.
  const test::Scratch scratch("inputs-workload");
  scratch.write("jobs/tiny.yaml", kTinyWorkload);
  const std::string job = scratch.write("jobs/job.yaml", "workload: tiny.yaml\n");
  REQUIRE_FALSE(fs::exists("tiny.yaml"));
  const model::Workload tiny = study::load_job_workload(job_of(job));
  CHECK(tiny.name == "tiny");
  CHECK(tiny.parameters == 1000);
  CHECK(tiny.flop_per_sample == 6000);
  // A catalog name is taken as given.
  CHECK(study::load_job_workload(job_of(job, {{"workload", "resnet-50"}})).name == "resnet-50");
}

TEST_CASE("inputs: a bad workload names the job file and key, with the loader's detail") {
  const std::string bad = test::source_path("tests/fixtures/bad");
  const std::string job = bad + "/job-workload-layers.yaml";
  CHECK(test::input_error([&] { study::load_job_workload(job_of(job)); }) ==
        job + ": workload: expected " + bad +
            "/w-layers-sum.yaml: layers[].parameters: expected layers that add up to parameters "
            "= 1000, got a sum of 800");
  // Given as a flag, the flag is named.
  const std::string flagged = test::input_error([&] {
    study::load_job_workload(job_of(job, {{"workload", bad + "/w-flop-text.yaml"}}));
  });
  CHECK(test::names_file_and_key(flagged, "command line", "--workload"));
  CHECK(flagged.find("flop_per_sample: expected a number, got 'lots'") != std::string::npos);
  CHECK(test::input_error([&] { study::load_inputs(job, {}); }) ==
        test::input_error([&] { study::load_job_workload(job_of(job)); }));
}

TEST_CASE("inputs: a platform resolves beside the job, then in platforms/ and clusters/") {
  const test::Scratch scratch("inputs-platform");
  const std::string crossbar = test::source_path("platforms/test-crossbar-4.xml");
  scratch.write("mine.xml", study::read_text(crossbar));
  const std::string job = scratch.write("job.yaml", "platform: mine.xml\n");
  CHECK(study::resolve_platform_path(job_of(job)) == scratch.path("mine.xml"));
  const std::string by_name =
      study::resolve_platform_path(job_of(job, {{"platform", "test-crossbar-4"}}));
  CHECK(fs::equivalent(by_name, crossbar));
  const std::string cluster =
      study::resolve_platform_path(job_of(job, {{"platform", "dgx-h100-16n-1to1"}}));
  CHECK(fs::equivalent(cluster, test::source_path("platforms/clusters/dgx-h100-16n-1to1.yaml")));
  {  // TAUPLAN_PLATFORM_DIR replaces platforms/.
    scratch.write("dir/only-here.xml", study::read_text(crossbar));
    const test::ScopedEnv env("TAUPLAN_PLATFORM_DIR", scratch.path("dir"));
    CHECK(study::resolve_platform_path(job_of(job, {{"platform", "only-here"}})) ==
          scratch.path("dir/only-here.xml"));
  }
  const std::string missing = test::source_path("tests/fixtures/bad/job-platform-missing.yaml");
  const std::string error =
      test::input_error([&] { study::resolve_platform_path(job_of(missing)); });
  CHECK(test::names_file_and_key(error, missing, "platform"));
  CHECK(error.find("got 'no-such-platform' (not found)") != std::string::npos);
  const std::string flag = test::input_error([&] {
    study::resolve_platform_path(job_of(job, {{"platform", "no-such-platform"}}));
  });
  CHECK(test::names_file_and_key(flag, "command line", "--platform"));
}

TEST_CASE("inputs: load_inputs applies the overrides, the context is the platform's provenance") {
  const test::Scratch scratch("inputs-load");
  scratch.write("w.yaml", kTinyWorkload);
  const std::string job = scratch.write(
      "job.yaml",
      "workload: w.yaml\nplatform: " + test::source_path("platforms/test-crossbar-4.xml") +
          "\nstrategies: [sync, single]\nworkers: 2\nseed: 17\n");
  const model::JobInputs in = study::load_inputs(job, {{"workers", "3"}});
  CHECK(in.job.file == job);
  CHECK(in.workload.name == "tiny");
  CHECK(in.strategies == std::vector<std::string>{"sync", "single"});
  CHECK(in.options.workers == 3);
  REQUIRE(in.convergence != nullptr);
  CHECK(fs::equivalent(in.platform_path, test::source_path("platforms/test-crossbar-4.xml")));
  CHECK(in.platform.source_hash == model::fnv1a_hex(study::read_text(in.platform_path)));

  const model::RunContext context = study::make_context(in, "predict", "analytic");
  CHECK(context.verb == "predict");
  CHECK(context.engine == "analytic");
  CHECK(context.job_file == job);
  CHECK(context.platform_file == in.platform_path);
  CHECK(context.platform_hash == in.platform.source_hash);
  CHECK(context.seed == 17);
  CHECK(context.workload == "tiny (" + in.workload.source + ")");
  CHECK(context.extra.at("compute") == study::compute_sources(in.platform));

  const std::string empty = scratch.write("empty.yaml", "strategies: []\n");
  CHECK(test::input_error([&] {
          study::load_inputs(empty, {{"platform", in.platform_path}});
        }) == empty + ": strategies: expected at least one strategy");
}

TEST_CASE("inputs: compute_sources names each distinct worker source once, in order") {
  // One platform per test case: SimGrid holds one per process (ctest runs each case alone).
  const std::string path = test::source_path("platforms/test-hetero-4.xml");
  const model::JobInputs in = study::load_inputs(
      std::string(), {{"platform", path}, {"workload", "resnet-50"}, {"workers", "1"}});
  std::set<std::string> sources;
  size_t workers = 0;
  for (const model::Host& host : in.platform.hosts)
    if (host.role == model::HostRole::Worker) {
      sources.insert(model::host_compute_source(host, in.platform));
      ++workers;
    }
  REQUIRE(sources.size() > 1);        // hosts of different speeds
  REQUIRE(sources.size() < workers);  // and some of the same
  std::string joined;
  for (const std::string& s : sources)
    joined += (joined.empty() ? "" : " | ") + s;
  CHECK(study::compute_sources(in.platform) == joined);
}
