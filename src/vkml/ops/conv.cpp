// Convolution and pooling on NCHW tensors. im2col/col2im are each other's adjoints; conv2d is one
// op (im2col + GEMM per batch element in its kernel) whose rule is written with matmul, im2col and
// col2im; max_pool2d keeps its int64 argmax indices and its adjoint max_pool2d_backward scatters
// into them, with a gather at those indices as its own rule; avg_pool2d's rule is a col2im of the
// gradient spread evenly over each window.
#include "vkml/ops/conv.h"

#include "vkml/core/geometry.h"
#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/index.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/op.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

std::string win_str(const Window2d& w) {
  return detail::cat("kernel (", w.kh, ", ", w.kw, "), stride (", w.sh, ", ", w.sw, "), padding (",
                     w.ph, ", ", w.pw, "), dilation (", w.dh, ", ", w.dw, ")");
}

void check_window(const Window2d& w, std::string_view op) {
  VK_CHECK(w.kh >= 1 && w.kw >= 1 && w.sh >= 1 && w.sw >= 1 && w.ph >= 0 && w.pw >= 0 &&
               w.dh >= 1 && w.dw >= 1,
           ShapeError, op, ": invalid window ", win_str(w),
           " (kernel, stride and dilation must be positive, padding non-negative)");
}

void check_nchw(const Tensor& x, std::string_view op, std::string_view what = "input") {
  VK_CHECK(x.ndim() == 4, ShapeError, op, ": expected a 4-D (N, C, H, W) ", what, ", got shape ",
           shape_str(x.shape()));
}

// (OH, OW) of the window sweep over an H x W plane; ShapeError when the kernel does not fit.
std::pair<int64_t, int64_t> out_hw(int64_t H, int64_t W, const Window2d& w, std::string_view op,
                                   const Shape& shape) {
  int64_t oh = window_out(H, w.kh, w.sh, w.ph, w.dh, op);
  int64_t ow = window_out(W, w.kw, w.sw, w.pw, w.dw, op);
  VK_CHECK(oh > 0 && ow > 0, ShapeError, op, ": the ", win_str(w), " spans (",
           w.dh * (w.kh - 1) + 1, ", ", w.dw * (w.kw - 1) + 1,
           ") positions, larger than the padded input (", H + 2 * w.ph, ", ", W + 2 * w.pw,
           ") of shape ", shape_str(shape));
  return {oh, ow};
}

void check_numeric(const Tensor& x, std::string_view op) {
  VK_CHECK(x.dtype() != DType::Bool, DTypeError, op, ": not defined for bool tensors");
}
void check_float(const Tensor& x, std::string_view op) {
  VK_CHECK(is_floating(x.dtype()), DTypeError, op, ": expected a floating-point input, got ",
           dtype_name(x.dtype()));
}

Meta infer_im2col(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  check_nchw(x, op);
  check_numeric(x, op);
  check_window(a.win, op);
  auto [oh, ow] = out_hw(x.shape()[2], x.shape()[3], a.win, op, x.shape());
  const int64_t rows = checked_mul(checked_mul(x.shape()[1], a.win.kh, op), a.win.kw, op);
  return {{x.shape()[0], rows, checked_mul(oh, ow, op)}, x.dtype()};
}

Meta infer_col2im(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& c = in[0];
  VK_CHECK(c.ndim() == 3, ShapeError, op, ": expected a 3-D (N, C*kh*kw, L) input, got shape ",
           shape_str(c.shape()));
  VK_CHECK(a.shape.size() == 2, ShapeError, op, ": the output size must be (H, W), got ",
           shape_str(a.shape));
  check_numeric(c, op);
  check_window(a.win, op);
  const int64_t kk = checked_mul(a.win.kh, a.win.kw, op);
  VK_CHECK(c.shape()[1] % kk == 0, ShapeError, op, ": dim 1 of shape ", shape_str(c.shape()),
           " is not a multiple of kh*kw = ", kk);
  numel_of(a.shape, op);  // no negative output size
  auto [oh, ow] = out_hw(a.shape[0], a.shape[1], a.win, op, a.shape);
  const int64_t windows = checked_mul(oh, ow, op);
  VK_CHECK(c.shape()[2] == windows, ShapeError, op, ": input of shape ", shape_str(c.shape()),
           " has ", c.shape()[2], " windows; an output of size ", shape_str(a.shape), " with ",
           win_str(a.win), " has ", oh, " x ", ow, " = ", windows);
  return {{c.shape()[0], c.shape()[1] / kk, a.shape[0], a.shape[1]}, c.dtype()};
}

int64_t groups_of(const Attrs& a) { return a.win.groups; }

Meta infer_conv2d(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(in.size() == 2 || in.size() == 3, RuntimeError, op,
           ": expected inputs (x, weight) or (x, weight, bias), got ", in.size());
  const Tensor &x = in[0], &w = in[1];
  check_nchw(x, op);
  VK_CHECK(w.ndim() == 4, ShapeError, op,
           ": expected a 4-D (O, C/groups, kh, kw) weight, got "
           "shape ",
           shape_str(w.shape()));
  check_float(x, op);
  check_window(a.win, op);
  const int64_t groups = groups_of(a);
  const int64_t C = x.shape()[1], O = w.shape()[0];
  VK_CHECK(groups >= 1 && C % groups == 0 && O % groups == 0, ShapeError, op, ": groups = ", groups,
           " must divide the input channels (", C, ") and the output channels (", O,
           "); input shape ", shape_str(x.shape()), ", weight shape ", shape_str(w.shape()));
  const int64_t expected_c = checked_mul(w.shape()[1], groups, op);
  VK_CHECK(expected_c == C, ShapeError, op, ": input of shape ", shape_str(x.shape()), " has ", C,
           " channels, but weight of shape ", shape_str(w.shape()), " with groups = ", groups,
           " expects ", expected_c);
  VK_CHECK(w.shape()[2] == a.win.kh && w.shape()[3] == a.win.kw, ShapeError, op,
           ": weight of shape ", shape_str(w.shape()), " does not match the ", win_str(a.win));
  if (in.size() == 3)
    VK_CHECK(in[2].ndim() == 1 && in[2].shape()[0] == O, ShapeError, op, ": bias of shape ",
             shape_str(in[2].shape()), " does not match ", O, " output channels (weight shape ",
             shape_str(w.shape()), ")");
  std::pair<int64_t, int64_t> ohw;
  try {
    ohw = out_hw(x.shape()[2], x.shape()[3], a.win, op, x.shape());
  } catch (const ShapeError& e) {
    throw ShapeError(detail::cat(e.what(), "; weight shape ", shape_str(w.shape())));
  }
  return {{x.shape()[0], O, ohw.first, ohw.second}, x.dtype()};
}

Meta infer_pool(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor& x = in[0];
  check_nchw(x, op);
  check_float(x, op);
  check_window(a.win, op);
  VK_CHECK(a.win.ph <= a.win.kh / 2 && a.win.pw <= a.win.kw / 2, ShapeError, op,
           ": padding must be at most half the kernel size, got ", win_str(a.win));
  auto [oh, ow] = out_hw(x.shape()[2], x.shape()[3], a.win, op, x.shape());
  return {{x.shape()[0], x.shape()[1], oh, ow}, x.dtype()};
}

Meta infer_max_pool2d_backward(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  const Tensor &g = in[0], &idx = in[1];
  check_nchw(g, op, "gradient");
  check_float(g, op);
  VK_CHECK(is_integral(idx.dtype()), DTypeError, op, ": indices must be int64 or int32, got ",
           dtype_name(idx.dtype()));
  VK_CHECK(idx.shape() == g.shape(), ShapeError, op, ": indices of shape ", shape_str(idx.shape()),
           " do not match the gradient's shape ", shape_str(g.shape()));
  VK_CHECK(a.shape.size() == 4 && a.shape[0] == g.shape()[0] && a.shape[1] == g.shape()[1],
           ShapeError, op, ": input shape ", shape_str(a.shape),
           " does not match the gradient's shape ", shape_str(g.shape()));
  (void)numel_of(a.shape, op);  // rejects negative extents
  return {a.shape, g.dtype()};
}

// Elements of a column matrix that conv2d's rule makes at a time, when the whole one is big.
constexpr int64_t kColsChunk = int64_t{1} << 19;
// Below this many output positions per image, conv2d's rule makes one product over the batch
// rather than one per image.
constexpr int64_t kShortL = 256;

// The conv2d rule. With G groups, x's channels split into G blocks of Cg, the weight's rows into
// G blocks of Og; the im2col rows of block g are g*Cg*kh*kw .. (g+1)*Cg*kh*kw.
Grads conv2d_grad(const GradCtx& c) {
  const Tensor &x = c.in[0], &w = c.in[1], &g = c.grad;
  const Window2d& win = c.attrs.win;
  const int64_t G = groups_of(c.attrs);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t O = w.shape()[0], Og = O / G, CgKK = C / G * win.kh * win.kw;
  const int64_t L = g.shape()[2] * g.shape()[3];
  const int64_t CKK = C * win.kh * win.kw;
  Tensor gg = reshape(g, {N, G, Og, L});
  Tensor wt = transpose(reshape(w, {G, Og, CgKK}), 1, 2);
  Grads out(c.in.size());
  auto im2col_g = [&] { return reshape(im2col(x, win), {N, G, CgKK, L}); };
  // dx = col2im(dcols), dcols[n, g] = W_g^T @ g[n, g]; dW_g = sum_n g[n, g] @ cols[n, g]^T with
  // cols = im2col(x). A big column matrix goes a chunk of images at a time (chunks fixed by the
  // shapes): each chunk's columns are made and used while still in cache, instead of one pass
  // over memory to write them and one to read them back.
  const int64_t chunk = std::max<int64_t>(1, kColsChunk / std::max<int64_t>(CKK * L, 1));
  const int64_t all_cols = checked_mul(checked_mul(N, CKK, "conv2d"), L, "conv2d");
  if (all_cols > 4 * kColsChunk && chunk < N) {
    std::vector<Tensor> dx, dw;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t n1 = std::min(N, n0 + chunk);
      Tensor gc = slice(gg, 0, n0, n1);
      if (c.needs[0]) dx.push_back(col2im(reshape(matmul(wt, gc), {n1 - n0, CKK, L}), H, W, win));
      if (c.needs[1]) {
        Tensor cols = reshape(im2col(slice(x, 0, n0, n1), win), {n1 - n0, G, CgKK, L});
        dw.push_back(matmul(gc, transpose(cols, 2, 3)));  // BLAS reads cols^T in place
      }
    }
    if (c.needs[0]) out[0] = cat(dx, 0);
    if (c.needs[1]) out[1] = reshape(sum(cat(dw, 0), {0}), w.shape());  // a fixed-order sum
  } else if (L >= kShortL) {
    if (c.needs[0]) out[0] = col2im(reshape(matmul(wt, gg), {N, CKK, L}), H, W, win);
    if (c.needs[1]) out[1] = reshape(sum(matmul(gg, transpose(im2col_g(), 2, 3)), {0}), w.shape());
  } else {
    if (c.needs[0]) out[0] = col2im(reshape(matmul(wt, gg), {N, CKK, L}), H, W, win);
    if (c.needs[1]) {
      // Short products per image: one product over (n, l), of permuted copies.
      Tensor a = reshape(permute(gg, {1, 2, 0, 3}), {G, Og, N * L});
      Tensor b = reshape(permute(im2col_g(), {1, 2, 0, 3}), {G, CgKK, N * L});
      out[1] = reshape(matmul(a, transpose(b, 1, 2)), w.shape());
    }
  }
  if (c.in.size() == 3 && c.needs[2]) out[2] = sum(g, {0, 2, 3});
  return out;
}

// The gradient of max_pool2d_backward w.r.t. g: gg read back at the same indices. Index -1 marks
// a window entirely in the padding (dilation can make one): it reads nothing, so 0.
Tensor gather_at(const Tensor& gg, const Tensor& indices) {
  const Shape& s = indices.shape();
  const Shape& in = gg.shape();
  Tensor flat = reshape(gg, {in[0], in[1], in[2] * in[3]});
  Tensor idx = reshape(indices, {s[0], s[1], s[2] * s[3]});
  // Every window has an argmax (none lies wholly in the padding): a plain gather. The test is a
  // host read, taken only where it costs no wait; elsewhere the masked form below.
  if (indices.numel() == 0 || (values_on_host(indices) && amin(indices).item() >= 0))
    return reshape(gather(flat, 2, idx), s);
  Tensor zero = zeros({}, idx.dtype());
  Tensor empty_window = lt(idx, zero);
  Tensor read = gather(flat, 2, where(empty_window, zero, idx));
  return reshape(where(empty_window, zeros({}, read.dtype()), read), s);
}

Grads avg_pool2d_grad(const GradCtx& c) {
  const Tensor& x = c.in[0];
  const Window2d& w = c.attrs.win;
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int64_t kk = checked_mul(w.kh, w.kw, "avg_pool2d");  // a kernel of 2**32: SizeError
  const int64_t L = c.grad.shape()[2] * c.grad.shape()[3];
  // Each window's gradient, spread evenly over its kh*kw positions, summed back per plane.
  Tensor spread =
      expand(reshape(c.grad * (1.0 / static_cast<double>(kk)), {N * C, 1, L}), {N * C, kk, L});
  return {reshape(col2im(spread, x.shape()[2], x.shape()[3], w), x.shape())};
}

}  // namespace

void add_conv_ops(OpList& ops) {
  ops.push_back({.kind = OpKind::Im2Col,
                 .name = "im2col",
                 .arity = 1,
                 .signature = "im2col(x, window)",
                 .summary =
                     "(N, C, H, W) -> (N, C*kh*kw, L): every kh x kw window (with stride, zero "
                     "padding and dilation) as a column (torch.nn.functional.unfold)",
                 .infer = infer_im2col,
                 .grad = [](const GradCtx& c) -> Grads {
                   return {col2im(c.grad, c.in[0].shape()[2], c.in[0].shape()[3], c.attrs.win)};
                 },
                 .grad_doc = "dx = col2im(g, H, W, window)"});
  ops.push_back({.kind = OpKind::Col2Im,
                 .name = "col2im",
                 .arity = 1,
                 .signature = "col2im(cols, H, W, window)",
                 .summary =
                     "(N, C*kh*kw, L) -> (N, C, H, W): columns written back to their windows, "
                     "overlaps summed (torch.nn.functional.fold); the adjoint of im2col",
                 .infer = infer_col2im,
                 .grad = [](const GradCtx& c) -> Grads { return {im2col(c.grad, c.attrs.win)}; },
                 .grad_doc = "dcols = im2col(g, window)"});
  ops.push_back(
      {.kind = OpKind::Conv2d,
       .name = "conv2d",
       .arity = -1,
       .signature = "conv2d(x, weight, bias, stride, padding, dilation, groups)",
       .summary = "2-D cross-correlation of x (N, C, H, W) with weight (O, C/groups, kh, kw), "
                  "plus bias (O) when given; im2col + GEMM per batch element",
       .prepare = prepare_common_dtype,
       .infer = infer_conv2d,
       .grad = conv2d_grad,
       .grad_doc = "per group: dx = col2im(W^T @ g), dW = sum over the batch of g @ im2col(x)^T, "
                   "db = g summed over N, H, W"});
  ops.push_back(
      {.kind = OpKind::MaxPool2d,
       .name = "max_pool2d",
       .arity = 1,
       .outputs = 2,
       .signature = "max_pool2d(x, window) -> (values, indices)",
       .summary = "window maxima (padding acts as -inf) and their int64 flat indices within each "
                  "input plane; ties take the first",
       .infer = infer_pool,
       .grad = [](const GradCtx& c) -> Grads {
         return {max_pool2d_backward(c.grad, c.output(1), c.in[0].shape())};
       },
       .grad_doc = "dx = max_pool2d_backward(g, indices, x.shape): g routed to each window's "
                   "argmax (the saved indices are constants)"});
  ops.push_back(
      {.kind = OpKind::MaxPool2dBackward,
       .name = "max_pool2d_backward",
       .arity = 2,
       .signature = "max_pool2d_backward(g, indices, input_shape)",
       .summary = "zeros of input_shape with g added at the indices of each plane (overlapping "
                  "windows add; index -1, a window entirely in the padding, adds nothing); the "
                  "adjoint of max_pool2d",
       .infer = infer_max_pool2d_backward,
       .grad = [](const GradCtx& c) -> Grads {
         return {gather_at(c.grad, c.in[1]), Tensor()};
       },
       .grad_doc = "dg = gg gathered at the indices of each plane; indices are constants"});
  ops.push_back({.kind = OpKind::AvgPool2d,
                 .name = "avg_pool2d",
                 .arity = 1,
                 .signature = "avg_pool2d(x, window)",
                 .summary = "window means; padding counts as zeros (count_include_pad=True)",
                 .infer = infer_pool,
                 .grad = avg_pool2d_grad,
                 .grad_doc = "dx = col2im of g / (kh*kw) repeated over each window, per plane"});
}

Tensor im2col(const Tensor& x, const Window2d& w) {
  Attrs a;
  a.win = w;
  return dispatch(OpKind::Im2Col, {x}, a);
}
Tensor col2im(const Tensor& cols, int64_t height, int64_t width, const Window2d& w) {
  Attrs a;
  a.win = w;
  a.shape = {height, width};
  return dispatch(OpKind::Col2Im, {cols}, a);
}
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride_h,
              int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dil_h, int64_t dil_w,
              int64_t groups) {
  VK_CHECK(weight.defined() && weight.ndim() == 4, ShapeError,
           "conv2d: expected a 4-D (O, C/groups, kh, kw) weight, got shape ",
           weight.defined() ? shape_str(weight.shape()) : std::string("(undefined)"));
  Attrs a;
  a.win = {weight.shape()[2], weight.shape()[3], stride_h, stride_w, pad_h, pad_w, dil_h, dil_w};
  a.win.groups = groups;
  if (bias.defined()) return dispatch(OpKind::Conv2d, {x, weight, bias}, a);
  return dispatch(OpKind::Conv2d, {x, weight}, a);
}
PoolResult max_pool2d(const Tensor& x, const Window2d& w) {
  Attrs a;
  a.win = w;
  const Outputs o = dispatch_outputs(OpKind::MaxPool2d, {x}, a);
  return {o[0], o[1]};
}
Tensor max_pool2d_backward(const Tensor& g, const Tensor& indices, const Shape& input_shape) {
  Attrs a;
  a.shape = input_shape;
  return dispatch(OpKind::MaxPool2dBackward, {g, indices}, a);
}
Tensor avg_pool2d(const Tensor& x, const Window2d& w) {
  Attrs a;
  a.win = w;
  return dispatch(OpKind::AvgPool2d, {x}, a);
}
}  // namespace vk
