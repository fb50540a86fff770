// Convolution and pooling on NCHW tensors. im2col/col2im are each other's adjoints; conv2d is one
// op (im2col + GEMM per batch element in its kernel) whose two gradients are ops of their own,
// each the other's and conv2d's adjoint; max_pool2d keeps its int64 argmax indices and its
// adjoint max_pool2d_backward scatters into them, with a gather at those indices as its own rule;
// avg_pool2d's rule is a col2im of the gradient spread evenly over each window.
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

// The output shape of conv2d over an input of shape x with a weight of shape w: ShapeError naming
// `op` and both shapes when they do not fit together. The backward ops check their shapes here too.
Shape conv2d_out_shape(const Shape& x, const Shape& w, const Window2d& win, std::string_view op) {
  check_window(win, op);
  const int64_t groups = win.groups;
  const int64_t C = x[1], O = w[0];
  VK_CHECK(groups >= 1 && C % groups == 0 && O % groups == 0, ShapeError, op, ": groups = ", groups,
           " must divide the input channels (", C, ") and the output channels (", O,
           "); input shape ", shape_str(x), ", weight shape ", shape_str(w));
  const int64_t expected_c = checked_mul(w[1], groups, op);
  VK_CHECK(expected_c == C, ShapeError, op, ": input of shape ", shape_str(x), " has ", C,
           " channels, but weight of shape ", shape_str(w), " with groups = ", groups, " expects ",
           expected_c);
  VK_CHECK(w[2] == win.kh && w[3] == win.kw, ShapeError, op, ": weight of shape ", shape_str(w),
           " does not match the ", win_str(win));
  std::pair<int64_t, int64_t> ohw;
  try {
    ohw = out_hw(x[2], x[3], win, op, x);
  } catch (const ShapeError& e) {
    throw ShapeError(detail::cat(e.what(), "; weight shape ", shape_str(w)));
  }
  return {x[0], O, ohw.first, ohw.second};
}

void check_weight_4d(const Shape& w, std::string_view op) {
  VK_CHECK(w.size() == 4, ShapeError, op,
           ": expected a 4-D (O, C/groups, kh, kw) weight, got shape ", shape_str(w));
}

Meta infer_conv2d(const std::vector<Tensor>& in, const Attrs& a, std::string_view op) {
  VK_CHECK(in.size() == 2 || in.size() == 3, RuntimeError, op,
           ": expected inputs (x, weight) or (x, weight, bias), got ", in.size());
  const Tensor &x = in[0], &w = in[1];
  check_nchw(x, op);
  check_weight_4d(w.shape(), op);
  check_float(x, op);
  Shape out = conv2d_out_shape(x.shape(), w.shape(), a.win, op);
  if (in.size() == 3)
    VK_CHECK(in[2].ndim() == 1 && in[2].shape()[0] == out[1], ShapeError, op, ": bias of shape ",
             shape_str(in[2].shape()), " does not match ", out[1],
             " output channels (weight shape ", shape_str(w.shape()), ")");
  return {std::move(out), x.dtype()};
}

// The gradient g must have the shape conv2d gives x and w (the shape of the missing one of them
// is the op's attribute).
void check_conv_grad(const Tensor& g, const Shape& x, const Shape& w, const Window2d& win,
                     std::string_view op) {
  check_nchw(g, op, "gradient");
  check_float(g, op);
  VK_CHECK(x.size() == 4, ShapeError, op, ": expected a 4-D (N, C, H, W) input shape, got ",
           shape_str(x));
  check_weight_4d(w, op);
  (void)numel_of(x, op);  // rejects negative extents
  (void)numel_of(w, op);
  const Shape out = conv2d_out_shape(x, w, win, op);
  VK_CHECK(g.shape() == out, ShapeError, op, ": gradient of shape ", shape_str(g.shape()),
           " does not match conv2d's output ", shape_str(out), " for input shape ", shape_str(x),
           ", weight shape ", shape_str(w), " and ", win_str(win));
}

// in: (g, weight); attrs.shape: x's shape.
Meta infer_conv2d_backward_input(const std::vector<Tensor>& in, const Attrs& a,
                                 std::string_view op) {
  check_conv_grad(in[0], a.shape, in[1].shape(), a.win, op);
  return {a.shape, in[0].dtype()};
}

// in: (g, x); attrs.shape: the weight's shape.
Meta infer_conv2d_backward_weight(const std::vector<Tensor>& in, const Attrs& a,
                                  std::string_view op) {
  check_nchw(in[1], op);
  check_conv_grad(in[0], in[1].shape(), a.shape, a.win, op);
  return {a.shape, in[0].dtype()};
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

// conv2d without a bias, over a window that holds its groups.
Tensor conv2d_window(const Tensor& x, const Tensor& w, const Window2d& win) {
  Attrs a;
  a.win = win;
  return dispatch(OpKind::Conv2d, {x, w}, a);
}

// The backward ops are linear in each input, and each one's adjoint is conv2d or the other:
// <gx, dx(g, w)> = <g, conv2d(gx, w)> = <w, dW(g, gx)>.
Grads conv2d_backward_input_grad(const GradCtx& c) {
  const Tensor &g = c.in[0], &w = c.in[1];
  Grads out(2);
  if (c.needs[0]) out[0] = conv2d_window(c.grad, w, c.attrs.win);
  if (c.needs[1]) out[1] = conv2d_backward_weight(g, c.grad, w.shape(), c.attrs.win);
  return out;
}
Grads conv2d_backward_weight_grad(const GradCtx& c) {
  const Tensor &g = c.in[0], &x = c.in[1];
  Grads out(2);
  if (c.needs[0]) out[0] = conv2d_window(x, c.grad, c.attrs.win);
  if (c.needs[1]) out[1] = conv2d_backward_input(g, c.grad, x.shape(), c.attrs.win);
  return out;
}

// conv2d's rule: each gradient one op, whose kernels make only the column matrices they need
// (the CPU's a block of channels at a time, without the batch's whole im2col matrix).
Grads conv2d_grad(const GradCtx& c) {
  const Tensor &x = c.in[0], &w = c.in[1], &g = c.grad;
  Grads out(c.in.size());
  if (c.needs[0]) out[0] = conv2d_backward_input(g, w, x.shape(), c.attrs.win);
  if (c.needs[1]) out[1] = conv2d_backward_weight(g, x, w.shape(), c.attrs.win);
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
  ops.push_back({.kind = OpKind::Conv2d,
                 .name = "conv2d",
                 .arity = -1,
                 .signature = "conv2d(x, weight, bias, stride, padding, dilation, groups)",
                 .summary =
                     "2-D cross-correlation of x (N, C, H, W) with weight (O, C/groups, kh, kw), "
                     "plus bias (O) when given; im2col + GEMM per batch element",
                 .prepare = prepare_common_dtype,
                 .infer = infer_conv2d,
                 .grad = conv2d_grad,
                 .grad_doc = "dx = conv2d_backward_input(g, W), dW = conv2d_backward_weight(g, x), "
                             "db = g summed over N, H, W"});
  ops.push_back({.kind = OpKind::Conv2dBackwardInput,
                 .name = "conv2d_backward_input",
                 .arity = 2,
                 .signature = "conv2d_backward_input(g, weight, input_shape, window)",
                 .summary =
                     "conv2d's gradient with respect to its input (a transposed convolution of g "
                     "with the weight): per group, col2im(W^T @ g) of input_shape "
                     "(torch.nn.grad.conv2d_input)",
                 .prepare = prepare_common_dtype,
                 .infer = infer_conv2d_backward_input,
                 .grad = conv2d_backward_input_grad,
                 .grad_doc = "dg = conv2d(gg, weight), dweight = conv2d_backward_weight(g, gg)"});
  ops.push_back({.kind = OpKind::Conv2dBackwardWeight,
                 .name = "conv2d_backward_weight",
                 .arity = 2,
                 .signature = "conv2d_backward_weight(g, x, weight_shape, window)",
                 .summary =
                     "conv2d's gradient with respect to its weight: per group, the sum over the "
                     "batch of g @ im2col(x)^T, of weight_shape (torch.nn.grad.conv2d_weight)",
                 .prepare = prepare_common_dtype,
                 .infer = infer_conv2d_backward_weight,
                 .grad = conv2d_backward_weight_grad,
                 .grad_doc = "dg = conv2d(x, gg), dx = conv2d_backward_input(g, gg)"});
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
Tensor conv2d_backward_input(const Tensor& g, const Tensor& weight, const Shape& input_shape,
                             const Window2d& w) {
  Attrs a;
  a.win = w;
  a.shape = input_shape;
  return dispatch(OpKind::Conv2dBackwardInput, {g, weight}, a);
}
Tensor conv2d_backward_weight(const Tensor& g, const Tensor& x, const Shape& weight_shape,
                              const Window2d& w) {
  Attrs a;
  a.win = w;
  a.shape = weight_shape;
  return dispatch(OpKind::Conv2dBackwardWeight, {g, x}, a);
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
