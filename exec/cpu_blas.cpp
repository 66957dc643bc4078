// cpu_blas.cpp: row-major GEMM through OpenBLAS's CBLAS, or through Eigen's products.
#include "exec/cpu_blas.hpp"

#include <Eigen/Core>
#include <atomic>
#include <cassert>
#include <mutex>
#include <string>

#ifdef TAUPLAN_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace tauplan::exec {

namespace {

std::atomic<int> requested_threads{1};
std::once_flag default_threads_applied;

void apply_threads(int threads) {
#ifdef TAUPLAN_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#else
  Eigen::setNbThreads(threads);  // without OpenMP, Eigen's products stay on one thread
#endif
}

// OpenBLAS starts with one thread per core (or OPENBLAS_NUM_THREADS); tauplan's default is one
// thread per product, applied before the first product unless set_compute_threads came first.
void ensure_threads_applied() {
  std::call_once(default_threads_applied, [] { apply_threads(requested_threads.load()); });
}

#ifndef TAUPLAN_HAVE_OPENBLAS
template <typename Scalar>
using RowMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename Scalar>
using Strided = Eigen::OuterStride<Eigen::Dynamic>;

template <typename Scalar>
void eigen_gemm(bool transpose_a, bool transpose_b, int m, int n, int k, Scalar alpha,
                const Scalar* a, int lda, const Scalar* b, int ldb, Scalar beta, Scalar* c,
                int ldc) {
  using ConstMap = Eigen::Map<const RowMatrix<Scalar>, Eigen::Unaligned, Strided<Scalar>>;
  using Map = Eigen::Map<RowMatrix<Scalar>, Eigen::Unaligned, Strided<Scalar>>;
  // A stored as m x k (or k x m when transposed); likewise B.
  const ConstMap a_stored(a, transpose_a ? k : m, transpose_a ? m : k, Strided<Scalar>(lda));
  const ConstMap b_stored(b, transpose_b ? n : k, transpose_b ? k : n, Strided<Scalar>(ldb));
  Map c_map(c, m, n, Strided<Scalar>(ldc));
  if (beta == Scalar(0))
    c_map.setZero();
  else if (beta != Scalar(1))
    c_map *= beta;
  if (transpose_a && transpose_b)
    c_map.noalias() += alpha * (a_stored.transpose() * b_stored.transpose());
  else if (transpose_a)
    c_map.noalias() += alpha * (a_stored.transpose() * b_stored);
  else if (transpose_b)
    c_map.noalias() += alpha * (a_stored * b_stored.transpose());
  else
    c_map.noalias() += alpha * (a_stored * b_stored);
}
#endif

}  // namespace

void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  assert(m > 0 && n > 0 && k > 0);
  ensure_threads_applied();
#ifdef TAUPLAN_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
#else
  eigen_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, double alpha, const double* a,
          int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  assert(m > 0 && n > 0 && k > 0);
  ensure_threads_applied();
#ifdef TAUPLAN_HAVE_OPENBLAS
  cblas_dgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
#else
  eigen_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

void set_compute_threads(int threads) {
  assert(threads >= 1);
  requested_threads.store(threads);
  std::call_once(default_threads_applied, [] {});  // the default is no longer applied
  apply_threads(threads);
}

int compute_threads() {
  return requested_threads.load();
}

bool compute_backend_is_openblas() {
#ifdef TAUPLAN_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

std::string compute_backend_description() {
  ensure_threads_applied();
  const int threads = requested_threads.load();
  const std::string thread_text = std::to_string(threads) + (threads == 1 ? " thread" : " threads");
#ifdef TAUPLAN_HAVE_OPENBLAS
  const int parallel = openblas_get_parallel();  // 0 sequential, 1 pthreads, 2 OpenMP
  const char* parallel_text = parallel == 0 ? "sequential" : parallel == 1 ? "pthreads" : "OpenMP";
  return std::string(openblas_get_config()) + ", core " + openblas_get_corename() + ", " +
         parallel_text + ", " + std::to_string(openblas_get_num_threads()) + " of " + thread_text +
         " requested";
#else
  const char* isa = Eigen::SimdInstructionSetsInUse();
  return "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
         std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) + " (" +
         isa + "), " + thread_text + " requested, 1 used (no OpenMP)";
#endif
}

}  // namespace tauplan::exec
