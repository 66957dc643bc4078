// sweep.cpp: the study behind `tauplan sweep` (see sweep.hpp).
#include "study/sweep/sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "exec/mpi_communicator.hpp"
#include "model/base/error.hpp"
#include "model/base/yaml_util.hpp"
#include "model/inputs/platform.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sim_job.hpp"
#include "study/common/child_process.hpp"
#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/grid.hpp"
#include "study/common/inputs.hpp"
#include "study/common/platform_file.hpp"
#include "study/common/revocation.hpp"

#ifdef TAUPLAN_HAVE_MPI
#include <mpi.h>
#endif

namespace tauplan::study {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// A string field of a JSON object, empty when absent or not a string.
std::string text_field(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// A point's record is kept (written to DIR/points) unless it says "keep": false.
bool keep_record(const json& record) {
  const auto it = record.find("keep");
  return it == record.end() || !it->is_boolean() || it->get<bool>();
}

struct Point {
  size_t index = 0;
  std::vector<std::pair<std::string, std::string>> values;  ///< swept keys, in axis order
  std::map<std::string, std::string> overrides;             ///< job flags + swept keys
  std::string hash;
  std::string platform;  ///< the platform file, resolved as every verb resolves it
  long long seed = 1;
};

/// Expected time with the job's MTBF failures (see the header comment). `servers` are the
/// server hosts the plan uses (failures of other hosts do not touch the job).
void apply_expected_failures(model::ResultRow& row, const model::Job& job,
                             const std::vector<std::string>& servers) {
  if (!job.has("failures")) return;
  std::set<std::string> hosts(servers.begin(), servers.end());
  if (row.extra.contains("workers_detail"))
    for (const auto& w : row.extra["workers_detail"])
      hosts.insert(text_field(w, "host"));
  double rate = 0;
  bool one_shot = false;
  for (const std::string& entry : job.list("failures")) {
    const sim::Failure f = sim::parse_failure(entry, job.origin_of("failures"));
    if (f.mtbf_s <= 0) {
      one_shot = true;
      continue;
    }
    if (f.host == "*")
      rate += row.workers / f.mtbf_s;
    else if (hosts.count(f.host))
      rate += 1 / f.mtbf_s;
  }
  const double restart = job.has("failure_restart_s") ? job.real("failure_restart_s") : 60.0;
  const study::ExpectedTime t = study::expected_total_time(row.round_s, row.rounds, rate, restart);
  row.extra["failure_free_total_s"] = row.total_s;
  row.extra["failure_rate_per_s"] = rate;
  row.extra["restart_s"] = restart;
  row.extra["total_s_stddev"] = t.stddev_s;
  row.extra["expected_failures"] = t.expected_revocations;
  row.extra["failures_model"] =
      std::string("expected time, closed form of study/common/revocation.hpp") +
      (one_shot ? "; HOST@TIME failures are not included" : "");
  row.total_s = t.mean_s;
}

/// Points evaluated in this process through an engine that shares it (the closed form), the
/// platform loaded once (they share it: no swept key changes it) and workloads kept by name.
class InProcessEngine {
 public:
  InProcessEngine(const model::Engine& engine, std::string job_file)
      : engine_(engine), job_file_(std::move(job_file)) {}

  json evaluate(const Point& point) {
    model::JobInputs inputs;
    inputs.job = model::load_job(job_file_, all_job_keys(), point.overrides);
    const model::Job& job = inputs.job;
    const std::string workload_name = job.text("workload");
    auto it = workloads_.find(workload_name);
    if (it == workloads_.end())
      it = workloads_.emplace(workload_name, load_job_workload(job)).first;
    inputs.workload = it->second;
    if (!platform_) {
      platform_path_ = resolve_platform_path(job);
      sim::NetworkOptions network = sim::network_options(job);
      network.origin = job.file;
      platform_ = std::make_unique<model::Platform>(load_user_platform(platform_path_, network));
    }
    inputs.platform_path = platform_path_;
    inputs.platform = *platform_;
    inputs.convergence = model::convergence_model(job, inputs.workload);
    inputs.options = model::strategy_options(job);
    inputs.strategies = job.list("strategies");
    model::RunContext context = make_context(inputs, engine_.verb(), engine_.name());
    std::vector<model::ResultRow> rows = engine_.run(inputs, context);
    const std::vector<model::Plan> plans = inputs.plans();
    // The failures' expected cost, for an engine that does not inject them; a row's servers
    // are its plan's (one row per plan, in the job's order).
    const bool one_row_per_plan = rows.size() == plans.size();
    for (size_t r = 0; r < rows.size() && !engine_.capabilities().injects_failures; ++r) {
      std::vector<std::string> servers;
      if (one_row_per_plan)
        for (int s : plans[r].server_hosts)
          servers.push_back(platform_->hosts[static_cast<size_t>(s)].name);
      apply_expected_failures(rows[r], job, servers);
    }
    model::fill_speedups(rows);
    json results = json::array();
    for (const auto& row : rows)
      results.push_back(model::to_json(row));
    json summary = {{"platform_file", context.platform_file},
                    {"platform_hash", context.platform_hash},
                    {"workload", it->second.name},
                    {"convergence", context.convergence},
                    {"network_model", context.network_model}};
    for (const char* key : {"platform_xml", "platform_xml_hash"})
      if (context.extra.count(key) != 0) summary[key] = context.extra.at(key);
    return {{"results", results}, {"context", summary}};
  }

 private:
  const model::Engine& engine_;
  std::string job_file_;
  std::string platform_path_;
  std::unique_ptr<model::Platform> platform_;
  std::map<std::string, model::Workload> workloads_;
};

/// The last non-empty line of a child's stderr, without the "tauplan: error: " prefix.
std::string child_error(const std::string& err_text, int status) {
  std::string last;
  std::istringstream in(err_text);
  for (std::string line; std::getline(in, line);)
    if (!trim(line).empty()) last = line;
  for (const char* prefix : {"tauplan: error: ", "tauplan: internal error: "})
    if (last.rfind(prefix, 0) == 0) last = last.substr(std::strlen(prefix));
  if (last.empty()) last = fmt::format("the child process ended with status {}", status);
  return last;
}

struct Rank {
  int rank = 0;
  int size = 1;
};

#ifdef TAUPLAN_HAVE_MPI
/// Rank 0 receives every rank's string (in rank order); other ranks get an empty list.
std::vector<std::string> gather_strings(const std::string& mine, const Rank& me) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(me.size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(static_cast<size_t>(me.size), 0);
  int total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::vector<char> buffer(static_cast<size_t>(std::max(total, 1)));
  MPI_Gatherv(mine.data(), length, MPI_CHAR, buffer.data(), lengths.data(), offsets.data(),
              MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> all;
  if (me.rank == 0)
    for (size_t r = 0; r < lengths.size(); ++r)
      all.emplace_back(buffer.data() + offsets[r], static_cast<size_t>(lengths[r]));
  return all;
}
#endif

std::string default_out_dir(const std::string& job_file) {
  if (job_file.empty()) return "sweep.out";
  return fs::path(job_file).stem().string() + ".sweep";
}

/// Under mpirun: joins the one MPI session of the whole sweep (rank 0 writes the result) and
/// fills `me`. False when this process is a rank other than 0 of a build without MPI: it
/// leaves the sweep to rank 0.
bool join_mpi(std::unique_ptr<exec::MpiSession>& mpi, Rank& me) {
  if (!exec::launched_by_mpi_launcher()) return true;
  if (exec::mpi_compiled()) {
    mpi = std::make_unique<exec::MpiSession>(nullptr, nullptr);
    me.rank = mpi->rank();
    me.size = mpi->size();
  } else if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK"); r && std::atoi(r) != 0) {
    std::fprintf(stderr, "tauplan sweep: built without MPI; rank %s leaves the sweep to rank 0\n",
                 r);
    return false;
  }
  return true;
}

/// The engine of --engine, which must predict (measurements would share the cores).
const model::Engine& sweep_engine(const std::string& name) {
  const model::Engine& chosen = engine(name);
  if (!chosen.capabilities().predicts) {
    throw InputError("command line", "--engine",
                     predicting_engines_text() + " (measurements would share the cores)",
                     "'" + name + "'");
  }
  return chosen;
}

/// The --set axes; a key may not be both swept and given as a job flag, and the engine reads
/// every key swept or given (sweep --engine analytic --set trace=... is refused, not ignored).
std::vector<Axis> sweep_axes(const SweepRequest& args, const std::vector<model::KeySpec>& specs,
                             const model::Engine& chosen) {
  if (args.sets.empty())
    throw InputError("command line", "--set", "at least one KEY=V1,V2,... to sweep", "nothing");
  std::vector<Axis> axes = parse_sets(args.sets, specs);
  const std::string who = std::string("sweep --engine ") + chosen.name();
  // An engine that injects no failures still takes them: the sweep adds their expected cost
  // in closed form (apply_expected_failures), so they are not checked against its readers.
  auto engine_keys = [&chosen](std::map<std::string, std::string> keys) {
    if (!chosen.capabilities().injects_failures)
      for (const char* key : {"failures", "failure_restart_s"})
        keys.erase(key);
    return keys;
  };
  refuse_keys_not_read(chosen, engine_keys(args.overrides), "command line", "--", who);
  for (const Axis& axis : axes) {
    if (args.overrides.count(axis.key))
      throw InputError("command line --set", axis.key,
                       "a key either swept or given as --" + axis.key, "both");
    refuse_keys_not_read(chosen,
                         engine_keys({{axis.key, fmt::format("{}", fmt::join(axis.values, ","))}}),
                         "command line --set", "", who);
  }
  return axes;
}

/// The bytes of the files a point's job names, as "file=HASH" lines: its platform (resolved as
/// every verb resolves it) and every value that names a regular file, relative to the job's
/// folder or to the current one (a workload, a convergence table). So a point
/// whose inputs were edited since it ran is not resumed. What it leaves out: files those files
/// name in turn (a platform's compute profile), and catalog entries (they change with a build).
std::string input_file_hashes(const model::Job& job) {
  std::set<std::string> files;
  std::error_code error;  // a path that cannot be examined names no file here
  const std::string platform = resolve_platform_path(job);
  if (fs::is_regular_file(platform, error)) files.insert(fs::absolute(platform).lexically_normal());
  const fs::path job_folder = job.folder;
  for (const auto& [key, value] : job.values()) {
    if (key == "trace" || value.empty() || value.size() > 4096) continue;  // trace: an output
    for (const fs::path& candidate : {job_folder / value, fs::path(value)})
      if (fs::is_regular_file(candidate, error)) {
        files.insert(fs::absolute(candidate).lexically_normal());
        break;
      }
  }
  std::string lines;
  for (const std::string& file : files)
    lines += file + "=" + model::fnv1a_hex(read_text(file)) + "\n";
  return lines;
}

/// The grid (the first axis varies slowest), each point checked before any work (a bad value
/// is an InputError: exit 2) and named by the hash of the job file's content, the engine, the
/// point's keys and the files they name (input_file_hashes).
std::vector<Point> grid_points(const SweepRequest& args, const std::vector<Axis>& axes,
                               const std::vector<model::KeySpec>& specs) {
  const std::string& job_file = args.job_file;
  const std::string job_text =
      job_file.empty() ? std::string() : model::yaml_util::read_file(job_file, "job");
  const std::string job_id =
      job_file.empty() ? "" : fs::absolute(job_file).lexically_normal().string();
  size_t total = 1;
  for (const Axis& axis : axes)
    total *= axis.values.size();
  std::vector<Point> points(total);
  for (size_t i = 0; i < total; ++i) {
    Point& p = points[i];
    p.index = i;
    p.overrides = args.overrides;
    size_t rest = i;
    std::vector<size_t> digit(axes.size());
    for (size_t a = axes.size(); a-- > 0;) {
      digit[a] = rest % axes[a].values.size();
      rest /= axes[a].values.size();
    }
    for (size_t a = 0; a < axes.size(); ++a) {
      p.values.emplace_back(axes[a].key, axes[a].values[digit[a]]);
      p.overrides[axes[a].key] = axes[a].values[digit[a]];
    }
    const model::Job job = load_point_job(job_file, specs, p.overrides, axes);  // exit 2
    std::string canonical =
        fmt::format("tauplan sweep point v1\nversion={}\nengine={}\njob={}\n{}\n",
                    model::tauplan_version(), args.engine, job_id, job_text);
    for (const auto& [k, v] : job.values())
      canonical += k + "=" + v + "\n";
    canonical += input_file_hashes(job);
    p.platform = resolve_platform_path(job);
    p.seed = job.integer("seed");
    p.hash = model::fnv1a_hex(canonical);
  }
  return points;
}

/// Points of an engine that shares the process (the closed form) run in this process when no
/// swept key changes the platform or the network model (they share one platform).
bool evaluates_in_process(const std::string& engine_name, const std::vector<Axis>& axes) {
  static const std::set<std::string> platform_keys = {"platform", "network_model", "crosstraffic",
                                                      "tcp_gamma"};
  return engine(engine_name).capabilities().shares_process &&
         std::none_of(axes.begin(), axes.end(),
                      [](const Axis& a) { return platform_keys.count(a.key); });
}

/// DIR, DIR/points (a record per finished point) and DIR/work (the children's output).
struct SweepFolders {
  fs::path out;
  fs::path points;
  fs::path work;
};

SweepFolders make_sweep_folders(const SweepRequest& args) {
  SweepFolders folders;
  folders.out = args.out.empty() ? fs::path(default_out_dir(args.job_file)) : fs::path(args.out);
  folders.points = folders.out / "points";
  folders.work = folders.out / "work";
  std::error_code ec;
  fs::create_directories(folders.points, ec);
  fs::create_directories(folders.work, ec);
  if (!fs::is_directory(folders.points))
    throw InputError("command line", "--out", "a folder that can be created and written",
                     "'" + folders.out.string() + "'");
  return folders;
}

/// Reads the records of the points already done (a damaged file or another hash is
/// recomputed) into `records`, marking them in `done`.
void resume_points(const std::vector<Point>& points, const fs::path& points_dir,
                   std::vector<char>& done, std::map<size_t, json>& records) {
  for (const Point& p : points) {
    const fs::path file = points_dir / (p.hash + ".json");
    if (!fs::is_regular_file(file)) continue;
    try {
      json record = json::parse(read_text(file.string()));
      if (text_field(record, "hash") != p.hash) continue;
      record["point"] = p.index;
      records[p.index] = std::move(record);
      done[p.index] = 1;
    } catch (const std::exception&) {
      // A damaged file is recomputed.
    }
  }
}

/// This rank's share of the points not done: round robin over them.
std::vector<size_t> pending_points(const std::vector<char>& done, const Rank& me) {
  std::vector<size_t> pending;
  for (size_t i = 0, k = 0; i < done.size(); ++i)
    if (!done[i]) {
      if (static_cast<int>(k % static_cast<size_t>(me.size)) == me.rank) pending.push_back(i);
      ++k;
    }
  return pending;
}

/// Where finished points go: their record completed (point, hash, values, engine), written to
/// DIR/points unless it says "keep": false, kept by point and in this rank's lines.
struct PointRecorder {
  const std::string& engine_name;
  const fs::path& points_dir;
  std::map<size_t, json>& records;  ///< point -> record (rank 0: all of them in the end)
  child::Progress& progress;
  std::string mine;  ///< this rank's new records, one JSON per line

  void finish(const Point& p, json record) {
    record["point"] = p.index;
    record["hash"] = p.hash;
    json values = json::object();
    for (const auto& [k, v] : p.values)
      values[k] = v;
    record["values"] = values;
    record["engine"] = engine_name;
    if (keep_record(record)) {
      record.erase("keep");
      write_atomically((points_dir / (p.hash + ".json")).string(), record.dump());
    }
    mine += record.dump() + "\n";
    records[p.index] = std::move(record);
    progress.advance();
  }
};

/// The pending points evaluated in this process by `chosen` (an engine that shares it).
void evaluate_in_process(const model::Engine& chosen, const std::string& job_file,
                         const std::vector<Point>& points, const std::vector<size_t>& pending,
                         PointRecorder& recorder) {
  InProcessEngine in_process(chosen, job_file);
  for (size_t i : pending) {
    json record;
    try {
      record = in_process.evaluate(points[i]);
      record["status"] = "ok";
    } catch (const InputError& e) {
      record = {{"status", "error"}, {"error", e.what()}};
    }
    recorder.finish(points[i], std::move(record));
  }
}

/// The record of a point from its child's output and exit status.
json child_record(const model::Engine& chosen, const std::string& job_file,
                  const std::vector<model::KeySpec>& specs, const Point& p, const std::string& out,
                  const std::string& err, int status) {
  json record;
  if (status == 0) {
    try {
      const json j = json::parse(out);
      std::vector<model::ResultRow> rows;
      for (const auto& r : j.at("results"))
        rows.push_back(row_from_json(r));
      if (!chosen.capabilities().injects_failures) {
        const model::Job job = model::load_job(job_file, specs, p.overrides);
        for (auto& row : rows)
          apply_expected_failures(row, job, {});
      }
      model::fill_speedups(rows);
      json results = json::array();
      for (const auto& row : rows)
        results.push_back(model::to_json(row));
      record = {
          {"status", "ok"}, {"results", results}, {"context", j.value("context", json::object())}};
    } catch (const std::exception& e) {
      record = {{"status", "error"},
                {"error", std::string("unreadable output of the child: ") + e.what()},
                {"keep", false}};
    }
  } else {
    // Exit 2 (bad input, simulation error) is a property of the point: keep it. A crash
    // or a kill is not: the next run retries the point.
    record = {{"status", "error"}, {"error", child_error(err, status)}, {"exit_status", status}};
    if (status != kExitBadInput) record["keep"] = false;
  }
  return record;
}

/// The pending points evaluated by one child process each, `jobs` at a time.
void evaluate_in_children(const model::Engine& chosen, const std::string& job_file,
                          const std::vector<model::KeySpec>& specs,
                          const std::vector<Point>& points, const std::vector<size_t>& pending,
                          int jobs, const fs::path& work_dir, PointRecorder& recorder) {
  std::vector<child::Task> tasks;
  for (size_t i : pending) {
    const Point& p = points[i];
    const std::string stem = fmt::format("{}.{}", p.hash, getpid());
    tasks.push_back(engine_task(chosen, job_file, p.overrides,
                                (work_dir / (stem + ".out")).string(),
                                (work_dir / (stem + ".err")).string()));
  }
  child::run_all(tasks, jobs, [&](size_t t, int status) {
    const Point& p = points[pending[t]];
    const std::string out = read_text(tasks[t].out_path);
    const std::string err = read_text(tasks[t].err_path);
    std::error_code ec;
    fs::remove(tasks[t].out_path, ec);
    fs::remove(tasks[t].err_path, ec);
    recorder.finish(p, child_record(chosen, job_file, specs, p, out, err, status));
  });
}

#ifdef TAUPLAN_HAVE_MPI
/// Rank 0 receives the other ranks' records (and keeps them in its DIR/points too, in case the
/// ranks do not share a file system).
void gather_rank_records(const Rank& me, const fs::path& points_dir, PointRecorder& recorder) {
  const std::vector<std::string> all = gather_strings(recorder.mine, me);
  for (size_t r = 1; r < all.size(); ++r) {
    std::istringstream lines(all[r]);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      json record = json::parse(line);
      const size_t index = record.at("point").get<size_t>();
      // Keep it here too, in case the ranks do not share a file system.
      if (keep_record(record))
        write_atomically((points_dir / (text_field(record, "hash") + ".json")).string(),
                         record.dump());
      recorder.records[index] = std::move(record);
      recorder.progress.advance();
    }
  }
}
#endif

/// Every point's record merged in point order: the CSV, the flat results and the errors.
struct MergedSweep {
  std::string csv;
  json results = json::array();
  json errors = json::array();
  size_t failed = 0;
};

MergedSweep merge_records(const std::vector<Point>& points, const std::vector<Axis>& axes,
                          const std::map<size_t, json>& records) {
  MergedSweep merged;
  std::string& csv = merged.csv;
  csv = "point";
  for (const Axis& axis : axes)
    csv += "," + csv_field("set." + axis.key);
  csv +=
      ",status,strategy,workers,tau,batch,collective,split,round_s,compute_s,comm_s,rounds,"
      "total_s,speedup,engine,timing\n";
  for (const Point& p : points) {
    const auto it = records.find(p.index);
    if (it == records.end())
      throw std::logic_error(fmt::format("sweep point {} is missing", p.index));
    const json& record = it->second;
    std::string prefix = std::to_string(p.index);
    for (const auto& kv : p.values)
      prefix += "," + csv_field(kv.second);
    if (text_field(record, "status") != "ok") {
      ++merged.failed;
      csv += prefix + ",error" + std::string(14, ',') + "\n";
      json e = {{"point", p.index}, {"error", text_field(record, "error")}};
      for (const auto& [k, v] : p.values)
        e[k] = v;
      merged.errors.push_back(e);
      continue;
    }
    std::vector<model::ResultRow> rows;
    for (const auto& r : record.at("results"))
      rows.push_back(row_from_json(r));
    std::istringstream lines(model::to_csv(rows, false));
    for (std::string line; std::getline(lines, line);)
      csv += prefix + ",ok," + line + "\n";
    for (const auto& r : record.at("results")) {
      json flat = {{"point", p.index}};
      for (const auto& [k, v] : p.values)
        flat[k] = v;
      flat.update(r);
      merged.results.push_back(flat);
    }
  }
  return merged;
}

/// How the sweep ran, for its JSON context and its summary line.
struct SweepRun {
  const SweepRequest& args;
  const std::vector<Point>& points;
  const model::Engine& chosen;
  Rank me;
  size_t total = 0;
  size_t resumed = 0;
  int jobs = 1;
  bool in_process = false;
  fs::path out_dir;
};

json sweep_document(const SweepRun& run, const std::vector<Axis>& axes, const MergedSweep& merged) {
  json axes_json = json::array();
  for (const Axis& axis : axes)
    axes_json.push_back({{"key", axis.key}, {"values", axis.values}});
  json context = {{"tool", "tauplan"},
                  {"version", model::tauplan_version()},
                  {"commit", model::tauplan_git_commit()},
                  {"date", model::utc_now_iso8601()},
                  {"verb", "sweep"},
                  {"engine", run.args.engine},
                  {"job_file", run.args.job_file},
                  {"points", run.total},
                  {"resumed", run.resumed},
                  {"failed", merged.failed},
                  {"mpi_ranks", run.me.size},
                  {"evaluation", run.in_process ? "in process" : "one child process per point"},
                  {"out_dir", run.out_dir.string()}};
  // The points' platforms and seeds: one value, or every distinct one when swept.
  std::set<std::string> platforms;
  std::set<long long> seeds;
  for (const Point& p : run.points) {
    platforms.insert(p.platform);
    seeds.insert(p.seed);
  }
  context["platform_file"] = platforms.size() == 1 ? json(*platforms.begin()) : json(platforms);
  context["seed"] = seeds.size() == 1 ? json(*seeds.begin()) : json(seeds);
  if (const std::string version = run.chosen.library_version(); !version.empty())
    context[std::string(run.chosen.name()) + "_version"] = version;
  return {{"context", context},
          {"axes", axes_json},
          {"results", merged.results},
          {"errors", merged.errors}};
}

/// For stderr: the counts, where the results are, each failed point.
std::string sweep_summary(const SweepRun& run, const MergedSweep& merged) {
  std::string summary = fmt::format(
      "# sweep: {} points ({} resumed, {} computed, {} failed), engine {}, "
      "{}; results in {} (commit {})\n",
      run.total, run.resumed, run.total - run.resumed, merged.failed, run.args.engine,
      run.me.size > 1 ? fmt::format("{} MPI ranks", run.me.size)
                      : (run.in_process ? "in process" : fmt::format("{} jobs", run.jobs)),
      (run.out_dir / "sweep.csv").string(), model::tauplan_git_commit());
  // --jobs is accepted whichever way the points run; said when it could not apply.
  if (run.in_process && run.args.jobs > 0 && run.me.size == 1)
    summary += fmt::format(
        "# note: command line: --jobs {} unused: the points ran in this process, one after "
        "another (the {} engine over one platform; a swept platform or network model runs "
        "one child process per point, --jobs at a time)\n",
        run.args.jobs, run.args.engine);
  for (const auto& e : merged.errors)
    summary += fmt::format("# point {}: {}\n", e.at("point").get<size_t>(),
                           e.at("error").get<std::string>());
  return summary;
}

}  // namespace

SweepOutcome run_sweep(const SweepRequest& args) {
  std::unique_ptr<exec::MpiSession> mpi;
  Rank me;
  if (!join_mpi(mpi, me)) return {};
  const bool reporter = me.rank == 0;

  const model::Engine& chosen = sweep_engine(args.engine);
  const std::vector<model::KeySpec> specs = all_job_keys();
  const std::vector<Axis> axes = sweep_axes(args, specs, chosen);
  const std::vector<Point> points = grid_points(args, axes, specs);
  const size_t total = points.size();
  const bool in_process = evaluates_in_process(args.engine, axes);
  if (!in_process && !chosen.capabilities().runs_as_verb)
    throw InputError("command line", "--engine",
                     "an engine the command line runs as a verb, for points in child processes "
                     "(a swept key changes the platform, or the engine does not share the "
                     "process)",
                     "'" + args.engine + "'");
  const SweepFolders folders = make_sweep_folders(args);

  // Points already done (rank 0 decides, so that every rank shares the same list).
  std::vector<char> done(total, 0);
  std::map<size_t, json> records;  // point -> record (rank 0: all of them in the end)
  if (reporter && !args.fresh) resume_points(points, folders.points, done, records);
  if (mpi) mpi->broadcast(done.data(), static_cast<int>(done.size()), 0);
  const size_t resumed = static_cast<size_t>(std::count(done.begin(), done.end(), 1));
  const std::vector<size_t> pending = pending_points(done, me);

  const int jobs = args.jobs > 0
                       ? args.jobs
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  child::Progress progress(
      fmt::format("sweep{} {}", me.size > 1 ? fmt::format(" (rank 0 of {})", me.size) : "",
                  args.engine),
      total, resumed, reporter && !args.quiet);
  PointRecorder recorder{args.engine, folders.points, records, progress, {}};
  if (in_process)
    evaluate_in_process(chosen, args.job_file, points, pending, recorder);
  else
    evaluate_in_children(chosen, args.job_file, specs, points, pending, jobs, folders.work,
                         recorder);
#ifdef TAUPLAN_HAVE_MPI
  if (mpi && me.size > 1) gather_rank_records(me, folders.points, recorder);
#endif
  progress.finish();
  if (!reporter) return {};

  const MergedSweep merged = merge_records(points, axes, records);
  const SweepRun run{args, points, chosen, me, total, resumed, jobs, in_process, folders.out};
  const json document = sweep_document(run, axes, merged);
  write_atomically((folders.out / "sweep.csv").string(), merged.csv);
  write_atomically((folders.out / "sweep.json").string(), document.dump(2) + "\n");
  std::error_code ec;
  fs::remove(folders.work, ec);  // only if empty
  SweepOutcome outcome;
  outcome.reporter = true;
  outcome.document = document;
  outcome.csv = merged.csv;
  outcome.failed = merged.failed;
  outcome.summary = sweep_summary(run, merged);
  return outcome;
}

}  // namespace tauplan::study
