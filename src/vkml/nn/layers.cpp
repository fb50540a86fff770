// torch.nn's normalisation, resampling, padding and dropout layers beyond the classic ones
// (issue #16), composed from ops so every gradient comes from the ops' rules. Resampling along a
// dim is a product with a fixed (in, out) matrix built on the host: exact, one matmul per dim.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "vkml/core/grad_mode.h"
#include "vkml/nn/breadth_util.h"
#include "vkml/nn/functional.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/index.h"
#include "vkml/ops/inplace.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/norm.h"
#include "vkml/ops/shape.h"

namespace vk::nn::functional {

using breadth::check_companion;
using breadth::check_float;

namespace {

// A (C) tensor viewed as (1, C, 1, ...) to broadcast along dim 1 of an ndim-dim tensor.
Tensor per_channel(const Tensor& t, int64_t ndim) {
  Shape shape(static_cast<size_t>(ndim), 1);
  shape[1] = t.numel();
  return reshape(t, shape);
}

void check_channel_param(const Tensor& t, const Tensor& x, const char* fn, const char* what) {
  if (!t.defined()) return;
  check_companion(t, x, fn, what);
  VK_CHECK(t.shape() == Shape{x.size(1)}, SizeError, fn, ": ", what, " of shape ",
           shape_str(t.shape()), " does not match the ", x.size(1),
           " channels of the input of shape ", shape_str(x.shape()));
}

Tensor channel_affine(const Tensor& y, const Tensor& weight, const Tensor& bias) {
  Tensor out = weight.defined() ? y * per_channel(weight, y.ndim()) : y;
  return bias.defined() ? out + per_channel(bias, y.ndim()) : out;
}

// The (in, out) matrix m on x's device and dtype, applied along dim d of x: x moved to the last
// dim, times m, moved back.
Tensor apply_along(const Tensor& x, int64_t d, const std::vector<double>& m, int64_t in,
                   int64_t out) {
  Tensor mat = to_device(from_vector(m, {in, out}, x.dtype()), x.device());
  Tensor moved = transpose(x, d, -1);
  return transpose(matmul(moved, mat), d, -1);
}

}  // namespace

// ======================= normalisation =======================

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  constexpr const char* fn = "group_norm";
  check_float(x, fn, "input");
  VK_CHECK(x.ndim() >= 2, SizeError, fn, ": expected an input of at least 2 dims (N, C, *), got ",
           shape_str(x.shape()));
  const int64_t channels = x.size(1);
  VK_CHECK(num_groups > 0 && channels % num_groups == 0, SizeError, fn,
           ": expected the number of channels ", channels, " to be divisible by num_groups ",
           num_groups, " (input of shape ", shape_str(x.shape()), ")");
  check_channel_param(weight, x, fn, "weight");
  check_channel_param(bias, x, fn, "bias");
  const int64_t per_group = x.numel() / std::max<int64_t>(x.size(0) * num_groups, 1);
  // the fused layer_norm over each group's values (biased variance, as torch)
  Tensor grouped = reshape(x, {x.size(0), num_groups, per_group});
  Tensor y = reshape(vk::layer_norm(grouped, {per_group}, Tensor(), Tensor(), eps), x.shape());
  return channel_affine(y, weight, bias);
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  constexpr const char* fn = "rms_norm";
  check_float(x, fn, "input");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  VK_CHECK(
      k >= 1 && x.ndim() >= k && Shape(x.shape().end() - k, x.shape().end()) == normalized_shape,
      SizeError, fn, ": input of shape ", shape_str(x.shape()),
      " does not end in normalized_shape ", shape_str(normalized_shape));
  const double e = eps.value_or(x.dtype() == DType::Float64
                                    ? std::numeric_limits<double>::epsilon()
                                    : static_cast<double>(std::numeric_limits<float>::epsilon()));
  Dims dims;
  for (int64_t i = 0; i < k; ++i) dims.push_back(x.ndim() - k + i);
  Tensor y = x * rsqrt(mean(x * x, dims, true) + e);
  if (!weight.defined()) return y;
  check_companion(weight, x, fn, "weight");
  VK_CHECK(weight.shape() == normalized_shape, SizeError, fn, ": weight of shape ",
           shape_str(weight.shape()), " does not match normalized_shape ",
           shape_str(normalized_shape));
  return y * weight;
}

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  constexpr const char* fn = "instance_norm";
  check_float(x, fn, "input");
  VK_CHECK(x.ndim() >= 3, SizeError, fn, ": expected an input (N, C, *) of at least 3 dims, got ",
           shape_str(x.shape()));
  for (const auto& [t, what] :
       {std::pair{&running_mean, "running_mean"}, std::pair{&running_var, "running_var"},
        std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
    check_channel_param(*t, x, fn, what);
  const int64_t n = x.size(0), c = x.size(1);
  const int64_t spatial = x.numel() / std::max<int64_t>(n * c, 1);
  if (!use_input_stats) {
    VK_CHECK(running_mean.defined() && running_var.defined(), RuntimeError, fn,
             ": running_mean and running_var must be defined when not using input stats");
    Tensor y =
        (x - per_channel(running_mean, x.ndim())) * rsqrt(per_channel(running_var, x.ndim()) + eps);
    return channel_affine(y, weight, bias);
  }
  VK_CHECK(spatial > 1, SizeError, fn,
           ": expected more than 1 spatial element when training, got input of shape ",
           shape_str(x.shape()));
  Tensor rows = reshape(x, {n * c, spatial});
  Tensor y = reshape(vk::layer_norm(rows, {spatial}, Tensor(), Tensor(), eps), x.shape());
  if (running_mean.defined()) {  // the batch's average of the instances' stats, off the tape
    NoGradGuard no_grad;
    Tensor r = rows.detach();
    Tensor mu = mean(reshape(mean(r, {1}), {n, c}), {0});
    Tensor var = mean(reshape(vk::var(r, {1}, 1.0), {n, c}), {0});
    copy_(running_mean, running_mean * (1.0 - momentum) + mu * momentum);
    copy_(running_var, running_var * (1.0 - momentum) + var * momentum);
  }
  return channel_affine(y, weight, bias);
}

// ======================= pixel shuffle, pooling, resampling =======================

Tensor pixel_shuffle(const Tensor& x, int64_t r) {
  constexpr const char* fn = "pixel_shuffle";
  VK_CHECK(x.defined() && x.ndim() >= 3, SizeError, fn,
           ": expected an input of at least 3 dims (*, C, H, W), got ", shape_str(x.shape()));
  VK_CHECK(r > 0, SizeError, fn, ": upscale_factor must be > 0, got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  VK_CHECK(c % (r * r) == 0, SizeError, fn, ": the ", c,
           " channels of the input must be divisible by upscale_factor^2 = ", r * r);
  Shape lead(x.shape().begin(), x.shape().end() - 3);
  const int64_t b = static_cast<int64_t>(lead.size());
  Shape split = lead;
  split.insert(split.end(), {c / (r * r), r, r, h, w});
  std::vector<int64_t> order;
  for (int64_t i = 0; i < b; ++i) order.push_back(i);
  order.insert(order.end(), {b, b + 3, b + 1, b + 4, b + 2});
  Shape out = lead;
  out.insert(out.end(), {c / (r * r), h * r, w * r});
  return reshape(permute(reshape(x, split), order), out);
}

Tensor pixel_unshuffle(const Tensor& x, int64_t r) {
  constexpr const char* fn = "pixel_unshuffle";
  VK_CHECK(x.defined() && x.ndim() >= 3, SizeError, fn,
           ": expected an input of at least 3 dims (*, C, H, W), got ", shape_str(x.shape()));
  VK_CHECK(r > 0, SizeError, fn, ": downscale_factor must be > 0, got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  VK_CHECK(h % r == 0 && w % r == 0, SizeError, fn, ": height ", h, " and width ", w,
           " must be divisible by downscale_factor ", r);
  Shape lead(x.shape().begin(), x.shape().end() - 3);
  const int64_t b = static_cast<int64_t>(lead.size());
  Shape split = lead;
  split.insert(split.end(), {c, h / r, r, w / r, r});
  std::vector<int64_t> order;
  for (int64_t i = 0; i < b; ++i) order.push_back(i);
  order.insert(order.end(), {b, b + 2, b + 4, b + 1, b + 3});
  Shape out = lead;
  out.insert(out.end(), {c * r * r, h / r, w / r});
  return reshape(permute(reshape(x, split), order), out);
}

namespace {

// (in, out) averaging matrix of adaptive pooling: output j averages [floor(j in / out),
// ceil((j + 1) in / out)).
std::vector<double> adaptive_matrix(int64_t in, int64_t out) {
  std::vector<double> m(static_cast<size_t>(in * out), 0.0);
  for (int64_t j = 0; j < out; ++j) {
    const int64_t start = (j * in) / out, stop = ((j + 1) * in + out - 1) / out;
    for (int64_t i = start; i < stop; ++i)
      m[static_cast<size_t>(i * out + j)] = 1.0 / static_cast<double>(stop - start);
  }
  return m;
}

}  // namespace

Tensor adaptive_avg_pool(const Tensor& x, const std::vector<int64_t>& output_size) {
  constexpr const char* fn = "adaptive_avg_pool";
  check_float(x, fn, "input");
  const int64_t k = static_cast<int64_t>(output_size.size());
  VK_CHECK(x.ndim() == k + 1 || x.ndim() == k + 2, SizeError, fn, ": expected a ", k + 1, "-D or ",
           k + 2, "-D input, got shape ", shape_str(x.shape()));
  bool windows_even = true;  // every output averages in / out inputs, without overlap
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.ndim() - k + i, in = x.size(d), out = output_size[i];
    VK_CHECK(in > 0 && out >= 0, SizeError, fn, ": input of shape ", shape_str(x.shape()),
             " has an empty spatial dim or output size ", out, " is negative");
    windows_even = windows_even && out > 0 && in % out == 0;
  }
  if (windows_even) {
    // (..., out0, in0 / out0, out1, in1 / out1, ...) and the mean over the windows: one pass,
    // where the matrices cost in * out products per row (global pooling 10x slower than torch).
    Shape split(x.shape().begin(), x.shape().end() - k);
    std::vector<int64_t> window_dims;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t in = x.size(x.ndim() - k + i), out = output_size[i];
      split.push_back(out);
      split.push_back(in / out);
      window_dims.push_back(static_cast<int64_t>(split.size()) - 1);
    }
    return mean(reshape(x, split), window_dims);
  }
  Tensor y = x;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.ndim() - k + i, in = x.size(d), out = output_size[i];
    y = apply_along(y, d, adaptive_matrix(in, out), in, out);
  }
  return y;
}

Tensor adaptive_max_pool(const Tensor& x, const std::vector<int64_t>& output_size) {
  constexpr const char* fn = "adaptive_max_pool";
  check_float(x, fn, "input");
  const int64_t k = static_cast<int64_t>(output_size.size());
  VK_CHECK(x.ndim() == k + 1 || x.ndim() == k + 2, SizeError, fn, ": expected a ", k + 1, "-D or ",
           k + 2, "-D input, got shape ", shape_str(x.shape()));
  Tensor y = x;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.ndim() - k + i, in = x.size(d), out = output_size[i];
    VK_CHECK(in > 0 && out > 0, SizeError, fn, ": input of shape ", shape_str(x.shape()),
             " has an empty spatial dim or output size ", out, " is not positive");
    int64_t longest = 0;
    for (int64_t j = 0; j < out; ++j)
      longest = std::max(longest, ((j + 1) * in + out - 1) / out - (j * in) / out);
    std::vector<int64_t> index;  // (out, longest), a window's last position repeated
    for (int64_t j = 0; j < out; ++j) {
      const int64_t start = (j * in) / out, stop = ((j + 1) * in + out - 1) / out;
      for (int64_t t = 0; t < longest; ++t) index.push_back(std::min(start + t, stop - 1));
    }
    Tensor idx = to_device(
        from_data(index.data(), {static_cast<int64_t>(index.size())}, DType::Int64), x.device());
    Tensor picked = transpose(index_select(y, d, idx), d, -1);  // (..., out * longest)
    Shape windows = picked.shape();
    windows.back() = out;
    windows.push_back(longest);
    y = transpose(amax(reshape(picked, windows), {-1}), d, -1);
  }
  return y;
}

namespace {

// The source coordinate of output position j along a dim (torch's coordinate maps).
double source_coord(int64_t j, int64_t in, int64_t out, double scale, bool align_corners) {
  if (align_corners)
    return out > 1
               ? static_cast<double>(j) * static_cast<double>(in - 1) / static_cast<double>(out - 1)
               : 0.0;
  return std::max(0.0, (static_cast<double>(j) + 0.5) * scale - 0.5);
}

// torch's cubic convolution weights (A = -0.75) of the 4 neighbours floor(src) - 1 .. floor(src) +
// 2, at their distances 1 + t, t, 1 - t and 2 - t from src (t = src - floor(src)).
std::array<double, 4> cubic_weights(double t) {
  constexpr double A = -0.75;
  auto near = [](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// One interpolated dim along d: each output j reads input i0[j] (nearest), lerps between i0[j]
// and i0[j] + 1 (linear, clamped at the edge) by weight frac[j], or weighs four neighbours
// (cubic: two interpolate_dim steps, each neighbour clamped into the input as torch's); torch's
// coordinate maps. Gathers (index_select, interpolate_dim: a scatter-add backward) rather than an
// (in, out) matrix: a matrix costs in products per output (upsampling 256 -> 512 by two: 5-13x
// slower than torch).
Tensor resample_dim(const Tensor& x, int64_t d, int64_t out, double scale, std::string_view mode,
                    bool align_corners) {
  const int64_t in = x.size(d);
  const bool nearest = mode == "nearest" || mode == "nearest-exact", cubic = mode == "bicubic";
  const size_t taps = nearest ? 1 : cubic ? 4 : 2;
  std::vector<std::vector<int64_t>> index(taps, std::vector<int64_t>(static_cast<size_t>(out)));
  std::vector<std::vector<double>> weight(taps, std::vector<double>(static_cast<size_t>(out)));
  for (int64_t j = 0; j < out; ++j) {
    const double jd = static_cast<double>(j);
    const auto u = static_cast<size_t>(j);
    if (nearest) {
      const double src =
          mode == "nearest" ? std::floor(jd * scale) : std::floor((jd + 0.5) * scale);
      index[0][u] = std::min(static_cast<int64_t>(src), in - 1);
    } else if (cubic) {  // the source coordinate is not clamped at 0 here (torch's cubic map)
      const double src =
          align_corners ? source_coord(j, in, out, scale, true) : (jd + 0.5) * scale - 0.5;
      const int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
      const std::array<double, 4> w =
          cubic_weights(std::clamp(src - static_cast<double>(i0), 0.0, 1.0));
      for (size_t k = 0; k < 4; ++k) {
        index[k][u] = std::clamp<int64_t>(i0 - 1 + static_cast<int64_t>(k), 0, in - 1);
        weight[k][u] = w[k];
      }
    } else {
      const double src = source_coord(j, in, out, scale, align_corners);
      index[0][u] = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
      index[1][u] = std::min(index[0][u] + 1, in - 1);
      weight[1][u] = src - static_cast<double>(index[0][u]);
      weight[0][u] = 1.0 - weight[1][u];
    }
  }
  auto at = [&](size_t k) {
    return to_device(from_data(index[k].data(), {out}, DType::Int64), x.device());
  };
  if (nearest) return index_select(x, d, at(0));
  auto w = [&](size_t k) {
    return to_device(from_vector(weight[k], {out}, x.dtype()), x.device());
  };
  // as torch's sums of weighted neighbours (a difference of two could overflow), a pass per pair
  Tensor y = interpolate_dim(x, d, at(0), at(1), w(0), w(1));
  if (cubic) y = y + interpolate_dim(x, d, at(2), at(3), w(2), w(3));
  return y;
}

}  // namespace

Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size,
                   const std::vector<double>& scales, std::string_view mode, bool align_corners) {
  constexpr const char* fn = "interpolate";
  check_float(x, fn, "input");
  const int64_t k = static_cast<int64_t>(size.size());
  VK_CHECK(x.ndim() == k + 2, SizeError, fn, ": input of shape ", shape_str(x.shape()),
           " must be (N, C, ", k, " spatial dims) for an output size of ", k, " dims");
  if (mode == "area") return adaptive_avg_pool(x, size);
  const bool linear = mode == "linear" || mode == "bilinear" || mode == "trilinear";
  const bool cubic = mode == "bicubic";
  VK_CHECK(
      linear || cubic || mode == "nearest" || mode == "nearest-exact", NotImplementedError, fn,
      ": mode '", mode,
      "' is not supported (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area)");
  VK_CHECK(!cubic || k == 2, NotImplementedError, fn, ": got ", x.ndim(),
           "D input, but bicubic mode needs 4D input (N, C, H, W)");
  Tensor y = x;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = 2 + i, in = x.size(d), out = size[i];
    VK_CHECK(in > 0 && out > 0, SizeError, fn, ": input and output sizes must be > 0, got input ",
             shape_str(x.shape()), " and output size ", out);
    const double scale = scales.empty() || scales[i] <= 0.0
                             ? static_cast<double>(in) / static_cast<double>(out)
                             : 1.0 / scales[i];
    y = resample_dim(y, d, out, scale, mode, (linear || cubic) && align_corners);
  }
  return y;
}

// ======================= bilinear, padding, dropout =======================

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  constexpr const char* fn = "bilinear";
  check_float(x1, fn, "input1");
  check_companion(x2, x1, fn, "input2");
  check_companion(weight, x1, fn, "weight");
  VK_CHECK(weight.ndim() == 3 && x1.ndim() >= 1 && x2.ndim() == x1.ndim() &&
               x1.size(-1) == weight.size(1) && x2.size(-1) == weight.size(2) &&
               Shape(x1.shape().begin(), x1.shape().end() - 1) ==
                   Shape(x2.shape().begin(), x2.shape().end() - 1),
           SizeError, fn, ": input1 ", shape_str(x1.shape()), ", input2 ", shape_str(x2.shape()),
           " and weight ", shape_str(weight.shape()),
           " do not fit (..., in1), (..., in2) and (out, in1, in2)");
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  Tensor a = reshape(x1, {-1, in1}), b = reshape(x2, {-1, in2});
  // (rows, in1) @ (in1, out * in2) -> (rows, out, in2), then the dot with x2 per output
  Tensor w = reshape(permute(weight, {1, 0, 2}), {in1, out * in2});
  Tensor t = reshape(matmul(a, w), {-1, out, in2});
  Tensor y = sum(t * unsqueeze(b, 1), {2});
  if (bias.defined()) {
    check_companion(bias, x1, fn, "bias");
    VK_CHECK(bias.shape() == Shape{out}, SizeError, fn, ": bias of shape ", shape_str(bias.shape()),
             " must be (", out, ")");
    y = y + bias;
  }
  Shape shape(x1.shape().begin(), x1.shape().end() - 1);
  shape.push_back(out);
  return reshape(y, shape);
}

Tensor pad_indexed(const Tensor& x, const std::vector<int64_t>& pad, std::string_view mode) {
  constexpr const char* fn = "pad";
  const bool known = mode == "reflect" || mode == "replicate" || mode == "circular";
  VK_CHECK(known, NotImplementedError, fn, ": mode '", mode,
           "' is not supported (constant, reflect, replicate, circular)");
  VK_CHECK(pad.size() % 2 == 0 && static_cast<int64_t>(pad.size()) / 2 <= x.ndim(), SizeError, fn,
           ": padding length ", pad.size(), " must be even and at most twice the ", x.ndim(),
           " dims of the input");
  Tensor y = x;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = x.ndim() - 1 - static_cast<int64_t>(i);
    const int64_t n = x.size(d), before = pad[2 * i], after = pad[2 * i + 1];
    VK_CHECK(mode != "reflect" || (before < n && after < n), SizeError, fn, ": reflect padding (",
             before, ", ", after, ") must be below the size ", n, " of dim ", d,
             " of the input of shape ", shape_str(x.shape()));
    VK_CHECK(n > 0 && (mode != "circular" || (before <= n && after <= n)), SizeError, fn, ": ",
             mode, " padding (", before, ", ", after, ") does not fit dim ", d, " of size ", n);
    std::vector<int64_t> index;
    for (int64_t k = -before; k < n + after; ++k) {
      int64_t src = k;
      if (mode == "reflect") src = k < 0 ? -k : (k >= n ? 2 * (n - 1) - k : k);
      if (mode == "replicate") src = std::clamp<int64_t>(k, 0, n - 1);
      if (mode == "circular") src = ((k % n) + n) % n;
      index.push_back(src);
    }
    Tensor idx = to_device(
        from_data(index.data(), {static_cast<int64_t>(index.size())}, DType::Int64), x.device());
    y = index_select(y, d, idx);
  }
  return y;
}

Tensor feature_dropout(const Tensor& x, double p, bool training, int64_t batched_ndim) {
  constexpr const char* fn = "feature_dropout";
  check_float(x, fn, "input");
  VK_CHECK(p >= 0.0 && p <= 1.0, RuntimeError, fn, ": probability p must be in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return x * 0.0;
  // one draw per channel: the mask keeps the leading (N, C) or (C) dims, 1 elsewhere
  const int64_t kept = x.ndim() == batched_ndim - 1 ? 1 : std::min<int64_t>(2, x.ndim());
  Shape mask_shape(static_cast<size_t>(x.ndim()), 1);
  for (int64_t i = 0; i < kept; ++i) mask_shape[i] = x.size(i);
  Tensor keep = lt(to_device(rand(mask_shape, x.dtype()), x.device()), scalar_like(1.0 - p, x));
  return x * (cast(keep, x.dtype()) * (1.0 / (1.0 - p)));
}

Tensor alpha_dropout(const Tensor& x, double p, bool training) {
  constexpr const char* fn = "alpha_dropout";
  check_float(x, fn, "input");
  VK_CHECK(p >= 0.0 && p <= 1.0, RuntimeError, fn, ": probability p must be in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return x * 0.0;
  // dropped values go to SELU's negative saturation, then an affine map restores mean and
  // variance (Klambauer et al. 2017)
  constexpr double alpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1.0) * (1.0 - p));
  Tensor keep = cast(lt(to_device(rand(x.shape(), x.dtype()), x.device()), scalar_like(1.0 - p, x)),
                     x.dtype());
  return x * (keep * a) + ((keep - 1.0) * (alpha * a) + alpha * a * p);
}

// ======================= 1-D convolution and pooling via the 2-D ones =======================

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups) {
  constexpr const char* fn = "conv1d";
  check_float(x, fn, "input");
  check_companion(weight, x, fn, "weight");
  VK_CHECK(x.ndim() == 2 || x.ndim() == 3, SizeError, fn,
           ": expected a 2-D (C, L) or 3-D (N, C, L) input, got shape ", shape_str(x.shape()));
  VK_CHECK(weight.ndim() == 3, SizeError, fn, ": weight must be 3-D (out, in / groups, k), got ",
           shape_str(weight.shape()));
  Tensor y = conv2d(unsqueeze(x, -2), unsqueeze(weight, -2), bias, {1, stride}, {0, padding},
                    {1, dilation}, groups);
  return squeeze(y, -2);
}

Tensor conv_same(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 dilation,
                 int64_t groups, int spatial) {
  constexpr const char* fn = "conv (padding='same')";
  check_float(x, fn, "input");
  VK_CHECK(weight.defined() && weight.ndim() == 2 + spatial, SizeError, fn, ": weight of shape ",
           shape_str(weight.shape()), " must have ", 2 + spatial, " dims");
  std::vector<int64_t> pads;  // (before, after) from the last dim, as pad() takes them
  for (int i = 0; i < spatial; ++i) {
    const int64_t k = weight.size(-1 - i), dil = spatial == 1 ? dilation[1] : dilation[1 - i];
    const int64_t total = dil * (k - 1);
    pads.push_back(total / 2);
    pads.push_back(total - total / 2);
  }
  Tensor padded = vk::pad(x, pads, 0.0);
  if (spatial == 1) return conv1d(padded, weight, bias, 1, 0, dilation[1], groups);
  return conv2d(padded, weight, bias, {1, 1}, {0, 0}, dilation, groups);
}

Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, int64_t dilation, Tensor* indices) {
  constexpr const char* fn = "max_pool1d";
  check_float(x, fn, "input");
  VK_CHECK(x.ndim() == 2 || x.ndim() == 3, SizeError, fn,
           ": expected a 2-D (C, L) or 3-D (N, C, L) input, got shape ", shape_str(x.shape()));
  PoolWithIndices r =
      max_pool2d_with_indices(unsqueeze(x, -2), {1, kernel_size},
                              Size2{1, stride.value_or(kernel_size)}, {0, padding}, {1, dilation});
  if (indices != nullptr) *indices = squeeze(r.indices, -2);  // flat in a (1, L) plane: the L index
  return squeeze(r.values, -2);
}

Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding) {
  constexpr const char* fn = "avg_pool1d";
  check_float(x, fn, "input");
  VK_CHECK(x.ndim() == 2 || x.ndim() == 3, SizeError, fn,
           ": expected a 2-D (C, L) or 3-D (N, C, L) input, got shape ", shape_str(x.shape()));
  return squeeze(avg_pool2d(unsqueeze(x, -2), {1, kernel_size},
                            Size2{1, stride.value_or(kernel_size)}, {0, padding}),
                 -2);
}

}  // namespace vk::nn::functional
