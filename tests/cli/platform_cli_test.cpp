// platform_cli_test.cpp: `tauplan platform` end to end: a preset written as SimGrid XML with its
// summary, flags that override the preset's numbers, and each bad input as one line naming the
// flag with exit 2 (model/inputs/cluster_generator.hpp); cluster spec files through --spec and as a
// job's platform (model/inputs/cluster_spec_file.hpp, study/common/platform_file.hpp).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/inputs/platform.hpp"
#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::read_text_file;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

std::string out_file(const std::string& name) {
  return (std::filesystem::path(write_temp_file(name, "")).parent_path() / name).string();
}

}  // namespace

TEST_CASE("platform: a preset written as SimGrid XML, with its summary", "[platform_cli]") {
  const std::string out = out_file("h100-64.xml");
  const auto r = run_tauplan({"platform", "--preset", "dgx-h100", "--nodes", "64",
                              "--oversubscription", "2", "--wiring", "rail", "--out", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("wrote " + out) == 0);
  CHECK(r.out.find("512 GPUs (H100-SXM5-80GB") != std::string::npos);
  CHECK(r.out.find("in 64 nodes of 8; rail wiring: 2 leaf domain(s) of 32 nodes") !=
        std::string::npos);
  CHECK(r.out.find("domain uplink 6400 GB/s (2:1)") != std::string::npos);
  CHECK(r.out.find("bisection bandwidth 6400 GB/s one direction (50%") != std::string::npos);
  const std::string xml = read_text_file(out);
  CHECK(xml.find("<platform version=\"4.1\">") != std::string::npos);
  CHECK(xml.find("<host id=\"n63-gpu7\"") != std::string::npos);
}

TEST_CASE("platform: flags override the preset's numbers and say so", "[platform_cli]") {
  const std::string out = out_file("a100-custom.xml");
  const auto r = run_tauplan({"platform",
                              "--preset",
                              "dgx-a100",
                              "--nodes",
                              "8",
                              "--wiring",
                              "plain",
                              "--gpus-per-node",
                              "4",
                              "--gpu",
                              "H200-SXM-141GB",
                              "--efficiency",
                              "0.5",
                              "--nvlink-bandwidth",
                              "100GBps",
                              "--nic-bandwidth",
                              "400Gbps",
                              "--nic-latency",
                              "3us",
                              "--switch-latency",
                              "1us",
                              "--leaf-down-ports",
                              "8",
                              "--domains-per-pod",
                              "2",
                              "--core-oversubscription",
                              "4",
                              "--out",
                              out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("32 GPUs (H200-SXM-141GB, 494.75 Tflop/s each") != std::string::npos);
  CHECK(r.out.find("4 leaf domain(s) of 2 nodes") != std::string::npos);
  CHECK(r.out.find("2 pod(s) of 2 domain(s)") != std::string::npos);
  const std::string xml = read_text_file(out);
  CHECK(xml.find("given on the command line (--efficiency)") != std::string::npos);
  CHECK(xml.find("<link id=\"n0-gpu0-nic\" bandwidth=\"50000000000Bps\"") != std::string::npos);
  CHECK(xml.find("<link id=\"p0-uplink\" bandwidth=\"200000000000Bps\"") != std::string::npos);
}

TEST_CASE("platform: bad inputs are one line naming the flag, exit 2", "[platform_cli]") {
  const std::string out = out_file("bad.xml");
  const std::vector<std::string> ok = {"platform", "--preset", "dgx-h100", "--nodes", "64"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = ok;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_bad_input({"platform", "--preset", "dgx-z9", "--nodes", "4", "--out", out},
                   "command line: --preset: expected one of dgx-a100, dgx-h100, hgx-h200, "
                   "dgx-b200, got 'dgx-z9'");
  expect_bad_input({"platform", "--preset", "dgx-h100", "--nodes", "0", "--out", out},
                   "--nodes: expected a whole number in [1, 8192], got 0");
  expect_bad_input({"platform", "--preset", "dgx-h100", "--nodes", "-4", "--out", out}, "--nodes");
  expect_bad_input({"platform", "--preset", "dgx-h100", "--out", out}, "--nodes: expected");
  expect_bad_input(with({"--out", out, "--oversubscription", "0.5"}),
                   "--oversubscription: expected a ratio down:up in [1, 1e+06], got 0.5");
  expect_bad_input(with({"--out", out, "--core-oversubscription", "0"}),
                   "--core-oversubscription: expected");
  expect_bad_input({"platform", "--preset", "dgx-h100", "--nodes", "40", "--out", out},
                   "--nodes: expected at most 32 or a multiple of 32, the nodes of a leaf domain");
  expect_bad_input(
      {"platform", "--preset", "dgx-h100", "--nodes", "6", "--wiring", "plain", "--out", out},
      "--nodes: expected at most 4 or a multiple of 4");
  expect_bad_input(with({"--out", out, "--gpu", "H900"}),
                   "--gpu: expected a GPU of model/catalog/gpus.yaml with a bf16 peak");
  expect_bad_input(with({"--out", out, "--gpu", "V100-SXM2-16GB"}), "got 'V100-SXM2-16GB'");
  expect_bad_input(with({"--out", out, "--wiring", "star"}), "--wiring: expected rail");
  expect_bad_input(with({"--out", out, "--efficiency", "1.5"}), "--efficiency: expected");
  expect_bad_input(with({"--out", out, "--nic-bandwidth", "fast"}), "--nic-bandwidth");
  expect_bad_input(with({"--out", out, "--switch-latency=-1us"}), "--switch-latency");
  expect_bad_input({"platform", "--preset", "dgx-h100", "--nodes", "2048", "--domains-per-pod", "3",
                    "--out", out},
                   "--domains-per-pod: expected a divisor of the 64 leaf domains");
  expect_bad_input(ok, "command line: --out: expected a file to write the platform to, got none");
  expect_bad_input(with({"--out", "/nonexistent-folder/x.xml"}),
                   "--out: expected a file that can be written");
  expect_bad_input({"platform", "--nodes", "4", "--out", out}, "--preset: expected a preset");
  expect_bad_input({"platform", "--preset", "dgx-h100", "--nodes", "many", "--out", out},
                   "--nodes");
}

// Cluster specs (model/inputs/cluster_spec_file.hpp): `platform --spec`, and a job whose platform
// is one (study/common/platform_file.hpp generates and caches its XML).

TEST_CASE("platform --spec: a cluster spec written as XML, flags override it", "[platform_cli]") {
  const std::string spec = write_temp_file(
      "h100-spec.yaml", "preset: dgx-h100\nnodes: 64\noversubscription: 2\nnic_latency: 3us\n");
  const std::string out = out_file("h100-spec.xml");
  auto r = run_tauplan({"platform", "--spec", spec, "--out", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("domain uplink 6400 GB/s (2:1)") != std::string::npos);
  CHECK(read_text_file(out).find("given in " + spec) != std::string::npos);
  r = run_tauplan({"platform", "--spec", spec, "--nodes", "128", "--nic-bandwidth", "200Gbps",
                   "--efficiency", "0.5", "--out", out});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("1024 GPUs") != std::string::npos);
  const std::string xml = read_text_file(out);
  CHECK(xml.find("given on the command line (--efficiency)") != std::string::npos);
  CHECK(xml.find("given in " + spec) != std::string::npos);  // nic_latency, from the file
  CHECK(xml.find("<link id=\"n0-gpu0-nic\" bandwidth=\"25000000000Bps\"") != std::string::npos);
  expect_bad_input({"platform", "--spec", spec, "--preset", "dgx-a100", "--out", out},
                   "command line: --preset: expected no preset with --spec");
  const std::string bad = write_temp_file("bad-spec.yaml", "preset: dgx-h100\nnodez: 4\n");
  expect_bad_input({"platform", "--spec", bad, "--out", out},
                   bad + ": nodez: expected one of the known keys");
  expect_bad_input({"platform", "--spec", spec, "--nic-bandwidth", "400", "--out", out},
                   "command line: --nic-bandwidth: expected a bandwidth with its unit");
}

TEST_CASE("a job's platform may be a cluster spec: generated, cached, named in the context",
          "[platform_cli]") {
  const std::string spec_text = "preset: dgx-h100\nnodes: 2\ngpus_per_node: 4\n";
  const std::string spec = write_temp_file("tiny-cluster.yaml", spec_text);
  const std::string job =
      write_temp_file("spec-job.yaml",
                      "workload: fashion-mlp\nplatform: tiny-cluster.yaml\nstrategies: [single, "
                      "sync]\nworkers: 8\nbatch: 64\n");
  const std::string folder = std::filesystem::path(job).parent_path().string();
  setenv("TMPDIR", folder.c_str(), 1);  // the cache goes to this test's folder
  for (const char* verb : {"predict", "simulate"}) {
    const auto r = run_tauplan({verb, job, "--json"});
    INFO(verb << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    const auto& context = doc.at("context");
    CHECK(context.at("platform_file") == spec);
    CHECK(context.at("platform_hash") == tauplan::model::fnv1a_hex(spec_text));
    const std::string xml = context.at("platform_xml").get<std::string>();
    CHECK(xml.rfind(folder + "/tauplan-platforms/tiny-cluster-", 0) == 0);
    CHECK(std::filesystem::is_regular_file(xml));
    CHECK(context.at("platform_xml_hash") == tauplan::model::fnv1a_hex(read_text_file(xml)));
    CHECK(doc.at("results").size() == 2);
  }
  // A bad spec through a job: one line naming the spec and its key, exit 2.
  write_temp_file("bad-cluster.yaml", "preset: dgx-h100\nnodes: 2\nnic_bandwidth: 400\n");
  const std::string bad_job = write_temp_file(
      "bad-spec-job.yaml", "workload: fashion-mlp\nplatform: bad-cluster.yaml\nworkers: 2\n");
  expect_bad_input({"predict", bad_job}, "bad-cluster.yaml: nic_bandwidth: expected a bandwidth");
  unsetenv("TMPDIR");
}

TEST_CASE("a cluster spec of platforms/clusters/ is found by its name", "[platform_cli]") {
  setenv("TMPDIR", std::filesystem::path(write_temp_file("x", "")).parent_path().c_str(), 1);
  const auto r = run_tauplan({"predict", "--platform", "dgx-h100-16n-1to1", "--workload",
                              "fashion-mlp", "--workers", "16", "--strategies", "sync", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string file =
      nlohmann::json::parse(r.out).at("context").at("platform_file").get<std::string>();
  CHECK(file.find("platforms/clusters/dgx-h100-16n-1to1.yaml") != std::string::npos);
  unsetenv("TMPDIR");
}
