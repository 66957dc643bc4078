// reproduce_support.hpp: what the reproductions share (study/reproduce_*.cpp): where the
// experiments' job files are, provenance, simulated points run as child processes, measured
// cells of fashion-mlp run through the exec engine with a cache. Internal to study/.
#pragma once

#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/ir/engine.hpp"
#include "study/reproduce/reproduce.hpp"

namespace tauplan::study::reproduction {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path experiments_dir(const ReproduceRequest& args);
std::string join_ints(const std::vector<int>& values, const char* sep = ",");
json context_json(const std::string& experiment, const ReproduceRequest& args);

/// One measured cell of the SparkNet grid.
struct Cell {
  std::string strategy;
  int workers = 1;
  int tau = 1;
  double batch = 0;
  unsigned seed = 1;
  bool timing_only = false;  ///< run kTimingSteps steps without a target (for C(b/K))
};

struct CellResult {
  Cell cell;
  long long rounds = 0;
  long long steps = 0;
  bool reached = false;
  double final_accuracy = 0;
  double compute_median_s = 0;
  double train_s = 0;
};

std::string cell_key(const Cell& c);
constexpr long long kTimingSteps = 60;

/// Measures cells of one job (fashion-mlp) through the exec engine.
class Measurer {
 public:
  explicit Measurer(const fs::path& job_file);
  const std::string& settings_key() const { return settings_key_; }
  double batch() const { return base_.options.batch; }
  const model::Job& job() const { return base_.job; }
  CellResult run(const Cell& cell) const;

 private:
  std::string job_file_;
  model::JobInputs base_;
  std::string settings_key_;
};

std::map<std::string, CellResult> load_cache(const fs::path& path, const std::string& key);
void save_cache(const fs::path& path, const std::string& key,
                const std::map<std::string, CellResult>& cache);
/// Measures the cells not in the cache, `jobs` at a time, with a progress bar on stderr.
void measure_cells(Measurer& measurer, const std::vector<Cell>& cells,
                   std::map<std::string, CellResult>& cache, const fs::path& cache_path, int jobs);

/// A simulated point: `tauplan simulate` with these arguments, its result rows.
struct SimPoint {
  std::string label;
  std::vector<std::string> args;
  json rows;  ///< results array
};
void simulate_points(std::vector<SimPoint>& points, const fs::path& scratch, int jobs,
                     const std::string& what);
/// The row of `strategy` in a simulated point.
const json& row_of(const SimPoint& p, const std::string& strategy);

/// A number a paper or its repository publishes, beside ours for the same configuration.
struct Published {
  std::string quantity;  ///< "time per step, 1 node x 4 GPUs"
  std::string source;    ///< where the number is published (paper table, repository file)
  double published = 0;
  double ours = 0;
  std::string unit;  ///< "s", "x"
  /// Non-empty when ours is not independent of the published number (a calibration from it):
  /// then the comparison is an identity, said so, and left out of the error summary.
  std::string calibrated_from_it;
  std::string note;  ///< what differs between their configuration and ours
  double error() const { return published != 0 ? ours / published - 1 : 0; }
};

/// Prints the table (published, ours, error), writes DIR/published.csv, and returns the rows
/// as JSON with the median and largest |error| over the independent comparisons.
json report_published(const std::vector<Published>& rows, const fs::path& dir, std::ostream& out);

}  // namespace tauplan::study::reproduction
