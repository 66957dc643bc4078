// dataset_test.cpp: IDX reading (good and bad files), the fallback rule, synthetic data.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "exec/dataset.hpp"
#include "model/base/error.hpp"

namespace fs = std::filesystem;
using namespace tauplan::exec;

namespace {

/// A fresh empty folder under the temp dir.
fs::path temp_folder(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tauplan-exec-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void put_u32(std::vector<unsigned char>& out, std::uint32_t v) {
  out.push_back(static_cast<unsigned char>(v >> 24));
  out.push_back(static_cast<unsigned char>(v >> 16));
  out.push_back(static_cast<unsigned char>(v >> 8));
  out.push_back(static_cast<unsigned char>(v));
}

void write_gz(const fs::path& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  gzclose(f);
}

std::vector<unsigned char> images(std::uint32_t count, std::uint32_t magic = 0x803) {
  std::vector<unsigned char> out;
  put_u32(out, magic);
  put_u32(out, count);
  put_u32(out, 28);
  put_u32(out, 28);
  for (std::uint32_t i = 0; i < count * 784; ++i)
    out.push_back(static_cast<unsigned char>(i % 251));
  return out;
}

std::vector<unsigned char> labels(std::uint32_t count) {
  std::vector<unsigned char> out;
  put_u32(out, 0x801);
  put_u32(out, count);
  for (std::uint32_t i = 0; i < count; ++i)
    out.push_back(static_cast<unsigned char>(i % 10));
  return out;
}

void write_set(const fs::path& dir, std::uint32_t train, std::uint32_t test) {
  write_gz(dir / "train-images-idx3-ubyte.gz", images(train));
  write_gz(dir / "train-labels-idx1-ubyte.gz", labels(train));
  write_gz(dir / "t10k-images-idx3-ubyte.gz", images(test));
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", labels(test));
}

}  // namespace

TEST_CASE("a valid IDX set loads, standardised", "[exec][dataset]") {
  const fs::path dir = temp_folder("good");
  write_set(dir, 20, 5);
  REQUIRE(fashion_mnist_present(dir.string()));
  const Dataset d = load_fashion_mnist(dir.string());
  CHECK(d.name == "fashion-mnist");
  CHECK_FALSE(d.synthetic);
  CHECK(d.train_size() == 20);
  CHECK(d.test_size() == 5);
  CHECK(d.features == 784);
  CHECK(d.train_y[13] == 3);
  double sum = 0;
  for (float v : d.train_x)
    sum += static_cast<double>(v);
  CHECK(std::abs(sum / static_cast<double>(d.train_x.size())) <
        1e-4);  // mean 0 after standardising
  const Dataset limited = load_fashion_mnist(dir.string(), 8, 2);
  CHECK(limited.train_size() == 8);
  CHECK(limited.test_size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("a bad IDX file is an InputError naming the file", "[exec][dataset]") {
  const fs::path dir = temp_folder("bad");
  write_set(dir, 4, 2);
  SECTION("wrong magic") {
    write_gz(dir / "train-images-idx3-ubyte.gz", images(4, 0x801));
    CHECK_THROWS_WITH(load_fashion_mnist(dir.string()),
                      Catch::Contains("train-images-idx3-ubyte.gz") && Catch::Contains("magic"));
  }
  SECTION("truncated data") {
    std::vector<unsigned char> bytes = images(4);
    bytes.resize(bytes.size() - 10);
    write_gz(dir / "t10k-images-idx3-ubyte.gz", bytes);
    CHECK_THROWS_AS(load_fashion_mnist(dir.string()), tauplan::InputError);
    CHECK_THROWS_WITH(load_fashion_mnist(dir.string()), Catch::Contains("t10k-images"));
  }
  SECTION("label count differs from image count") {
    write_gz(dir / "train-labels-idx1-ubyte.gz", labels(3));
    CHECK_THROWS_WITH(load_fashion_mnist(dir.string()), Catch::Contains("train-labels"));
  }
  fs::remove_all(dir);
}

TEST_CASE("missing data: an error, or the synthetic task when allowed", "[exec][dataset]") {
  DatasetOptions o;
  o.dir = "/nonexistent/fashion";
  o.origins = "job.yaml";
  try {
    load_dataset(o);
    FAIL("expected an InputError");
  } catch (const tauplan::InputError& e) {
    CHECK(e.file() == "job.yaml");
    CHECK(e.key() == "data_dir");
    CHECK(std::string(e.what()).find("allow_synthetic") != std::string::npos);
  }
  o.allow_synthetic = true;
  o.train_limit = 300;
  o.test_limit = 100;
  const Dataset d = load_dataset(o);
  CHECK(d.synthetic);
  CHECK(d.name == "synthetic-gaussian-mixture");
  CHECK(d.train_size() == 300);
  CHECK(d.test_size() == 100);
  CHECK(d.features == 784);
  CHECK(d.classes == 10);
}

TEST_CASE("the synthetic task is deterministic per seed", "[exec][dataset]") {
  SyntheticOptions o;
  o.train_samples = 50;
  o.test_samples = 10;
  o.features = 8;
  const Dataset a = make_synthetic(o), b = make_synthetic(o);
  CHECK(a.train_x == b.train_x);
  CHECK(a.train_y == b.train_y);
  o.seed = 2;
  CHECK(make_synthetic(o).train_x != a.train_x);
  for (int y : a.train_y)
    CHECK((y >= 0 && y < 10));
}

TEST_CASE("the installed Fashion-MNIST has the documented shape", "[exec][dataset]") {
  if (!fashion_mnist_present(default_data_dir())) {
    WARN("dataset-fashion-mnist not installed: skipped");
    return;
  }
  const Dataset d = load_fashion_mnist(default_data_dir(), 100, 100);
  CHECK(d.train_size() == 100);
  CHECK(d.test_size() == 100);
  CHECK(d.classes == 10);
}
