// cpu_blas.hpp: the matrix products of the CPU MLP, and how many threads they may use.
//
// Two back ends, chosen when the project is configured: OpenBLAS's CBLAS (found with
// pkg-config; TAUPLAN_HAVE_OPENBLAS), whose kernels are picked at run time for the CPU that
// runs them (Debian builds it with DYNAMIC_ARCH), or Eigen's products (portable x86-64 code,
// slower) when OpenBLAS is absent or TAUPLAN_WITH_OPENBLAS=OFF. Matrices are row-major.
//
// Threads: the trainer's workers are threads (or MPI ranks) themselves, so by default every
// product runs on its caller's thread alone (one BLAS thread per process), and K workers on
// C cores never start K x C BLAS threads. set_compute_threads(t) asks for t BLAS threads per
// product; OpenBLAS's setting is per process, so it is for one worker per process (the step
// benchmark, a single-worker run), never for K worker threads. OPENBLAS_NUM_THREADS is
// overridden: the thread count is tauplan's setting. What it leaves out: other BLAS
// libraries (BLIS, MKL) and batched or mixed-precision products.
#pragma once

#include <string>

namespace tauplan::exec {

/// C = alpha * op(A) * op(B) + beta * C, row-major; op(X) is X or its transpose. op(A) is
/// m x k, op(B) is k x n, C is m x n; lda, ldb, ldc are the row strides of A, B and C as stored.
void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc);
void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, double alpha, const double* a,
          int lda, const double* b, int ldb, double beta, double* c, int ldc);

/// Threads of one matrix product (>= 1; default 1). Applies to every product in the process.
void set_compute_threads(int threads);
int compute_threads();

/// The back end as it runs here, e.g. "OpenBLAS 0.3.21 ... core SkylakeX, pthread, 1 thread"
/// or "Eigen 3.4.0 (SSE2), 1 thread".
std::string compute_backend_description();
/// True when products go through OpenBLAS.
bool compute_backend_is_openblas();

}  // namespace tauplan::exec
