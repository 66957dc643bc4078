// combine.hpp: the arithmetic of combining K workers' flat vectors into one, on the host.
//
// Two rules. Mean (SparkNet, HetSeq): sum_k w_k x_k / sum_k w_k, with w_k the samples worker k
// computed on, so averaged gradients are the gradient of the mean loss over the global batch.
// Adasum (Maleki et al., arXiv 2006.02924): pairwise
//   Adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b,
// applied recursively over a binary tree of workers in index order (0+1, 2+3, then the pairs);
// with K not a power of two the odd vector of a level is carried up unchanged. Before the tree
// each x_k is scaled by K w_k / sum w, which is 1 for equal weights. Sums and dot products are
// accumulated in double, in a fixed order, so the result does not depend on threads or timing.
// What it leaves out: any communication; communicators move the data and call these functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tauplan::exec {

enum class CombineRule { Mean, Adasum };

const char* to_string(CombineRule rule);
/// "mean" or "adasum"; returns false for anything else.
bool parse_combine_rule(const std::string& text, CombineRule& rule);

/// Weighted mean of `inputs` (each `n` floats) into `out` (may alias inputs[0]), accumulated in
/// double in index order. Weights must be >= 0 with a positive sum.
void combine_mean(const std::vector<const float*>& inputs, const std::vector<double>& weights,
                  std::size_t n, float* out);

/// A parameter server's combine of K pushes (exec's servers, and their probe): each push is `len`
/// floats followed by its weight; their weighted mean (combine_mean) into `mean` (len floats).
void mean_of_pushes(const std::vector<const float*>& pushed, std::size_t len, float* mean);

/// A parameter server's SGD apply of a pushed gradient shard: shard[i] -= rate x gradient[i].
void apply_sgd(float* shard, const float* gradient, std::size_t n, float rate);

/// Adasum of two vectors into `out` (may alias a or b). A zero vector leaves the other as is.
void adasum_pair(const float* a, const float* b, std::size_t n, float* out);

/// Recursive pairwise Adasum of `inputs` after scaling each by K w_k / sum w; result in `out`.
void combine_adasum(const std::vector<const float*>& inputs, const std::vector<double>& weights,
                    std::size_t n, float* out);

/// Dispatches on the rule.
void combine(CombineRule rule, const std::vector<const float*>& inputs,
             const std::vector<double>& weights, std::size_t n, float* out);

}  // namespace tauplan::exec
