// vk::nn::functional — torch.nn.functional in C++, composed from public ops.
//
// Every function here is built from ops of the op table, so its gradient comes from the ops'
// rules and second derivatives work without any rule written here. An optional tensor argument
// is an undefined Tensor for "none" (as conv2d's bias). `reduction` is "mean", "sum" or "none".
// Argument order and defaults follow torch.nn.functional, so the Python layer binds them 1:1.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "vkml/core/tensor.h"

namespace vk::nn::functional {

using Size2 = std::array<int64_t, 2>;  // (height, width), as torch's int-or-pair arguments

// ---- linear layers and activations ----
// y = x @ w^T + b; w is (out_features, in_features), b (out_features) or undefined.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = Tensor());
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, std::string_view approximate = "none");  // "none" | "tanh"
Tensor silu(const Tensor& x);                                         // x * sigmoid(x), one op
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// ---- losses ----
// logits (N, C), (N, C, d1, ...) or unbatched (C). target: integer class indices of shape
// (N, d1, ...) (or 0-d), or float class probabilities of the logits' shape.
// weight (C) rescales each class; the weighted mean divides by the sum of the weights of the
// non-ignored targets (torch). label_smoothing mixes the target with the uniform distribution.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, std::string_view reduction = "mean",
                     double label_smoothing = 0.0);
// log_probs as cross_entropy's logits; target integer class indices only.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, std::string_view reduction = "mean");
// input and target broadcast together (torch warns on different shapes; vkml accepts them).
Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");
// -w * (y log p + (1 - y) log(1 - p)), each log clamped at -100 (torch); p in [0, 1] is checked.
// target has p's shape; weight broadcasts to it.
Tensor binary_cross_entropy(const Tensor& p, const Tensor& target, const Tensor& weight = Tensor(),
                            std::string_view reduction = "mean");
// The stable form of binary_cross_entropy(sigmoid(x), y); pos_weight weighs the positive term and
// broadcasts along the last dim (the class dim), weight broadcasts to x's shape.
Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(),
                                        std::string_view reduction = "mean");

// ---- normalisation and regularisation ----
// Normalises over the last normalized_shape.size() dims with the biased variance (torch);
// weight and bias (optional) have shape normalized_shape.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// x (N, C, ...). Training: normalises with the batch statistics (biased variance) and, when the
// running stats are defined, updates them in place under no_grad with the unbiased variance:
// running = (1 - momentum) * running + momentum * batch. They are bookkeeping, never recorded.
// Eval: normalises with the running stats (which must be defined).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5);
// Inverted dropout: zeroes each element with probability p and scales the rest by 1 / (1 - p).
// The mask comes from vk::rand, so a seed (or checkpoint's saved RNG state) reproduces it.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

// ---- embeddings and encodings ----
// weight (num_embeddings, dim); result indices.shape + [dim]. Repeated indices add up their
// gradients (index_select's rule is a scatter_add). padding_idx's row receives no gradient.
Tensor embedding(const Tensor& indices, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt);
// int64 result of shape indices.shape + [num_classes]; num_classes -1 means max(indices) + 1.
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);
// Constant padding; `pad` lists (before, after) pairs from the last dim, as torch.
// Modes "constant", "reflect", "replicate" and "circular" (the last three: pad_indexed).
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, std::string_view mode = "constant",
           double value = 0.0);

// ---- attention ----
// softmax(q k^T * scale + bias) v over q (..., L, E), k (..., S, E), v (..., S, Ev).
// attn_mask: bool (true = attend) or float (added to the scores), broadcasting to (..., L, S).
// is_causal masks key j > query i (top-left aligned, torch); it excludes attn_mask.
// scale defaults to 1 / sqrt(E). A row with every key masked gives NaN (as torch's math path).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

// ---- convolution and pooling (NCHW; a 3-D input is one unbatched image, as torch) ----
// im2col: (N, C, H, W) -> (N, C*kh*kw, L).
Tensor unfold(const Tensor& x, Size2 kernel_size, Size2 dilation = {1, 1}, Size2 padding = {0, 0},
              Size2 stride = {1, 1});
// col2im: (N, C*kh*kw, L) -> (N, C, output_size), summing overlapping windows.
Tensor fold(const Tensor& cols, Size2 output_size, Size2 kernel_size, Size2 dilation = {1, 1},
            Size2 padding = {0, 0}, Size2 stride = {1, 1});
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Size2 stride = {1, 1}, Size2 padding = {0, 0}, Size2 dilation = {1, 1},
              int64_t groups = 1);
// stride defaults to kernel_size. Windows never hang past the padded input (ceil_mode=False).
Tensor max_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = {0, 0}, Size2 dilation = {1, 1});
struct PoolWithIndices {
  Tensor values, indices;  // indices: int64 flat positions within each (H, W) input plane
};
PoolWithIndices max_pool2d_with_indices(const Tensor& x, Size2 kernel_size,
                                        std::optional<Size2> stride = std::nullopt,
                                        Size2 padding = {0, 0}, Size2 dilation = {1, 1});
// Padding counts as zeros in the mean (torch's count_include_pad=True, ceil_mode=False).
Tensor avg_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = {0, 0});

// ==== nn breadth (issue #16): activations, losses and layers composed from the ops above ====
// (defined in activation.cpp, loss.cpp and layers.cpp of this folder)

// ---- activations (torch.nn.functional's names and defaults) ----
Tensor mish(const Tensor& x);         // x * tanh(softplus(x))
Tensor hardswish(const Tensor& x);    // x * relu6(x + 3) / 6
Tensor hardsigmoid(const Tensor& x);  // relu6(x + 3) / 6
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor relu6(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, double alpha = 1.0);
// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (torch).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor softsign(const Tensor& x);  // x / (1 + |x|)
// max(0, x) + weight * min(0, x); weight (1) or (C) along dim 1 (a 1-D input has 1 channel).
Tensor prelu(const Tensor& x, const Tensor& weight);
Tensor tanhshrink(const Tensor& x);                                 // x - tanh(x)
Tensor threshold(const Tensor& x, double threshold, double value);  // x where x > threshold
Tensor glu(const Tensor& x, int64_t dim = -1);                      // a * sigmoid(b), halves of dim
Tensor logsigmoid(const Tensor& x);
Tensor softmin(const Tensor& x, int64_t dim);
Tensor hardshrink(const Tensor& x, double lambd = 0.5);
Tensor softshrink(const Tensor& x, double lambd = 0.5);

// ---- distances ----
// ||x1 - x2 + eps||_p over the last dim of the broadcast inputs (p may be inf).
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6,
                         bool keepdim = false);
// sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) over dim.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
// x / max(||x||_p, eps) along dim.
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

// ---- more losses; `reduction` as above ("batchmean" too for kl_div) ----
Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
              bool log_target = false);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      std::string_view reduction = "mean", double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                  double delta = 1.0);
Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                           double margin = 0.0, std::string_view reduction = "mean");
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            std::string_view reduction = "mean");
Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             double margin = 0.0, std::string_view reduction = "mean");
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin = 1.0, double p = 2.0, double eps = 1e-6,
                           bool swap = false, std::string_view reduction = "mean");
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true,
                        bool full = false, double eps = 1e-8, std::string_view reduction = "mean");
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         bool full = false, double eps = 1e-6, std::string_view reduction = "mean");
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const Tensor& weight = Tensor(),
                                   std::string_view reduction = "mean");
Tensor soft_margin_loss(const Tensor& input, const Tensor& target,
                        std::string_view reduction = "mean");

// ---- more layers ----
// x (N, C, *) normalised over each group of C / num_groups channels and *; weight, bias (C).
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// x * rsqrt(mean(x^2 over normalized_shape) + eps) * weight; eps default: the dtype's epsilon.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);
// Per-sample, per-channel normalisation of x (N, C, *); running stats as batch_norm's, averaged
// over the batch (torch), used instead of the sample's own when use_input_stats is false.
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = Tensor(),
                     const Tensor& running_var = Tensor(), const Tensor& weight = Tensor(),
                     const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);
// (N, C*r*r, H, W) <-> (N, C, H*r, W*r), any leading dims.
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);
// Adaptive average pooling of the last k dims (k = output_size.size()) to output_size: a
// product with a fixed (in, out) averaging matrix per dim, exact for any sizes.
Tensor adaptive_avg_pool(const Tensor& x, const std::vector<int64_t>& output_size);
// Adaptive max pooling of the last output_size.size() dims: per dim, each window's positions
// (padded to the longest window by repeating its last one) gathered by index_select, then amax.
// Max over a rectangle is max over rows of max over columns, so the dims go one at a time.
Tensor adaptive_max_pool(const Tensor& x, const std::vector<int64_t>& output_size);
// x1 (..., in1), x2 (..., in2), weight (out, in1, in2), bias (out): x1^T W x2 + b.
Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight,
                const Tensor& bias = Tensor());
// Padding modes "reflect", "replicate" and "circular" of the last pad.size() / 2 dims, as
// index_select with computed indices (so the gradient sums onto the source positions).
Tensor pad_indexed(const Tensor& x, const std::vector<int64_t>& pad, std::string_view mode);
// Channel-wise dropout: one keep/drop draw per (N, C) (or per C of an unbatched input).
Tensor feature_dropout(const Tensor& x, double p, bool training, int64_t batched_ndim);
Tensor alpha_dropout(const Tensor& x, double p, bool training);
// Interpolation of the last size.size() dims of x (N, C, *) to `size`: "nearest",
// "nearest-exact", "linear"/"bilinear"/"trilinear" (separable: one product with a fixed (in, out)
// matrix per dim, exact), "area" (adaptive_avg_pool). scales (per dim, or empty) are the user's
// scale factors, used for the coordinate map as torch does unless recompute_scale_factor.
Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size,
                   const std::vector<double>& scales, std::string_view mode,
                   bool align_corners = false);
// conv1d as conv2d of (N, C, 1, L); weight (out, in / groups, k).
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
// padding='same' (stride 1): the input padded by dilation * (k - 1) in all, the extra one at the
// end, as torch. spatial is 1 (conv1d) or 2 (conv2d).
Tensor conv_same(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 dilation,
                 int64_t groups, int spatial);
Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, int64_t dilation, Tensor* indices = nullptr);
Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding);
// ---- end nn breadth ----

}  // namespace vk::nn::functional
