// dataset.cpp: IDX reading through zlib, standardisation, and the synthetic Gaussian mixture.
#include "exec/dataset.hpp"

#include <map>
#include <memory>
#include <mutex>

#include <zlib.h>

#include <sys/stat.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "model/base/error.hpp"

namespace tauplan::exec {
namespace {

constexpr std::uint32_t kImageMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelMagic = 0x00000801;  // unsigned byte, 1 dimension

bool file_exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

/// "dir/name.gz" if it exists, else "dir/name" if it exists, else "".
std::string find_file(const std::string& dir, const std::string& name) {
  const std::string base = dir + "/" + name;
  if (file_exists(base + ".gz")) return base + ".gz";
  if (file_exists(base)) return base;
  return "";
}

/// Whole file, decompressed when gzip (zlib reads plain files unchanged).
std::vector<unsigned char> read_gz(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw InputError(path, "", "a readable file");
  std::vector<unsigned char> data;
  std::vector<unsigned char> chunk(1 << 20);
  for (;;) {
    const int got = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (got < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      throw InputError(path, "", "a valid gzip or IDX file", "read error: " + message);
    }
    if (got == 0) break;
    data.insert(data.end(), chunk.begin(), chunk.begin() + got);
  }
  gzclose(file);
  return data;
}

std::uint32_t big_endian_u32(const std::vector<unsigned char>& data, std::size_t offset) {
  return (std::uint32_t{data[offset]} << 24) | (std::uint32_t{data[offset + 1]} << 16) |
         (std::uint32_t{data[offset + 2]} << 8) | std::uint32_t{data[offset + 3]};
}

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

struct Images {
  long long count = 0;
  int rows = 0;
  int cols = 0;
  std::vector<unsigned char> pixels;
};

Images read_images(const std::string& path) {
  std::vector<unsigned char> data = read_gz(path);
  if (data.size() < 16)
    throw InputError(path, "header", "an IDX image header of 16 bytes",
                     std::to_string(data.size()) + " bytes");
  const std::uint32_t magic = big_endian_u32(data, 0);
  if (magic != kImageMagic)
    throw InputError(path, "magic", "IDX image magic " + hex(kImageMagic), hex(magic));
  Images images;
  images.count = big_endian_u32(data, 4);
  images.rows = static_cast<int>(big_endian_u32(data, 8));
  images.cols = static_cast<int>(big_endian_u32(data, 12));
  if (images.rows != 28 || images.cols != 28)
    throw InputError(path, "dimensions", "28 x 28 images",
                     std::to_string(images.rows) + " x " + std::to_string(images.cols));
  const std::size_t expected = 16 + static_cast<std::size_t>(images.count) * 28 * 28;
  if (data.size() != expected)
    throw InputError(
        path, "size",
        std::to_string(expected) + " bytes for " + std::to_string(images.count) + " images",
        std::to_string(data.size()) + " bytes");
  images.pixels.assign(data.begin() + 16, data.end());
  return images;
}

std::vector<int> read_labels(const std::string& path, int classes) {
  std::vector<unsigned char> data = read_gz(path);
  if (data.size() < 8)
    throw InputError(path, "header", "an IDX label header of 8 bytes",
                     std::to_string(data.size()) + " bytes");
  const std::uint32_t magic = big_endian_u32(data, 0);
  if (magic != kLabelMagic)
    throw InputError(path, "magic", "IDX label magic " + hex(kLabelMagic), hex(magic));
  const std::size_t count = big_endian_u32(data, 4);
  if (data.size() != 8 + count)
    throw InputError(path, "size", std::to_string(8 + count) + " bytes",
                     std::to_string(data.size()) + " bytes");
  std::vector<int> labels(count);
  for (std::size_t i = 0; i < count; ++i) {
    labels[i] = data[8 + i];
    if (labels[i] >= classes)
      throw InputError(path, "label " + std::to_string(i),
                       "a class below " + std::to_string(classes), std::to_string(labels[i]));
  }
  return labels;
}

void load_split(const std::string& dir, const std::string& prefix, long long limit,
                std::vector<float>& x, std::vector<int>& y) {
  const std::string image_file = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string label_file = find_file(dir, prefix + "-labels-idx1-ubyte");
  if (image_file.empty())
    throw InputError(dir + "/" + prefix + "-images-idx3-ubyte.gz", "", "an existing file");
  if (label_file.empty())
    throw InputError(dir + "/" + prefix + "-labels-idx1-ubyte.gz", "", "an existing file");
  Images images = read_images(image_file);
  y = read_labels(label_file, 10);
  if (static_cast<long long>(y.size()) != images.count)
    throw InputError(label_file, "count",
                     std::to_string(images.count) + " labels (as " + image_file + " has images)",
                     std::to_string(y.size()));
  long long count = images.count;
  if (limit > 0 && limit < count) count = limit;
  y.resize(static_cast<std::size_t>(count));
  x.resize(static_cast<std::size_t>(count) * 784);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(images.pixels[i]) / 255.0f;
}

/// x <- (x - mean) / std with the training set's statistics, applied to both splits.
void standardise(Dataset& data) {
  double sum = 0, sum_sq = 0;
  for (float v : data.train_x) {
    const auto x = static_cast<double>(v);
    sum += x;
    sum_sq += x * x;
  }
  const double n = static_cast<double>(data.train_x.size());
  const double mean = sum / n;
  const double stdev = std::sqrt(std::max(sum_sq / n - mean * mean, 1e-12));
  const auto m = static_cast<float>(mean);
  const auto s = static_cast<float>(1.0 / stdev);
  for (float& v : data.train_x)
    v = (v - m) * s;
  for (float& v : data.test_x)
    v = (v - m) * s;
}

/// Uniform [0, 1) from 53 bits, the same on every platform.
double uniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

double normal(std::mt19937_64& rng) {
  // Box-Muller; 1 - u keeps the logarithm finite.
  const double u1 = 1.0 - uniform(rng);
  const double u2 = uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

const char* default_data_dir() {
  return "/usr/share/datasets/fashion-mnist";
}

bool fashion_mnist_present(const std::string& dir) {
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    if (find_file(dir, name).empty()) return false;
  return true;
}

Dataset load_fashion_mnist(const std::string& dir, long long train_limit, long long test_limit) {
  Dataset data;
  data.name = "fashion-mnist";
  data.source = dir;
  data.features = 784;
  data.classes = 10;
  load_split(dir, "train", train_limit, data.train_x, data.train_y);
  load_split(dir, "t10k", test_limit, data.test_x, data.test_y);
  standardise(data);
  return data;
}

Dataset make_synthetic(const SyntheticOptions& options) {
  Dataset data;
  data.name = "synthetic-gaussian-mixture";
  data.synthetic = true;
  data.features = options.features;
  data.classes = options.classes;
  char source[200];
  std::snprintf(source, sizeof source,
                "gaussian mixture: %d features, %d classes, separation %g, label noise %g, "
                "seed %llu",
                options.features, options.classes, options.separation, options.label_noise,
                static_cast<unsigned long long>(options.seed));
  data.source = source;

  std::mt19937_64 rng(options.seed);
  const auto d = static_cast<std::size_t>(options.features);
  const auto classes = static_cast<std::size_t>(options.classes);
  std::vector<double> means(classes * d);
  const double scale = options.separation / std::sqrt(static_cast<double>(d));
  for (double& v : means)
    v = scale * normal(rng);

  auto generate = [&](long long count, std::vector<float>& x, std::vector<int>& y) {
    x.resize(static_cast<std::size_t>(count) * d);
    y.resize(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < y.size(); ++i) {
      const auto label = static_cast<std::size_t>(rng() % classes);
      for (std::size_t j = 0; j < d; ++j)
        x[i * d + j] = static_cast<float>(means[label * d + j] + normal(rng));
      y[i] = static_cast<int>(label);
      if (uniform(rng) < options.label_noise) y[i] = static_cast<int>(rng() % classes);
    }
  };
  generate(options.train_samples, data.train_x, data.train_y);
  generate(options.test_samples, data.test_x, data.test_y);
  return data;
}

Dataset load_dataset(const DatasetOptions& options) {
  std::string dir = options.dir;
  if (dir.empty()) {
    const char* env = std::getenv("TAUPLAN_DATA_DIR");
    dir = env && *env ? env : default_data_dir();
  }
  if (fashion_mnist_present(dir)) {
    // Decoding the IDX files takes longer than copying the result: a process that measures
    // many jobs (reproduce) decodes each (folder, limits) once.
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const Dataset>> decoded;
    const std::string key =
        dir + "|" + std::to_string(options.train_limit) + "|" + std::to_string(options.test_limit);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = decoded.find(key);
    if (it == decoded.end())
      it = decoded
               .emplace(key, std::make_shared<const Dataset>(
                                 load_fashion_mnist(dir, options.train_limit, options.test_limit)))
               .first;
    return *it->second;
  }
  if (!options.allow_synthetic)
    throw InputError(options.origins.of(options.key),
                     "a folder holding the Fashion-MNIST IDX files (install dataset-fashion-mnist) "
                     "or allow_synthetic: true",
                     dir);
  SyntheticOptions synthetic = options.synthetic;
  if (options.train_limit > 0) synthetic.train_samples = options.train_limit;
  if (options.test_limit > 0) synthetic.test_samples = options.test_limit;
  return make_synthetic(synthetic);
}

}  // namespace tauplan::exec
