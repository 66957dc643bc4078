// published.hpp: `tauplan published [FILE | --runs FILE] [--out DIR] [--json]`, published
// training runs beside tauplan's prediction of each.
//
// Reads a runs file (default: the source tree's experiments/parallelism/megatron.yaml; FILE or
// --runs names another, e.g. experiments/parallelism/h100.yaml), loads the platform it names
// (SimGrid XML or a cluster spec, study/common/platform_file.hpp; looked for beside the runs file,
// then in platforms/ and platforms/clusters/) and reads its node fabric off it
// (model/inputs/node_fabric.hpp). A runs file with a layer-time table fits the calibration
// (study/published/published_runs.hpp: the GPU's compute profile, one GEMM efficiency and the
// memory-bound bandwidth, on Korthikanti et al. 2022 Table 4) and checks that the platform's GPU
// hosts are timed by a profile equal to that fit (a note otherwise, with the fitted values: the
// profile file is then out of date; --out writes the fit as profile.json to replace it); one whose
// calibration is
// `{profile: platform}` fits nothing and times the GPUs by the platform's profile as it is (every
// run held out). It predicts every run with the platform as it is, and prints a Markdown table
// (run, our prediction, the published number in the source's quantity and flop, the error) with the
// median absolute error over all runs, over the runs other than the calibration's own configuration
// (computed from the rows: study::median_abs_error), and per published table. --out writes
// table.md, table.csv, published.json (with the provenance: commit, platform file and hash) and,
// for a fit, profile.json (the fitted profile). What it leaves out: anything the runs file does
// not state (each run lists its assumptions in the CSV and JSON).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tauplan::study {

struct PublishedRequest {
  std::string runs;  ///< runs file; empty: experiments/parallelism/megatron.yaml of the tree
  std::string out;   ///< folder for table.md, table.csv, published.json (profile.json); empty: none
};

struct PublishedOutcome {
  std::string table;  ///< Markdown: the fit, the runs, the medians (table.md)
  std::string csv;
  nlohmann::json document;
  std::vector<std::string> notes;  ///< the platform's compute profile disagreeing with the fit
  double median_abs_error = 0;
  double median_abs_error_independent = 0;  ///< without the calibration's own configuration
  std::string written;                      ///< with --out: the files written, DIR/{...}
};

/// The default runs file: experiments/parallelism/megatron.yaml under $TAUPLAN_EXPERIMENTS_DIR
/// or the source tree.
std::string default_published_runs();

PublishedOutcome run_published(const PublishedRequest& request);

}  // namespace tauplan::study
