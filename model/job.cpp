// job.cpp: the model's job keys, the strict job loader, unit parsing, and job -> options.
#include "model/job.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "model/collective.hpp"
#include "model/error.hpp"
#include "model/yaml_util.hpp"

namespace tauplan::model {

std::vector<KeySpec> model_job_keys() {
  std::vector<KeySpec> keys;
  // A plain key, a key with a set of allowed words, and a numeric key with a range.
  auto add = [&keys](const char* name, KeyType type, const std::string& value, std::string help) {
    KeySpec spec;
    spec.name = name;
    spec.type = type;
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
  constexpr double kNoMax = 1e300;
  add("workload", KeyType::Text, "alexnet",
      fmt::format("catalog name ({}) or a workload YAML file",
                  fmt::join(catalog_workload_names(), ", ")));
  add("platform", KeyType::Text, "sparknet-ec2",
      "SimGrid platform XML: a file, or the name of one in platforms/");
  add_choice("strategies", KeyType::TextList, "single,sync,local-sgd", "strategies to evaluate",
             strategy_names());
  add_range("workers", KeyType::Integer, "4", "K, the number of workers", 1);
  add("hosts", KeyType::TextList, "", "explicit worker hosts (default: the first K workers)");
  add("single_host", KeyType::Text, "", "host of the single-worker baseline (default: fastest)");
  add_range("batch", KeyType::Integer, "256",
            "b: global batch for single and sync, per-worker batch for local-sgd", 1);
  add_range("tau", KeyType::Integer, "10", "local steps per round for local-sgd", 1);
  add_choice("split", KeyType::Text, "even", "how sync splits the batch over workers",
             {"even", "speed"});
  add_choice("collective", KeyType::Text, "ring", "collective algorithm",
             collective_algorithm_names());
  add_range("servers", KeyType::Integer, "1", "parameter servers used by `ps`", 1);
  add("overlap", KeyType::Boolean, "false",
      "sync: overlap the all-reduce with backward in gradient buckets (needs workload layers)");
  add_range("bucket_bytes", KeyType::Bytes, "25MiB", "gradient bucket size when overlapping", 0,
            kNoMax, true);
  add_range("step_overhead_s", KeyType::Seconds, "0", "fixed cost of every training step", 0);
  add_range("compute_s", KeyType::Seconds, "",
            "what-if: C(b) in seconds on the fastest worker, instead of flop / speed", 0, kNoMax,
            true);
  add_range("comm_s", KeyType::Seconds, "", "what-if: S in seconds per synchronisation", 0);
  add("check_memory", KeyType::Boolean, "true", "fail when a batch does not fit in GPU memory");
  add_choice("convergence", KeyType::Text, "fixed", "how Na(b) and Ma(b,K,tau) are obtained",
             {"fixed", "critical-batch", "table"});
  add_range("iterations", KeyType::Real, "1000", "fixed: Na(b), serial iterations", 0, kNoMax,
            true);
  add_range("rounds", KeyType::Real, "", "fixed: Ma, rounds of local-sgd (default iterations/tau)",
            0, kNoMax, true);
  add_range("min_steps", KeyType::Real, "", "critical-batch: Smin", 0, kNoMax, true);
  add_range("critical_batch", KeyType::Real, "", "critical-batch: Bcrit (samples)", 0, kNoMax,
            true);
  add_range("drift", KeyType::Real, "0", "critical-batch: local-SGD drift c in [0, 1]", 0, 1);
  add("convergence_table", KeyType::Path, "", "table: CSV batch,workers,tau,steps");
  add_range("seed", KeyType::Integer, "1", "seed of every random choice", 0);
  return keys;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Splits "25MiB" into (25, "mib"); returns false if there is no leading number.
bool split_number_unit(const std::string& text, double& number, std::string& unit) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return false;
  try {
    size_t used = 0;
    number = std::stod(text.substr(first), &used);
    unit = lower(text.substr(first + used));
    unit.erase(std::remove_if(unit.begin(), unit.end(),
                              [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
               unit.end());
    return std::isfinite(number);
  } catch (const std::exception&) {
    return false;
  }
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

const KeySpec* find_spec(const std::vector<KeySpec>& specs, const std::string& key) {
  for (const auto& spec : specs)
    if (spec.name == key) return &spec;
  return nullptr;
}

[[noreturn]] void unknown_key(const std::vector<KeySpec>& specs, const std::string& key,
                              const std::string& origin) {
  std::string best;
  size_t best_distance = 4;
  for (const auto& spec : specs) {
    const size_t d = edit_distance(key, spec.name);
    if (d < best_distance) best_distance = d, best = spec.name;
  }
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
std::string validate(const KeySpec& spec, const std::string& raw, const std::string& origin) {
  double value = 0;
  switch (spec.type) {
    case KeyType::Integer: {
      double n = 0;
      std::string unit;
      if (!split_number_unit(raw, n, unit) || !unit.empty() || n != std::floor(n))
        throw InputError(origin, spec.name, type_name(spec.type), "'" + raw + "'");
      value = n;
      break;
    }
    case KeyType::Real: {
      std::string unit;
      if (!split_number_unit(raw, value, unit) || !unit.empty())
        throw InputError(origin, spec.name, "a number without unit", "'" + raw + "'");
      break;
    }
    case KeyType::Seconds:
      value = parse_seconds(raw, origin, spec.name);
      break;
    case KeyType::Bytes:
      value = parse_bytes(raw, origin, spec.name);
      break;
    case KeyType::Boolean: {
      const std::string b = lower(raw);
      if (b == "true" || b == "yes" || b == "on" || b == "1") return "true";
      if (b == "false" || b == "no" || b == "off" || b == "0") return "false";
      throw InputError(origin, spec.name, "true or false", "'" + raw + "'");
    }
    case KeyType::Text:
      if (!spec.choices.empty() &&
          std::find(spec.choices.begin(), spec.choices.end(), raw) == spec.choices.end())
        throw InputError(origin, spec.name, fmt::format("one of {}", fmt::join(spec.choices, ", ")),
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
        if (item.empty())
          throw InputError(origin, spec.name, "a list without empty items", "'" + raw + "'");
        if (!spec.choices.empty() &&
            std::find(spec.choices.begin(), spec.choices.end(), item) == spec.choices.end())
          throw InputError(origin, spec.name,
                           fmt::format("items among {}", fmt::join(spec.choices, ", ")),
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
      range = fmt::format("between {:g} and {:g}", spec.min_value, spec.max_value);
    else
      range = fmt::format("{} {:g}", spec.min_exclusive ? ">" : ">=", spec.min_value);
    throw InputError(origin, spec.name, type_name(spec.type) + " " + range, "'" + raw + "'");
  }
  return raw;
}

}  // namespace

double parse_bytes(const std::string& text, const std::string& file, const std::string& key) {
  double number = 0;
  std::string unit;
  if (split_number_unit(text, number, unit)) {
    static const std::pair<const char*, double> units[] = {{"", 1},
                                                           {"b", 1},
                                                           {"kb", 1e3},
                                                           {"mb", 1e6},
                                                           {"gb", 1e9},
                                                           {"tb", 1e12},
                                                           {"kib", 1024.0},
                                                           {"mib", 1048576.0},
                                                           {"gib", 1073741824.0},
                                                           {"tib", 1099511627776.0}};
    for (const auto& [name, factor] : units)
      if (unit == name) return number * factor;
  }
  throw InputError(file, key, "bytes (a number, or with unit B, kB, MB, GB, KiB, MiB, GiB)",
                   "'" + text + "'");
}

double parse_seconds(const std::string& text, const std::string& file, const std::string& key) {
  double number = 0;
  std::string unit;
  if (split_number_unit(text, number, unit)) {
    static const std::pair<const char*, double> units[] = {
        {"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"min", 60}, {"h", 3600}};
    for (const auto& [name, factor] : units)
      if (unit == name) return number * factor;
  }
  throw InputError(file, key, "seconds (a number, or with unit s, ms, us, ns, min, h)",
                   "'" + text + "'");
}

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
      const std::string key = entry.first.as<std::string>();
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
    }
  }
  for (const auto& [key, value] : overrides) {
    if (!find_spec(specs, key)) unknown_key(specs, key, "command line");
    raw[key] = value;
  }
  for (const auto& spec : specs) {
    auto it = raw.find(spec.name);
    const bool empty = it == raw.end() || it->second.empty();
    if (empty) {
      if (spec.required)
        throw InputError(origin, spec.name, "a value (" + spec.help + ")", "nothing");
      continue;
    }
    const bool from_flag = overrides.count(spec.name) != 0;
    it->second = validate(spec, it->second, from_flag ? "command line --" + spec.name : origin);
  }
  for (const auto& [key, value] : raw)
    job.set_raw(key, value);
  return job;
}

Job load_job(const std::string& path, const std::vector<KeySpec>& specs,
             const std::map<std::string, std::string>& overrides) {
  if (path.empty()) return parse_job_yaml("", "<command line>", "", specs, overrides);
  const std::string text = yaml_util::read_file(path, "job");
  const std::string folder = std::filesystem::path(path).parent_path().string();
  return parse_job_yaml(text, path, folder, specs, overrides);
}

StrategyOptions strategy_options(const Job& job) {
  StrategyOptions options;
  options.file = job.file;
  options.workers = static_cast<int>(job.integer("workers"));
  options.batch = static_cast<double>(job.integer("batch"));
  options.tau = static_cast<int>(job.integer("tau"));
  options.split = job.text("split") == "speed" ? BatchSplit::Speed : BatchSplit::Even;
  options.collective = job.text("collective");
  options.overlap = job.boolean("overlap");
  options.bucket_bytes = job.real("bucket_bytes");
  options.hosts = job.list("hosts");
  options.single_host = job.text("single_host");
  options.servers = static_cast<int>(job.integer("servers"));
  options.step_overhead_s = job.real("step_overhead_s");
  options.compute_s = job.has("compute_s") ? job.real("compute_s") : -1;
  options.comm_s = job.has("comm_s") ? job.real("comm_s") : -1;
  options.check_memory = job.boolean("check_memory");
  return options;
}

std::unique_ptr<ConvergenceModel> convergence_model(const Job& job) {
  const std::string kind = job.text("convergence");
  if (kind == "critical-batch") {
    for (const char* key : {"min_steps", "critical_batch"})
      if (!job.has(key))
        throw InputError(job.file, key, "a number > 0 (needed by convergence: critical-batch)");
    return std::make_unique<CriticalBatch>(job.real("min_steps"), job.real("critical_batch"),
                                           job.real("drift"));
  }
  if (kind == "table") {
    if (!job.has("convergence_table"))
      throw InputError(job.file, "convergence_table", "a CSV file (needed by convergence: table)");
    const std::string path = job.path("convergence_table");
    return std::make_unique<MeasuredTable>(yaml_util::read_file(path, "convergence_table"), path);
  }
  return std::make_unique<FixedCounts>(job.real("iterations"),
                                       job.has("rounds") ? job.real("rounds") : -1);
}

}  // namespace tauplan::model
