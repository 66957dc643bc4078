// job.cpp: the model's job keys, the strict job loader, unit parsing, and job -> options.
#include "model/ir/job.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/notice.hpp"
#include "model/base/yaml_util.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/layout.hpp"
#include "model/ir/token_target.hpp"

namespace tauplan::model {

namespace {

/// The keys only a predicting engine reads: what-if times and the convergence model.
bool is_predicted_only(const std::string& name) {
  static const std::set<std::string> names = {"compute_s",
                                              "comm_s",
                                              "step_overhead_s",
                                              "convergence",
                                              "iterations",
                                              "rounds",
                                              "tokens",
                                              "min_steps",
                                              "critical_batch",
                                              "drift",
                                              "convergence_table",
                                              "staleness_cost"};
  return names.count(name) > 0;
}

}  // namespace

std::vector<KeySpec> model_job_keys() {
  std::vector<KeySpec> keys;
  // A plain key, a key with a set of allowed words, and a numeric key with a range.
  auto add = [&keys](const char* name, KeyType type, const std::string& value, std::string help) {
    KeySpec spec;
    spec.name = name;
    spec.type = type;
    if (type == KeyType::Path) spec.max_length = kMaxPathLength;
    spec.default_value = value;
    spec.help = std::move(help);
    keys.push_back(spec);
    return &keys.back();
  };
  auto add_choice = [&add](const char* name, KeyType type, const std::string& value,
                           std::string help, std::vector<std::string> choices) {
    add(name, type, value, std::move(help))->choices = std::move(choices);
  };
  auto add_range = [&add](const char* name, KeyType type, const std::string& value,
                          std::string help, double min, double max = 1e300,
                          bool min_exclusive = false) {
    KeySpec* spec = add(name, type, value, std::move(help));
    spec->min_value = min;
    spec->max_value = max;
    spec->min_exclusive = min_exclusive;
  };
  // Upper limits: far beyond any real job, low enough that every product of them stays finite.
  constexpr double kMaxWorkers = 1e6;
  constexpr double kMaxBatch = 1e9;  // samples in one step
  constexpr double kMaxTau = 1e6;
  constexpr double kMaxSeconds = 1e9;  // about 32 years
  // A step's time: a nanosecond is below any real step (a kernel launch takes microseconds),
  // far above the subnormal numbers whose reciprocals overflow a speedup.
  constexpr double kMinStepSeconds = 1e-9;
  constexpr double kMaxBytes = 1e18;
  constexpr double kMaxSteps = kMaxConvergenceSteps;
  add("workload", KeyType::Text, "alexnet",
      fmt::format("catalog name ({}) or a workload YAML file",
                  fmt::join(catalog_workload_names(), ", ")))
      ->max_length = kMaxPathLength;
  add("platform", KeyType::Text, "sparknet-ec2",
      "SimGrid platform XML, or a cluster spec (.yaml/.yml: preset, nodes and overrides, "
      "generated into a cached XML; platforms/README.md): a file, or the name of one in "
      "platforms/ or platforms/clusters/")
      ->max_length = kMaxPathLength;
  add_choice("strategies", KeyType::TextList,
             fmt::format("{}", fmt::join(default_strategy_names(), ",")), "strategies to evaluate",
             strategy_names());
  add_range("workers", KeyType::Integer, "4", "K, the number of workers", 1, kMaxWorkers);
  add("hosts", KeyType::TextList, "", "explicit worker hosts (default: the first K workers)");
  add("single_host", KeyType::Text, "", "host of the single-worker baseline (default: fastest)");
  add_range("batch", KeyType::Integer, "256",
            "b: global batch for single and sync, per-worker batch for local-sgd", 1, kMaxBatch);
  add_range("tau", KeyType::Integer, "10", "local steps per round for local-sgd", 1, kMaxTau);
  add_range("round_budget_s", KeyType::Seconds, "",
            "local-sgd: time budget per round instead of tau; each worker takes as many local "
            "steps as fit (steps differ per worker), parameters averaged weighted by steps",
            kMinStepSeconds, kMaxSeconds);
  add_choice("split", KeyType::Text, "even", "how sync splits the batch over workers",
             {"even", "speed"});
  add_choice("collective", KeyType::Text, default_collective(), "collective algorithm",
             collective_algorithm_names());
  add_range("servers", KeyType::Integer, "1",
            "parameter servers used by `ps` and by async-ps (the update is sharded over them)", 1,
            kMaxWorkers);
  add_range("staleness_bound", KeyType::Integer, "0",
            "async-ps: SSP bound s, a worker may not start step t+s+1 before every worker has "
            "pushed step t (0 = unbounded)",
            0, kMaxTau);
  add_range("micro_batches", KeyType::Integer, "1",
            "sync: micro-batches per step, gradients accumulated before one all-reduce "
            "(HetSeq's and fairseq's --update-freq; memory is checked per micro-batch)",
            1, kMaxBatch);
  add("overlap", KeyType::Boolean, "false",
      "sync: overlap the all-reduce with backward in gradient buckets (needs workload layers)");
  add_range("bucket_bytes", KeyType::Bytes, "25MiB", "gradient bucket size when overlapping", 0,
            kMaxBytes, true);
  add_range("step_overhead_s", KeyType::Seconds, "0", "fixed cost of every training step", 0,
            kMaxSeconds);
  add_range("compute_s", KeyType::Seconds, "",
            "what-if: C(b) in seconds on the fastest worker, instead of flop / speed",
            kMinStepSeconds, kMaxSeconds);
  add_range("comm_s", KeyType::Seconds, "", "what-if: S in seconds per synchronisation", 0,
            kMaxSeconds);
  add("check_memory", KeyType::Boolean, "true", "fail when a batch does not fit in GPU memory");
  add_choice("convergence", KeyType::Text, "fixed", "how Na(b) and Ma(b,K,tau) are obtained",
             {"fixed", "critical-batch", "table"});
  add_range("iterations", KeyType::Real, "1000", "fixed: Na(b), serial iterations", 0, kMaxSteps,
            true);
  add_range("rounds", KeyType::Real, "", "fixed: Ma, rounds of local-sgd (default iterations/tau)",
            0, kMaxSteps, true);
  add("tokens", KeyType::Text, "",
      "target in tokens instead of convergence: 15T, 2.5B, 300G, 3e11 (suffix K, M, G or B, T); "
      "transformer workloads only: steps = ceil(tokens / (sequence x batch)); the output adds "
      "steps, tokens/s, days and GPU-hours");
  add_range("min_steps", KeyType::Real, "", "critical-batch: Smin", 0, kMaxSteps, true);
  add_range("critical_batch", KeyType::Real, "", "critical-batch: Bcrit (samples)", 0,
            kMaxCriticalBatch, true);
  add_range("drift", KeyType::Real, "0", "critical-batch: local-SGD drift c in [0, 1]", 0, 1);
  add("convergence_table", KeyType::Path, "", "table: CSV batch,workers,tau,steps");
  add_range("staleness_cost", KeyType::Real, "1",
            "async-ps: kappa in updates to target = Na(b) (1 + kappa x mean staleness); 1 is "
            "the noiseless worst case (Arjevani et al. 2018), 0 the noise-dominated limit",
            0, 1e6);
  add_range("seed", KeyType::Integer, "1", "seed of every random choice", 0, 1e15);
  // What-if times and the convergence model are read by the engines that predict from the
  // Plan; exec times its steps and trains to target_accuracy instead (exec/job_keys.cpp).
  for (KeySpec& key : keys)
    if (is_predicted_only(key.name)) key.read_by = {"analytic", "simgrid"};
  for (const KeySpec& key : layout_job_keys())  // model/ir/layout.hpp; a key declared above wins
    if (std::none_of(keys.begin(), keys.end(),
                     [&key](const KeySpec& declared) { return declared.name == key.name; }))
      keys.push_back(key);
  return keys;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const KeySpec* find_spec(const std::vector<KeySpec>& specs, const std::string& key) {
  for (const auto& spec : specs)
    if (spec.name == key) return &spec;
  return nullptr;
}

[[noreturn]] void unknown_key(const std::vector<KeySpec>& specs, const std::string& key,
                              const std::string& origin) {
  std::vector<std::string> names;
  for (const auto& spec : specs)
    names.push_back(spec.name);
  const std::string best = nearest_name(key, names);
  throw InputError(origin, key,
                   best.empty() ? "a known job key (tauplan help-keys lists them)"
                                : "a known job key (did you mean '" + best + "'?)",
                   "an unknown key");
}

std::string type_name(KeyType type) {
  switch (type) {
    case KeyType::Integer:
      return "a whole number";
    case KeyType::Real:
      return "a number";
    case KeyType::Seconds:
      return "seconds";
    case KeyType::Bytes:
      return "bytes";
    case KeyType::Boolean:
      return "true or false";
    case KeyType::Text:
      return "a word";
    case KeyType::Path:
      return "a file path";
    case KeyType::TextList:
      return "a list of words";
  }
  return "?";
}

// Checks one raw value against its spec; returns the normalised raw string.
// A value longer than `limit` characters is refused, naming the limit.
void check_length(const std::string& value, std::size_t limit,
                  const std::pair<std::string, std::string>& where) {
  if (value.size() <= limit) return;
  throw InputError(where, fmt::format("at most {} characters", limit),
                   fmt::format("{} characters", value.size()));
}

// `where`: {file, key}, or {"command line", "--key"} for a flag.
std::string validate(const KeySpec& spec, const std::string& raw,
                     const std::pair<std::string, std::string>& where) {
  if (spec.type != KeyType::TextList)
    check_length(
        raw,
        spec.type == KeyType::Text || spec.type == KeyType::Path ? spec.max_length : kMaxNameLength,
        where);
  double value = 0;
  switch (spec.type) {
    case KeyType::Integer: {
      double n = 0;
      if (!parse_number(raw, n) || n != std::floor(n))
        throw InputError(where, type_name(spec.type), "'" + raw + "'");
      // Whole numbers are kept exactly: at most 2^53 (every key also has its own maximum).
      if (std::abs(n) > kLargestWholeNumber)
        throw InputError(where,
                         fmt::format("a whole number of at most {:g}",
                                     std::min(spec.max_value, kLargestWholeNumber)),
                         "'" + raw + "'");
      value = n;
      break;
    }
    case KeyType::Real:
      if (!parse_number(raw, value))
        throw InputError(where, "a number without unit", "'" + raw + "'");
      break;
    case KeyType::Seconds:
      value = parse_seconds(raw, where.first, where.second);
      break;
    case KeyType::Bytes:
      value = parse_bytes(raw, where.first, where.second);
      break;
    case KeyType::Boolean: {
      const std::string b = lower(raw);
      if (b == "true" || b == "yes" || b == "on" || b == "1") return "true";
      if (b == "false" || b == "no" || b == "off" || b == "0") return "false";
      throw InputError(where, "true or false", "'" + raw + "'");
    }
    case KeyType::Text:
      if (!spec.choices.empty() &&
          std::find(spec.choices.begin(), spec.choices.end(), raw) == spec.choices.end())
        throw InputError(where, fmt::format("one of {}", fmt::join(spec.choices, ", ")),
                         "'" + raw + "'");
      return raw;
    case KeyType::Path:
      return raw;
    case KeyType::TextList: {
      std::string normalised;
      size_t start = 0;
      while (start <= raw.size() && !raw.empty()) {
        const size_t comma = raw.find(',', start);
        std::string item =
            raw.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (item.empty()) throw InputError(where, "a list without empty items", "'" + raw + "'");
        check_length(item, spec.max_length, where);
        if (!spec.choices.empty() &&
            std::find(spec.choices.begin(), spec.choices.end(), item) == spec.choices.end())
          throw InputError(where, fmt::format("items among {}", fmt::join(spec.choices, ", ")),
                           "'" + item + "'");
        normalised += (normalised.empty() ? "" : ",") + item;
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      return normalised;
    }
  }
  const bool below = spec.min_exclusive ? value <= spec.min_value : value < spec.min_value;
  if (below || value > spec.max_value) {
    std::string range;
    if (spec.max_value < 1e300)
      range = spec.min_exclusive
                  ? fmt::format("above {:g} and at most {:g}", spec.min_value, spec.max_value)
                  : fmt::format("between {:g} and {:g}", spec.min_value, spec.max_value);
    else
      range = fmt::format("{} {:g}", spec.min_exclusive ? ">" : ">=", spec.min_value);
    throw InputError(where, type_name(spec.type) + " " + range, "'" + raw + "'");
  }
  return raw;
}

}  // namespace

bool Job::has(const std::string& key) const {
  const auto it = values_.find(key);
  return it != values_.end() && !it->second.empty();
}

const KeySpec& Job::spec(const std::string& key) const {
  const KeySpec* s = find_spec(specs, key);
  if (!s) throw std::logic_error("job key '" + key + "' is not declared");
  return *s;
}

namespace {
const std::string& required_value(const Job& job, const std::map<std::string, std::string>& values,
                                  const std::string& key) {
  job.spec(key);
  const auto it = values.find(key);
  if (it == values.end() || it->second.empty())
    throw InputError(job.file, key, "a value (" + job.spec(key).help + ")", "nothing");
  return it->second;
}
}  // namespace

long long Job::integer(const std::string& key) const {
  return std::llround(std::stod(required_value(*this, values_, key)));
}

double Job::real(const std::string& key) const {
  const std::string& raw = required_value(*this, values_, key);
  switch (spec(key).type) {
    case KeyType::Seconds:
      return parse_seconds(raw, file, key);
    case KeyType::Bytes:
      return parse_bytes(raw, file, key);
    default:
      return std::stod(raw);
  }
}

bool Job::boolean(const std::string& key) const {
  return required_value(*this, values_, key) == "true";
}

std::string Job::text(const std::string& key) const {
  spec(key);
  const auto it = values_.find(key);
  return it == values_.end() ? std::string() : it->second;
}

std::string Job::path(const std::string& key) const {
  const std::string raw = text(key);
  if (raw.empty() || std::filesystem::path(raw).is_absolute() || folder.empty()) return raw;
  return (std::filesystem::path(folder) / raw).lexically_normal().string();
}

std::pair<std::string, std::string> Job::origin_of(const std::string& key) const {
  return origins().of(key);
}

KeyOrigins Job::origins() const {
  return KeyOrigins(file, flagged_);
}

std::string Job::output_path(const std::string& key) const {
  const std::string raw = text(key);
  if (raw.empty() || std::filesystem::path(raw).is_absolute()) return raw;
  return (std::filesystem::current_path() / raw).lexically_normal().string();
}

std::vector<std::string> Job::list(const std::string& key) const {
  std::vector<std::string> items;
  const std::string raw = text(key);
  size_t start = 0;
  while (!raw.empty()) {
    const size_t comma = raw.find(',', start);
    items.push_back(
        raw.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

Job parse_job_yaml(const std::string& text, const std::string& origin, const std::string& folder,
                   const std::vector<KeySpec>& specs,
                   const std::map<std::string, std::string>& overrides) {
  Job job;
  job.file = origin;
  job.folder = folder;
  job.specs = specs;
  std::map<std::string, std::string> raw;
  for (const auto& spec : specs)
    if (!spec.default_value.empty()) raw[spec.name] = spec.default_value;

  const YAML::Node root = yaml_util::parse(text, origin);
  if (root.IsDefined() && !root.IsNull()) {
    if (!root.IsMap()) throw InputError(origin, "(top level)", "a map of job keys");
    for (const auto& entry : root) {
      const std::string key = yaml_util::key_text(entry.first, origin);
      const KeySpec* spec = find_spec(specs, key);
      if (!spec) unknown_key(specs, key, origin);
      const YAML::Node& value = entry.second;
      if (value.IsSequence()) {
        if (spec->type != KeyType::TextList)
          throw InputError(origin, key, type_name(spec->type), "a list");
        std::string joined;
        for (const auto& item : value) {
          if (!item.IsScalar()) throw InputError(origin, key, "a list of words", "a nested value");
          joined += (joined.empty() ? "" : ",") + item.Scalar();
        }
        raw[key] = joined;
      } else if (value.IsScalar()) {
        raw[key] = value.Scalar();
      } else if (value.IsNull()) {
        raw[key] = "";
      } else {
        throw InputError(origin, key, type_name(spec->type), "a map");
      }
      job.mark_given(key);
    }
  }
  for (const auto& [key, value] : overrides) {
    if (!find_spec(specs, key)) unknown_key(specs, key, "command line");
    raw[key] = value;
    job.mark_given(key);
    job.mark_flagged(key);
  }
  for (const auto& spec : specs) {
    auto it = raw.find(spec.name);
    const bool empty = it == raw.end() || it->second.empty();
    const bool from_flag = overrides.count(spec.name) != 0;
    // Given empty: a list is empty (`hosts: ''` lets tauplan pick) and a free word or a path is
    // "none" (single_host, trace); a number, a switch or a word from a list of choices has no
    // empty value, and taking its default instead would be a silent default.
    const bool empty_means_none = spec.type == KeyType::TextList || spec.type == KeyType::Path ||
                                  (spec.type == KeyType::Text && spec.choices.empty());
    const std::pair<std::string, std::string> where =
        from_flag ? std::make_pair(std::string("command line"), "--" + spec.name)
                  : std::make_pair(origin, spec.name);
    if (empty && it != raw.end() && !empty_means_none)
      throw InputError(where, "a value (" + spec.help + ")", "nothing");
    if (empty) {
      if (spec.required)
        throw InputError(origin, spec.name, "a value (" + spec.help + ")", "nothing");
      continue;
    }
    it->second = validate(spec, it->second, where);
  }
  for (const auto& [key, value] : raw)
    job.set_raw(key, value);
  return job;
}

Job load_job(const std::string& path, const std::vector<KeySpec>& specs,
             const std::map<std::string, std::string>& overrides) {
  if (path.empty()) return parse_job_yaml("", "<command line>", "", specs, overrides);
  const std::string text = yaml_util::read_file(path, "job");
  // A job file that says nothing is a mistake (a wrong file, an unsaved editor buffer), never
  // a request for the defaults: those need no file at all.
  const YAML::Node root = yaml_util::parse(text, path);
  if (!root.IsDefined() || root.IsNull())
    throw InputError(
        path, "job", "a job file with at least one key (tauplan help-keys lists them)",
        text.find_first_not_of(" \t\r\n") == std::string::npos ? "an empty file" : "no keys");
  const std::string folder = std::filesystem::path(path).parent_path().string();
  return parse_job_yaml(text, path, folder, specs, overrides);
}

StrategyOptions strategy_options(const Job& job) {
  // Only strategy mesh reads the layout keys: refuse rather than ignore one in silence.
  const std::vector<std::string> strategies =
      job.has("strategies") ? job.list("strategies") : std::vector<std::string>{};
  const bool wants_layout = std::any_of(strategies.begin(), strategies.end(), [&](const auto& s) {
    const Strategy* found = find_strategy(s);
    return found && found->uses("tensor_parallel");
  });
  if (const std::string key = layout_key_set(job); !key.empty() && !wants_layout)
    throw InputError(job.origin_of(key),
                     "its default unless `strategies` include mesh (the other strategies are "
                     "data parallel; `tauplan layout` also evaluates layouts)",
                     "'" + job.text(key) + "'");
  StrategyOptions options;
  if (wants_layout) options.layout = layout_from_job(job);
  options.file = job.file;
  for (const KeySpec& spec : job.specs)
    if (job.from_flag(spec.name)) options.keys_from_command_line.insert(spec.name);
  options.workers = static_cast<int>(job.integer("workers"));
  options.batch = static_cast<double>(job.integer("batch"));
  options.tau = static_cast<int>(job.integer("tau"));
  options.split = job.text("split") == "speed" ? BatchSplit::Speed : BatchSplit::Even;
  options.collective = job.text("collective");
  options.micro_batches = static_cast<int>(job.integer("micro_batches"));
  options.overlap = job.boolean("overlap");
  options.bucket_bytes = job.real("bucket_bytes");
  options.hosts = job.list("hosts");
  options.single_host = job.text("single_host");
  options.servers = static_cast<int>(job.integer("servers"));
  options.staleness_bound = static_cast<int>(job.integer("staleness_bound"));
  options.round_budget_s = job.has("round_budget_s") ? job.real("round_budget_s") : 0;
  if (options.round_budget_s > 0 && job.given("tau") && options.tau > 1) {  // the budget drops tau
    const auto [origin, key] = job.origin_of("tau");
    throw InputError(origin, key,
                     "tau 1 (or none) with round_budget_s: the budget decides the local steps",
                     std::to_string(options.tau));
  }
  options.step_overhead_s = job.real("step_overhead_s");
  options.compute_s = job.has("compute_s") ? job.real("compute_s") : -1;
  options.comm_s = job.has("comm_s") ? job.real("comm_s") : -1;
  options.check_memory = job.boolean("check_memory");
  return options;
}

namespace {
// Names, once, the convergence keys the job gave that the chosen model does not read.
void note_ignored_convergence_keys(const Job& job, const std::string& kind) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> used = {
      {"fixed", {"iterations", "rounds"}},
      {"critical-batch", {"min_steps", "critical_batch", "drift"}},
      {"table", {"convergence_table"}}};
  std::vector<std::string> ignored;
  std::vector<std::string> reads;
  for (const auto& [model, keys] : used)
    for (const auto& key : keys) {
      if (model == kind)
        reads.push_back(key);
      else if (job.given(key) && job.has(key))
        ignored.push_back(key);
    }
  if (ignored.empty()) return;
  notice_once(fmt::format("{}: {} ignored: convergence: {} reads only {}", job.file,
                          fmt::join(ignored, ", "), kind, fmt::join(reads, ", ")),
              "ignored convergence keys");
}

std::unique_ptr<ConvergenceModel> convergence_model_of_kind(const Job& job) {
  const std::string kind = job.text("convergence");
  note_ignored_convergence_keys(job, kind);
  if (kind == "critical-batch") {
    for (const char* key : {"min_steps", "critical_batch"})
      if (!job.has(key))
        throw InputError(job.file, key, "a number > 0 (needed by convergence: critical-batch)");
    return std::make_unique<CriticalBatch>(job.real("min_steps"), job.real("critical_batch"),
                                           job.real("drift"), job.file);
  }
  if (kind == "table") {
    if (!job.has("convergence_table"))
      throw InputError(job.file, "convergence_table", "a CSV file (needed by convergence: table)");
    const std::string path = job.path("convergence_table");
    return std::make_unique<MeasuredTable>(yaml_util::read_file(path, "convergence_table"), path);
  }
  return std::make_unique<FixedCounts>(job.real("iterations"),
                                       job.has("rounds") ? job.real("rounds") : -1, job.file);
}
}  // namespace

std::unique_ptr<ConvergenceModel> convergence_model(const Job& job) {
  std::unique_ptr<ConvergenceModel> model = convergence_model_of_kind(job);
  model->set_staleness_cost(job.real("staleness_cost"));
  return model;
}

std::unique_ptr<ConvergenceModel> convergence_model(const Job& job, const Workload& workload) {
  if (!job.has("tokens")) return convergence_model(job);
  // A token target is the whole target: another target key beside it is a contradiction.
  for (const char* key : {"convergence", "iterations", "rounds", "min_steps", "critical_batch",
                          "drift", "convergence_table"})
    if (job.given(key) && job.has(key))
      throw InputError(job.origin_of("tokens"),
                       fmt::format("tokens or {}, not both (a token target replaces the "
                                   "convergence model)",
                                   key),
                       fmt::format("both, {}: '{}'", key, job.text(key)));
  const double tokens = parse_tokens(job.text("tokens"), job.file, "tokens");
  const int sequence = token_sequence(workload, job.file, "tokens");
  auto model = std::make_unique<TokenConvergence>(tokens, sequence, job.file);
  model->set_staleness_cost(job.real("staleness_cost"));
  return model;
}

}  // namespace tauplan::model
