// dataset.hpp: the training data exec/ learns from.
//
// Fashion-MNIST as Debian's dataset-fashion-mnist ships it: four IDX files (gzip-compressed or
// not) in /usr/share/datasets/fashion-mnist, or a folder given by the job or $TAUPLAN_DATA_DIR.
// Magic numbers, dimensions and sizes are checked; a bad file is an InputError naming it.
// Pixels become floats standardised with the training set's mean and standard deviation.
// When the files are absent and the job allows it, a seeded synthetic task stands in: a
// Gaussian mixture with 784 features and 10 classes (class means at distance ~`separation`,
// unit noise, a fraction of labels flipped), and the Dataset says so. What it leaves out: data
// augmentation, other data sets, streaming from disk (everything is held in memory: 60000 x
// 784 floats is 188 MB).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/base/error.hpp"  // KeyOrigins

namespace tauplan::exec {

struct Dataset {
  std::string name;    ///< "fashion-mnist" or "synthetic-gaussian-mixture"
  std::string source;  ///< folder the files came from, or the generator's parameters
  bool synthetic = false;
  int features = 0;
  int classes = 0;
  std::vector<float> train_x;  ///< train_size() x features, row-major
  std::vector<int> train_y;
  std::vector<float> test_x;
  std::vector<int> test_y;

  long long train_size() const { return static_cast<long long>(train_y.size()); }
  long long test_size() const { return static_cast<long long>(test_y.size()); }
  const float* train_row(long long i) const {
    return train_x.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(features);
  }
};

struct SyntheticOptions {
  long long train_samples = 20000;
  long long test_samples = 5000;
  int features = 784;
  int classes = 10;
  double separation = 4.0;    ///< distance scale between class means, in noise units
  double label_noise = 0.05;  ///< fraction of labels replaced by a random class
  std::uint64_t seed = 1;
};

struct DatasetOptions {
  std::string dir;               ///< empty: $TAUPLAN_DATA_DIR, else default_data_dir()
  bool allow_synthetic = false;  ///< fall back on the synthetic task when the files are absent
  long long train_limit = 0;     ///< keep the first N training samples (0: all)
  long long test_limit = 0;      ///< keep the first N test samples (0: all)
  SyntheticOptions synthetic;
  KeyOrigins origins;  ///< where the job keys were given, named in errors about the folder
  std::string key = "data_dir";
};

/// /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist).
const char* default_data_dir();
/// True when the four Fashion-MNIST files (with or without .gz) are in `dir`.
bool fashion_mnist_present(const std::string& dir);
/// Reads the four IDX files in `dir`; InputError naming the file on any problem.
Dataset load_fashion_mnist(const std::string& dir, long long train_limit = 0,
                           long long test_limit = 0);
/// The seeded synthetic task.
Dataset make_synthetic(const SyntheticOptions& options);
/// Fashion-MNIST if present; else the synthetic task when allowed; else InputError(job file,
/// key, "a folder with the Fashion-MNIST IDX files ... or allow_synthetic: true").
Dataset load_dataset(const DatasetOptions& options);

}  // namespace tauplan::exec
