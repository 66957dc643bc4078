// Compute profiles from the command line: a platform host naming a profile that does not exist, a
// profile that is not a profile, and one whose measured shapes are far from the job's layers are
// each refused in one line naming the file and the key, exit 2; a good profile file next to the
// platform times the job's layers and the output names it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "run_command.hpp"

using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

/// Four H200 hosts on a crossbar, each naming `profile` as its compute profile.
std::string platform_naming(const std::string& profile) {
  return R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="n0" prefix="n0-gpu" radical="0-3" suffix="" speed="989.5Tf" bw="450GBps" lat="1us">
      <prop id="gpu_model" value="H200-SXM-141GB"/>
      <prop id="gpu_memory_bytes" value="151397597184"/>
      <prop id="precision" value="bf16"/>
      <prop id="compute_profile" value=")" +
         profile + R"("/>
      <prop id="node" value="n0"/>
      <prop id="role" value="worker"/>
    </cluster>
  </zone>
</platform>
)";
}

std::string job_on(const std::string& platform) {
  return write_temp_file("profile-job.yaml", "workload: llama2-7b\nplatform: " + platform +
                                                 "\nstrategies: [mesh]\nworkers: 4\nbatch: 8\n"
                                                 "tensor_parallel: 2\nmicro_batches: 4\n");
}

int lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("compute profiles: bad ones are refused in one line, a good one names itself") {
  SECTION("a profile that does not exist") {
    const std::string platform =
        write_temp_file("profile-missing.xml", platform_naming("no-such-profile.json"));
    const auto r = run_tauplan({"layout", job_on(platform)});
    CHECK(r.exit_code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("host n0-gpu0 prop compute_profile: expected a catalog profile") !=
          std::string::npos);
  }
  SECTION("a profile file that is not a profile") {
    const std::string profile =
        write_temp_file("profile-bad.json", R"({"format": "tauplan-compute-profile-1"})");
    const std::string platform = write_temp_file("profile-bad.xml", platform_naming(profile));
    const auto r = run_tauplan({"layout", job_on(platform)});
    CHECK(r.exit_code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("profile-bad.json: device: expected a string") != std::string::npos);
  }
  SECTION("a profile measured far from the job's shapes") {
    const std::string profile =
        write_temp_file("profile-small.json", R"({"format": "tauplan-compute-profile-1",
      "device": "small", "precision": "bf16", "source": "test", "peak_flops": 989.5e12,
      "peak_flops_source": "test", "memory_bandwidth_Bps": 3e12,
      "default_attention_efficiency": 0.5, "gemms": [[64, 64, 64, 1e-6]]})");
    const std::string platform = write_temp_file("profile-small.xml", platform_naming(profile));
    const auto r = run_tauplan({"layout", job_on(platform)});
    CHECK(r.exit_code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("profile-small.json: gemms: expected a measured GEMM within a factor 8") !=
          std::string::npos);
  }
  SECTION("the catalog's H200 profile, named by the host") {
    const std::string platform =
        write_temp_file("profile-good.xml", platform_naming("h200-sxm-bf16"));
    const auto r = run_tauplan({"layout", job_on(platform)});
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("compute: compute profile h200-sxm-bf16 of NVIDIA H200") != std::string::npos);
  }
  SECTION("a GPU the catalog does not have") {
    std::string text = platform_naming("h200-sxm-bf16");
    text.replace(text.find("H200-SXM-141GB"), 14, "Z9000");
    const std::string platform = write_temp_file("profile-gpu.xml", text);
    const auto r = run_tauplan({"layout", job_on(platform)});
    CHECK(r.exit_code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("Z9000") != std::string::npos);
  }
}
