// bench_scale.cpp: `tauplan simulate` on the jobs of real training runs, timed as a user runs it.
//
// Each case writes a generated cluster (`tauplan platform`) and a job file into a temporary
// folder, runs `tauplan simulate JOB --json` as a child process, and reports its wall time and
// peak resident memory (wait4's ru_maxrss of the child), the simulated iteration and the flows
// it simulated and represented. Targets (issue 24), checked and printed, never asserted in a
// test: GPT-3 175B t8 p8 d48 on 3,072 A100s (2:1 fat tree) in <= 60 s and 8 GiB; a Llama-3-405B-
// like model t8 p16 d128 on 16,384 H100s (2:1) in <= 600 s and 16 GiB; GPT-3 t8 p8 on 64 GPUs
// (no sequence parallelism, full recomputation) with 64 and 128 micro-batches under 2 GiB. The
// ratio case simulates one job twice, with memoised private ops and flow by flow
// (--sim-reuse-steps false), and prints the speed-up and the difference of the two iterations.
// What it leaves out: repetitions (one run per case; a case takes seconds to minutes) and the
// machine's other load (run it on an idle machine).
//
//   bench_scale [--case NAME]... [--out FILE.json] [--tauplan PATH] [--keep DIR]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

// GCC 12 reports -Wnull-dereference inside nlohmann's inlined getters (a false positive).
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  std::string what;
  std::vector<std::string> platform_flags;  ///< for `tauplan platform`
  std::string job;                          ///< job YAML without its platform line
  double max_wall_s = 0;
  double max_memory_gib = 0;
  bool ratio = false;  ///< also run flow by flow and compare
};

const char* kLlamaWorkload = R"(name: llama3-405b-like
description: "Llama 3 405B-like: 126 layers, d 16384, 128 heads / 8 KV heads, SwiGLU 53248, sequence 8192"
# Shape of Llama 3 405B (Dubey et al. 2024, arXiv 2407.21783, Table 3: 126 layers, model
# dimension 16,384, FFN dimension 53,248, 128 attention heads, 8 key/value heads, vocabulary
# 128K tokens (128,256 in the released tokenizer)); bf16 weights, Adam states in fp32.
bytes_per_parameter: 2
optimizer_bytes_per_parameter: 12
sample_unit: sequence
transformer: {layers: 126, hidden: 16384, heads: 128, kv_heads: 8, ffn_hidden: 53248,
              feed_forward: swiglu, sequence: 8192, vocabulary: 128256, tied_embeddings: false,
              linear_bias: false, normalization: rmsnorm, positions: rotary}
)";

std::vector<Case> cases() {
  const std::string gpt3 =
      "workload: gpt3-175b\nstrategies: [mesh]\ntensor_parallel: 8\npipeline_parallel: 8\n"
      "iterations: 1\n";
  std::vector<Case> all;
  all.push_back({"gpt3-3072",
                 "GPT-3 175B t8 p8 d48, 1F1B, batch 1536 of micro-batch 1, selective "
                 "recomputation, sequence parallel; 384 DGX A100, rail, 2:1",
                 {"--preset", "dgx-a100", "--nodes", "384", "--leaf-down-ports", "32",
                  "--oversubscription", "2"},
                 gpt3 + "workers: 3072\nbatch: 1536\nmicro_batches: 32\nrecompute: selective\n"
                        "sequence_parallel: true\n",
                 60,
                 8,
                 false});
  all.push_back({"llama405-16k",
                 "Llama-3-405B-like t8 p16 d128, 1F1B, 16 micro-batches of 1 per replica, "
                 "sequence 8192, full recomputation, ZeRO 1, sequence parallel; 2048 DGX H100, "
                 "rail, 2:1",
                 {"--preset", "dgx-h100", "--nodes", "2048", "--oversubscription", "2"},
                 "workload: llama3-405b-like.yaml\nstrategies: [mesh]\nworkers: 16384\n"
                 "tensor_parallel: 8\npipeline_parallel: 16\nbatch: 2048\nmicro_batches: 16\n"
                 "recompute: full\nzero_stage: 1\nsequence_parallel: true\niterations: 1\n",
                 600,
                 16,
                 false});
  for (int m : {64, 128})
    all.push_back({"gpt3-64-m" + std::to_string(m),
                   "GPT-3 175B t8 p8 on 64 A100s, " + std::to_string(m) +
                       " micro-batches, full recomputation, no sequence parallelism",
                   {"--preset", "dgx-a100", "--nodes", "8"},
                   gpt3 + "workers: 64\nbatch: " + std::to_string(m) +
                       "\nmicro_batches: " + std::to_string(m) + "\nrecompute: full\n",
                   0,
                   2,
                   false});
  all.push_back({"ratio-512",
                 "GPT-3 175B t8 p8 d8, 16 micro-batches, selective, sequence parallel; 64 DGX "
                 "A100, rail, 2 domains at 2:1: memoised vs flow by flow",
                 {"--preset", "dgx-a100", "--nodes", "64", "--leaf-down-ports", "32",
                  "--oversubscription", "2"},
                 gpt3 + "workers: 512\nbatch: 128\nmicro_batches: 16\nrecompute: selective\n"
                        "sequence_parallel: true\n",
                 0,
                 0,
                 true});
  return all;
}

struct Run {
  int status = -1;
  double wall_s = 0;
  double max_rss_gib = 0;
  std::string output;
};

/// Runs argv with stdout to `stdout_path`, stderr to the parent's; wall time and peak memory.
Run run(const std::vector<std::string>& argv, const std::string& stdout_path) {
  Run result;
  const auto start = Clock::now();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!std::freopen(stdout_path.c_str(), "w", stdout)) _exit(127);
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.max_rss_gib = static_cast<double>(usage.ru_maxrss) * 1024.0 / (1024.0 * 1024 * 1024);
  std::ifstream in(stdout_path);
  result.output.assign(std::istreambuf_iterator<char>(in), {});
  return result;
}

nlohmann::json first_row(const Run& r) {
  if (r.status != 0) return {};
  const auto json = nlohmann::json::parse(r.output, nullptr, false);
  if (json.is_discarded() || !json.contains("results") || json["results"].empty()) return {};
  return json["results"][0];
}

nlohmann::json run_case(const Case& c, const std::string& tauplan, const fs::path& dir) {
  const fs::path folder = dir / c.name;
  fs::create_directories(folder);
  std::vector<std::string> platform = {tauplan, "platform"};
  platform.insert(platform.end(), c.platform_flags.begin(), c.platform_flags.end());
  platform.push_back("--out");
  platform.push_back((folder / "cluster.xml").string());
  const Run generated = run(platform, (folder / "platform.txt").string());
  if (generated.status != 0) return {{"case", c.name}, {"error", "tauplan platform failed"}};
  std::ofstream(folder / "llama3-405b-like.yaml") << kLlamaWorkload;
  std::ofstream(folder / "job.yaml") << c.job << "platform: cluster.xml\n";
  const std::string job = (folder / "job.yaml").string();
  const Run fast = run({tauplan, "simulate", job, "--json"}, (folder / "simulate.json").string());
  const nlohmann::json row = first_row(fast);
  nlohmann::json out = {{"case", c.name},
                        {"what", c.what},
                        {"status", fast.status},
                        {"wall_s", fast.wall_s},
                        {"max_rss_gib", fast.max_rss_gib}};
  if (!row.empty()) {
    out["gpus"] = row["workers"];
    out["round_s"] = row["round_s"];
    out["flows_started"] = row["flows_started"];
    out["flows_represented"] = row["flows_represented"];
  }
  out["meets_target"] = fast.status == 0 && (c.max_wall_s <= 0 || fast.wall_s <= c.max_wall_s) &&
                        (c.max_memory_gib <= 0 || fast.max_rss_gib <= c.max_memory_gib);
  if (c.ratio && !row.empty()) {
    const Run slow = run({tauplan, "simulate", job, "--json", "--sim-reuse-steps", "false"},
                         (folder / "simulate-flow-by-flow.json").string());
    const nlohmann::json every = first_row(slow);
    if (!every.empty()) {
      out["flow_by_flow_wall_s"] = slow.wall_s;
      out["flow_by_flow_flows_started"] = every["flows_started"];
      out["speedup"] = slow.wall_s / fast.wall_s;
      const double a = row["round_s"], b = every["round_s"];
      out["relative_difference"] = std::fabs(a - b) / b;
      out["meets_target"] = out["relative_difference"].get<double>() <= 1e-6;
    }
  }
  return out;
}

void print(const nlohmann::json& r) {
  std::printf("%-14s %6s  %8.1f s  %6.2f GiB  round %-10s  flows %s of %s  %s\n",
              r["case"].get<std::string>().c_str(),
              r.contains("gpus") ? std::to_string(r["gpus"].get<int>()).c_str() : "-",
              r.value("wall_s", 0.0), r.value("max_rss_gib", 0.0),
              r.contains("round_s") ? std::to_string(r["round_s"].get<double>()).c_str() : "-",
              r.contains("flows_started") ? r["flows_started"].dump().c_str() : "-",
              r.contains("flows_represented") ? r["flows_represented"].dump().c_str() : "-",
              r.value("meets_target", false) ? "target met" : "TARGET MISSED");
  if (r.contains("speedup"))
    std::printf(
        "%-14s flow by flow %.1f s (%s flows): memoised %.1fx faster, rounds differ by "
        "%.2g (relative)\n",
        "", r["flow_by_flow_wall_s"].get<double>(), r["flow_by_flow_flows_started"].dump().c_str(),
        r["speedup"].get<double>(), r["relative_difference"].get<double>());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> chosen;
  std::string out_path, keep;
  std::string tauplan = TAUPLAN_BINARY;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "bench_scale: " << flag << ": expected a value\n";
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--case")
      chosen.push_back(value);
    else if (flag == "--out")
      out_path = value;
    else if (flag == "--tauplan")
      tauplan = value;
    else if (flag == "--keep")
      keep = value;
    else {
      std::cerr << "bench_scale: " << flag << ": expected --case, --out, --tauplan or --keep\n";
      return 2;
    }
  }
  const fs::path dir =
      keep.empty() ? fs::temp_directory_path() / ("tauplan-bench-scale-" + std::to_string(getpid()))
                   : fs::path(keep);
  nlohmann::json all = nlohmann::json::array();
  bool known = chosen.empty();
  for (const Case& c : cases()) {
    bool wanted = chosen.empty();
    for (const std::string& name : chosen)
      wanted = wanted || name == c.name;
    if (!wanted) continue;
    known = true;
    all.push_back(run_case(c, tauplan, dir));
    print(all.back());
  }
  if (!known) {
    std::cerr << "bench_scale: --case: expected one of gpt3-3072, llama405-16k, gpt3-64-m64, "
                 "gpt3-64-m128, ratio-512\n";
    return 2;
  }
  if (keep.empty()) fs::remove_all(dir);
  if (!out_path.empty()) std::ofstream(out_path) << all.dump(2) << "\n";
  return 0;
}
