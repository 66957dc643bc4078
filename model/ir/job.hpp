// job.hpp: job files (YAML) and the table of keys they may hold.
//
// Every key is declared once, with its type, unit, default and help, in a KeySpec table: the
// loader checks the file against it (unknown key, wrong type or unit, out of range: an
// InputError naming file and key) and the CLI turns each key into a flag (`workers` <->
// `--workers`). A flag overrides the file. Each subsystem declares its own keys (model here,
// sim and exec in theirs) and the CLI concatenates the tables.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/base/error.hpp"  // KeyOrigins
#include "model/base/limits.hpp"
#include "model/base/units.hpp"  // parse_seconds, parse_bytes for the readers of job values
#include "model/ir/strategy.hpp"

namespace tauplan::model {

enum class KeyType {
  Integer,   ///< whole number
  Real,      ///< number without unit
  Seconds,   ///< number of seconds, or a string with a time unit ("5ms", "2us", "1.5s")
  Bytes,     ///< number of bytes, or a string with a size unit ("25MiB", "1GB")
  Boolean,   ///< true/false
  Text,      ///< a word or name
  Path,      ///< a file, relative to the job file's folder
  TextList,  ///< a list of words (YAML sequence, or comma-separated on the command line)
};

struct KeySpec {
  std::string name;
  KeyType type = KeyType::Text;
  std::string default_value;  ///< empty: no default (key optional unless `required`)
  std::string help;
  std::vector<std::string> choices;  ///< allowed words for Text keys (empty: any)
  double min_value = -1e300;         ///< for numbers: allowed range, inclusive unless
  double max_value = 1e300;          ///<   min_exclusive
  bool min_exclusive = false;
  bool required = false;
  /// Text, Path and list items: at most this many characters.
  std::size_t max_length = kMaxNameLength;
  /// The engines that read it (Engine::name(): "analytic", "simgrid", "exec"); empty: every
  /// engine. A verb that runs one engine refuses a flag its engine does not read, and a study
  /// hands each engine only the keys it reads (study/common/engines.hpp).
  std::vector<std::string> read_by;
};

/// The keys model/ understands (workload, platform, strategy, convergence, what-if overrides).
std::vector<KeySpec> model_job_keys();

/// A loaded job: validated values by key, with defaults applied.
class Job {
 public:
  std::string file;    ///< the job file ("<command line>" when there is none)
  std::string folder;  ///< folder that relative paths resolve against

  bool has(const std::string& key) const;
  /// True when the job file or a flag gave `key` (not only its default).
  bool given(const std::string& key) const { return given_.count(key) != 0; }
  long long integer(const std::string& key) const;
  double real(const std::string& key) const;  ///< Real, Seconds (in s), Bytes (in bytes)
  bool boolean(const std::string& key) const;
  std::string text(const std::string& key) const;
  std::string path(const std::string& key) const;  ///< resolved against `folder`
  /// A file the run writes (a trace): as given, relative to the current folder, the same whether
  /// the key came from the job file or a flag (an input is found beside the file naming it; an
  /// output lands where the user runs the command).
  std::string output_path(const std::string& key) const;
  std::vector<std::string> list(const std::string& key) const;

  /// Raw validated values (strings), for provenance and sweeps.
  const std::map<std::string, std::string>& values() const { return values_; }
  void set_raw(const std::string& key, const std::string& value) { values_[key] = value; }
  void mark_given(const std::string& key) { given_.insert(key); }
  /// True when a flag (not the job file) gave `key`.
  bool from_flag(const std::string& key) const { return flagged_.count(key) != 0; }
  void mark_flagged(const std::string& key) { flagged_.insert(key); }
  /// Where an error about `key`'s value points: {"command line", "--key"} when a flag gave it,
  /// else {the job file, key}.
  std::pair<std::string, std::string> origin_of(const std::string& key) const;
  /// Where each key was given (the file, the flagged keys), for code that names keys in errors
  /// without the Job (exec's communicators, trainers and dataset).
  KeyOrigins origins() const;
  const KeySpec& spec(const std::string& key) const;

  std::vector<KeySpec> specs;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> given_;
  std::set<std::string> flagged_;
};

/// Loads `path` (may be empty: only flags and defaults), applies `overrides` (key -> value as
/// typed on the command line) and checks everything against `specs`. A folder, an empty file,
/// a file with no keys, a duplicate key or an over-long value is an InputError.
Job load_job(const std::string& path, const std::vector<KeySpec>& specs,
             const std::map<std::string, std::string>& overrides = {});
/// Same, from YAML text (`origin` names it in errors).
Job parse_job_yaml(const std::string& text, const std::string& origin, const std::string& folder,
                   const std::vector<KeySpec>& specs,
                   const std::map<std::string, std::string>& overrides = {});

/// Strategy options from a job (workers, batch, tau, split, collective, overlap ...).
StrategyOptions strategy_options(const Job& job);
/// The convergence model a job names (`convergence: fixed | critical-batch | table`), with the
/// job's staleness cost. Keys given for another model (`iterations` under critical-batch ...)
/// are named once on stderr.
std::unique_ptr<ConvergenceModel> convergence_model(const Job& job);
struct Workload;
/// The same, with a target in tokens (`tokens: 15T`, model/ir/token_target.hpp): the token count
/// over the workload's sequence length, Na(b) = tokens / (sequence x b). Refuses (InputError
/// naming the file and `tokens`) a token target beside another target key (iterations, rounds,
/// convergence and its keys), a bad count, or a workload without a sequence.
std::unique_ptr<ConvergenceModel> convergence_model(const Job& job, const Workload& workload);

}  // namespace tauplan::model
