// reproduce.hpp: `tauplan reproduce [sparknet|hetseq] [--out DIR] [--fresh] [--reduced]`.
//
// Reproduces the speedup curves of SparkNet (arXiv 1511.06051) and the scaling of HetSeq
// (arXiv 2009.14783) with tauplan's own engines:
//  - sparknet (a) the zero-overhead speedup Na(b) / (tau Ma(b,K,tau)) over K x tau, with Na and
//    Ma MEASURED by exec (fashion-mlp on Fashion-MNIST, lockstep), beside the critical-batch
//    model fitted to those counts (model/convergence/sparknet_fit.hpp); (b) speedup against S /
//    C(b) for naive and SparkNet (several tau and the best tau) at one K, from the measured counts
//    and the measured C(b), C(b/K); (c) SparkNet's AlexNet setup on sparknet-ec2 SIMULATED (time
//    per round, compute and communication, speedup bounds); (d) the paper's qualitative claims
//    checked against the measurements (holds / does not hold, with the numbers).
//  - hetseq: BERT-base synchronous data parallel on 1, 2, 4, 8 nodes of 4 GPUs, and a
//    mixed-generation cluster with even against speed-proportional batch split, SIMULATED.
// Outputs under --out: per experiment a CSV per table, one JSON with every point and its
// provenance, gnuplot scripts and their PNG and SVG (scripts and data only, with a note, when
// gnuplot is absent). Measured counts are cached in <out>/sparknet/measured.csv, keyed by the
// measurement settings, and reused unless --fresh. Measured cells run in this process (two at
// a time); simulations run as child processes (SimGrid: one engine per process).
// What it leaves out: the paper figures' own numbers (not transcribed, see
// ../shared/notes/papers.md), AlexNet/BERT convergence (only time per round or step is
// simulated), the GoogLeNet experiment, concurrent-timing measurements.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tauplan::study {

struct ReproduceRequest {
  std::string name;  ///< sparknet | hetseq | empty (both)
  std::string out = "results/reproduce";
  bool fresh = false;
  bool reduced = false;
  int jobs = 2;
  std::string experiments;  ///< folder with sparknet/ and hetseq/ job files
};

/// Checks the request (InputError), then runs the reproductions it names, writing their
/// tables to `out` as they finish and their notes (missing gnuplot ...) to `notes`.
void run_reproduce(const ReproduceRequest& request, std::ostream& out,
                   std::vector<std::string>& notes);

/// The experiments' names (and folders under experiments/ and --out).
const char* sparknet_experiment();
const char* hetseq_experiment();

void reproduce_sparknet(const ReproduceRequest& request, std::ostream& out,
                        std::vector<std::string>& notes);
void reproduce_hetseq(const ReproduceRequest& request, std::ostream& out,
                      std::vector<std::string>& notes);

}  // namespace tauplan::study
