// reproduce_hetseq.cpp: HetSeq's BERT scaling (arXiv 2009.14783), simulated; see reproduce.hpp.
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "model/ir/strategy.hpp"
#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/gnuplot.hpp"
#include "study/reproduce/reproduce_support.hpp"

namespace tauplan::study {

using namespace reproduction;

const char* hetseq_experiment() {
  return "hetseq";
}

namespace {

constexpr int kPerGpu = 32;       // --max-sentences 32 (yifding/hetseq README and job scripts)
constexpr int kMicroBatches = 4;  // --update-freq 4 (same sources)

// The repository's performance table (yifding/hetseq README, "Performance table": BERT on 1,
// 2, 4, 8 nodes of 4 GPUs, 5 epochs): average time per step, by nodes.
const std::map<int, double>& published_step() {
  static const std::map<int, double> step = {{1, 2.60}, {2, 2.69}, {4, 2.794}, {8, 3.126}};
  return step;
}

// The same table's speedup (of training time), by nodes.
const std::map<int, double>& published_speedup() {
  static const std::map<int, double> speedup = {{1, 1.0}, {2, 1.72}, {4, 3.22}, {8, 5.94}};
  return speedup;
}

// The hosts of the 4 GPUs of each of `nodes`, comma-separated.
std::string gpu_hosts(const std::vector<int>& nodes) {
  std::string hosts;
  for (int n : nodes)
    for (int g = 0; g < 4; ++g)
      hosts += fmt::format("{}n{}-gpu{}", hosts.empty() ? "" : ",", n, g);
  return hosts;
}

/// What the steps of one HetSeq reproduction share.
struct HetseqRun {
  const ReproduceRequest& args;
  std::string sync;
  fs::path dir;
  // Scaling: the repository's configuration on the cluster of its table; mixed generations: a
  // what-if of our own (hetseq-university), not in the paper.
  fs::path repo_job;
  fs::path job;
  std::vector<int> node_counts;
  std::vector<SimPoint> points;  ///< the scaling points (one per node count), then the mixed ones
};

// Sets up the run: its folder, job files and node counts.
HetseqRun start_run(const ReproduceRequest& args) {
  HetseqRun run{args,
                model::sync_strategy().name(),
                fs::path(args.out) / hetseq_experiment(),
                experiments_dir(args) / hetseq_experiment() / "bert-base-repo.yaml",
                experiments_dir(args) / hetseq_experiment() / "bert-base.yaml",
                args.reduced ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 4, 8},
                {}};
  fs::create_directories(run.dir);
  return run;
}

// Simulates the scaling points (1..8 nodes) and the mixed cluster's even and speed splits.
void simulate_hetseq(HetseqRun& run) {
  const std::string simulate = engine("simgrid").verb();
  const std::vector<int> mixed_nodes{0, 2, 4, 6};  // V100, TITAN Xp, RTX 2080 Ti, GTX 1080 Ti
  for (int n : run.node_counts) {
    std::vector<int> nodes;
    for (int i = 0; i < n; ++i)
      nodes.push_back(i);
    run.points.push_back(
        {fmt::format("scaling nodes={}", n),
         {simulate, run.repo_job.string(), "--workers", std::to_string(4 * n), "--batch",
          std::to_string(kPerGpu * kMicroBatches * 4 * n), "--hosts", gpu_hosts(nodes)},
         json()});
  }
  for (const char* split : {"even", "speed"})
    run.points.push_back(
        {fmt::format("mixed split={}", split),
         {simulate, run.job.string(), "--workers", "16", "--batch", std::to_string(kPerGpu * 16),
          "--hosts", gpu_hosts(mixed_nodes), "--split", split},
         json()});
  simulate_points(run.points, run.dir / ".scratch", run.args.jobs, "simulating BERT-base");
}

// Prints the scaling points, writes scaling.csv and returns their rows.
json report_scaling(const HetseqRun& run, std::ostream& out) {
  std::string scaling =
      "nodes,gpus,batch,step_s,compute_s,comm_s,samples_per_s,speedup,efficiency,"
      "published_speedup,published_step_s\n";
  json scaling_rows = json::array();
  double base = 0;
  out << "HetSeq BERT-base as its repository runs it (simulated on hetseq-crc-titanxp: sync ring, "
         "DDP buckets, "
      << kPerGpu << " sequences per GPU x " << kMicroBatches << " accumulated micro-batches):\n";
  for (size_t i = 0; i < run.node_counts.size(); ++i) {
    const json& r = row_of(run.points[i], run.sync);
    const int n = run.node_counts[i];
    const double step = r.at("round_s").get<double>(), batch = r.at("batch").get<double>();
    const double rate = batch / step;
    if (i == 0) base = rate;
    const double speedup = rate / base, eff = speedup * run.node_counts.front() / n;
    scaling +=
        fmt::format("{},{},{:g},{:.6g},{:.6g},{:.6g},{:.2f},{:.4f},{:.4f},{:g},{:g}\n", n, 4 * n,
                    batch, step, r.at("compute_s").get<double>(), r.at("comm_s").get<double>(),
                    rate, speedup, eff, published_speedup().at(n), published_step().at(n));
    scaling_rows.push_back({{"nodes", n},
                            {"gpus", 4 * n},
                            {"step_s", step},
                            {"samples_per_s", rate},
                            {"speedup", speedup},
                            {"efficiency", eff},
                            {"simulated", r}});
    out << fmt::format(
        "  {} node(s) x 4 GPUs: step {:.3f} s, {:.0f} sequences/s, speedup "
        "{:.2f}, efficiency {:.0f}%\n",
        n, step, rate, speedup, 100 * eff);
  }
  write_text((run.dir / "scaling.csv").string(), scaling);
  return scaling_rows;
}

// Sets the repository's time per step and speedup beside ours (printed, published.csv).
json report_hetseq_published(const HetseqRun& run, const json& scaling_rows, std::ostream& out) {
  const std::string source = "yifding/hetseq README, \"Performance table\"";
  std::vector<Published> published;
  for (const json& row : scaling_rows) {
    const int n = row.at("nodes").get<int>();
    Published p;
    p.quantity = fmt::format("time per step, {} node(s) x 4 GPUs", n);
    p.source = source + " (\"avg. time per step\")";
    p.published = published_step().at(n);
    p.ours = row.at("step_s").get<double>();
    p.unit = "s";
    if (n == 1)
      p.calibrated_from_it =
          "the GPUs' efficiency in platforms/hetseq-crc-titanxp.xml is fitted to this step";
    published.push_back(p);
  }
  for (const json& row : scaling_rows) {
    const int n = row.at("nodes").get<int>();
    if (n == 1) continue;  // 1 by definition
    Published p;
    p.quantity = fmt::format("speedup over 1 node, {} nodes", n);
    p.source = source + " (\"speedup\": training time of 5 epochs, 1 node over N)";
    p.published = published_speedup().at(n);
    p.ours = row.at("speedup").get<double>();
    p.unit = "x";
    p.note = "weak scaling: the global batch grows with the nodes, steps per epoch fall";
    published.push_back(p);
  }
  return report_published(published, run.dir, out);
}

// Prints the mixed cluster's even and speed splits, writes mixed.csv and returns their rows.
json report_mixed(const HetseqRun& run, std::ostream& out) {
  std::string mixed = "split,gpus,batch,step_s,compute_s,comm_s,samples_per_s\n";
  json mixed_rows = json::array();
  double even_step = 0;
  const size_t first = run.node_counts.size();
  for (size_t i = first; i < run.points.size(); ++i) {
    const json& r = row_of(run.points[i], run.sync);
    const std::string split = r.at("split").get<std::string>();
    const double step = r.at("round_s").get<double>(), batch = r.at("batch").get<double>();
    if (i == first) even_step = step;
    mixed +=
        fmt::format("{},16,{:g},{:.6g},{:.6g},{:.6g},{:.2f}\n", split, batch, step,
                    r.at("compute_s").get<double>(), r.at("comm_s").get<double>(), batch / step);
    mixed_rows.push_back(
        {{"split", split}, {"step_s", step}, {"samples_per_s", batch / step}, {"simulated", r}});
    out << fmt::format(
        "  mixed V100 + TITAN Xp + 2080 Ti + 1080 Ti (16 GPUs), {} split: "
        "step {:.3f} s{}\n",
        split, step,
        i > first ? fmt::format(" ({:.1f}% faster than even)", 100 * (even_step / step - 1)) : "");
  }
  write_text((run.dir / "mixed.csv").string(), mixed);
  return mixed_rows;
}

// Writes the scaling and mixed gnuplot scripts and draws them.
void plot_hetseq(const HetseqRun& run, std::vector<std::string>& notes) {
  const std::string scaling_body = fmt::format(
      "set key autotitle columnhead\nset title 'BERT-base as yifding/hetseq runs it, on "
      "hetseq-crc-titanxp (simulated), {} sequences per GPU x 4 micro-batches'\n"
      "set xlabel 'nodes (4 GPUs each)'\nset ylabel 'speedup in sequences/s over 1 node (x)'\n"
      "set y2label 'scaling efficiency (%)'\nset ytics nomirror\nset y2tics\nset logscale x 2\n"
      "set xtics ({})\nset xrange [0.8:10]\nset yrange [0:*]\nset y2range [0:110]\nset grid\nset "
      "key top left\n"
      "plot 'scaling.csv' using 1:8 with linespoints lw 2 pt 7 title 'speedup (simulated)', '' "
      "using 1:10 with points pt 5 ps 1.5 lc rgb 'black' title 'speedup (yifding/hetseq README)', "
      "'' "
      "using 1:1 with lines dt 2 lc rgb 'gray' title 'linear', '' using 1:($9*100) axes x1y2 "
      "with linespoints lw 2 pt 5 title 'efficiency (%)'",
      kPerGpu, join_ints(run.node_counts));
  write_text((run.dir / "scaling.gp").string(),
             two_terminals("reproduce", "scaling", "900,520", scaling_body));
  run_gnuplot(run.dir, "scaling.gp", notes);
  const std::string mixed_body =
      "set key autotitle columnhead\nset style data histograms\nset style histogram rowstacked\n"
      "set style fill solid 0.8 border -1\nset boxwidth 0.5\n"
      "set title 'BERT-base on 16 mixed GPUs (V100, TITAN Xp, RTX 2080 Ti, GTX 1080 Ti; "
      "simulated)'\nset xlabel 'batch split'\nset ylabel 'time per step (s)'\nset yrange [0:*]\n"
      "set key top right\n"
      "plot 'mixed.csv' using 5:xtic(1) title 'compute (slowest GPU)', '' using ($4-$5) title "
      "'exposed communication'";
  write_text((run.dir / "mixed.gp").string(),
             two_terminals("reproduce", "mixed", "800,520", mixed_body));
  run_gnuplot(run.dir, "mixed.gp", notes);
}

}  // namespace

void reproduce_hetseq(const ReproduceRequest& args, std::ostream& out,
                      std::vector<std::string>& notes) {
  HetseqRun run = start_run(args);
  simulate_hetseq(run);
  const json scaling_rows = report_scaling(run, out);
  const json published_json = report_hetseq_published(run, scaling_rows, out);
  const json mixed_rows = report_mixed(run, out);
  plot_hetseq(run, notes);
  json all = {{"context", context_json(hetseq_experiment(), args)},
              {"job", run.job.string()},
              {"repo_job", run.repo_job.string()},
              {"per_gpu_batch", kPerGpu},
              {"micro_batches", kMicroBatches},
              {"published", published_json},
              {"scaling", scaling_rows},
              {"mixed", mixed_rows}};
  write_text((run.dir / "results.json").string(), all.dump(2) + "\n");
  out << "  wrote " << run.dir.string() << "/{scaling,mixed}.csv, results.json, *.png, *.svg\n";
}

}  // namespace tauplan::study
