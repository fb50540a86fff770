// Convolution and pooling on the Vulkan device, NCHW: im2col and col2im (shaders/conv.comp),
// conv2d as one GEMM per (image, group) whose B operand is the im2col matrix read on the fly
// (shaders/gemm.comp -DCONV: no column matrix in memory), max and average pooling
// (shaders/pool.comp) and max pooling's adjoint (shaders/pool_backward.comp). Every output
// element is gathered or summed in a fixed order, the CPU's, with no atomics.
#include <algorithm>
#include <atomic>
#include <bit>
#include <span>
#include <string>
#include <vector>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/linalg.h"
#include "vkml/backend/vulkan/memory.h"
#include "vkml/backend/vulkan/rows.h"
#include "vkml/core/error.h"
#include "vkml/core/geometry.h"

namespace vk::vulkan {
namespace {

// Push constants of conv.comp and pool.comp, laid out as their Params blocks (std430).
struct WindowParams {
  uint32_t total = 0;
  int32_t C = 0, H = 0, W = 0, OH = 0, OW = 0, kh = 0, kw = 0;
  int32_t sh = 0, sw = 0, ph = 0, pw = 0, dh = 0, dw = 0;
  int32_t src_off = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  uint32_t inv_lo = 0, inv_hi = 0;
  int32_t i_begin = 0, i_end = 0, j_begin = 0, j_end = 0;
  uint32_t flags = 0;  // kResume, kFinal
};
static_assert(sizeof(WindowParams) == 104, "conv.comp's and pool.comp's push constants");
constexpr uint32_t kResume = 1, kFinal = 2;

// Window taps one invocation of a pooling or col2im pass may walk: lavapipe stops a shader once
// it has made 65535 loop iterations in all.
constexpr int64_t kTapsPerPass = 16384;
std::atomic<int64_t> taps_per_pass{kTapsPerPass};

// The taps of one pass: rows [i0, i1) and columns [j0, j1) of the window.
struct TapPass {
  int64_t i0, i1, j0, j1;
};

// [lo, hi): the taps t of a k-tap window (stride s, padding p, dilation d) that some output
// o in [0, n_out) places inside [0, n_in): o * s - p + t * d in [0, n_in).
void window_taps(int64_t n_out, int64_t n_in, int64_t k, int64_t s, int64_t p, int64_t d,
                 int64_t& lo, int64_t& hi) {
  const int64_t q = p - (n_out - 1) * s;  // t * d >= q and t * d <= n_in - 1 + p
  lo = q <= 0 ? 0 : (q + d - 1) / d;
  hi = n_in - 1 + p < 0 ? 0 : (n_in - 1 + p) / d + 1;
  lo = std::clamp<int64_t>(lo, 0, k);
  hi = std::clamp<int64_t>(hi, lo, k);
}

// The passes over a window whose taps reach the plane in rows [ilo, ihi) and columns [jlo, jhi),
// in (i, j) order, when one output element visits at most `per_row` columns of a row: whole rows
// while they fit kTapsPerPass, else one row at a time in blocks of columns.
std::vector<TapPass> tap_passes(int64_t ilo, int64_t ihi, int64_t jlo, int64_t jhi,
                                int64_t per_row) {
  std::vector<TapPass> passes;
  const int64_t budget = taps_per_pass.load();
  if (per_row <= budget) {
    const int64_t rows = std::max<int64_t>(1, budget / std::max<int64_t>(per_row, 1));
    for (int64_t i = ilo; i < ihi; i += rows)
      passes.push_back({i, std::min(ihi, i + rows), jlo, jhi});
  } else {
    for (int64_t i = ilo; i < ihi; ++i)
      for (int64_t j = jlo; j < jhi; j += budget)
        passes.push_back({i, i + 1, j, std::min(jhi, j + budget)});
  }
  if (passes.empty()) passes.push_back({0, 0, 0, 0});  // no tap reaches the plane: one pass still
  return passes;                                       // writes the outputs
}

// The passes of a pool (over the input plane) or of col2im (over the output plane, whose windows
// a pixel lies in) for the window in p.
std::vector<TapPass> passes_of(const WindowParams& p, bool col2im) {
  int64_t ilo, ihi, jlo, jhi;
  window_taps(p.OH, p.H, p.kh, p.sh, p.ph, p.dh, ilo, ihi);
  window_taps(p.OW, p.W, p.kw, p.sw, p.pw, p.dw, jlo, jhi);
  // the columns one element visits: those inside the plane (pool), or those whose window
  // covers it, every stride-th of them adding (col2im)
  const int64_t per_row = col2im ? std::min<int64_t>(p.kw, (int64_t{p.OW} - 1) * p.sw / p.dw + 2)
                                 : std::min<int64_t>(p.kw, p.W);
  return tap_passes(ilo, ihi, jlo, jhi, per_row);
}

// Push constants of gemm.comp -DCONV (std430).
struct ConvParams {
  GemmHead head;
  int32_t a_off = 0, bias_off = 0, bias_s = 0;
  int32_t x_off = 0, x_sn = 0, x_sc = 0, x_sh = 0, x_sw = 0;
  int32_t H = 0, W = 0, OW = 0, kw = 0, kk = 0, cg = 0;
  int32_t sh = 0, sw = 0, ph = 0, pw = 0, dh = 0, dw = 0;
};
static_assert(sizeof(ConvParams) == 120, "gemm.comp's push constants with CONV");

// Push constants of pool_backward.comp (std430).
struct PoolBackwardParams {
  uint32_t mode = 0, total = 0;
  int32_t C = 0, OW = 0, HW = 0, o_begin = 0, o_end = 0;
  int32_t g_off = 0, g0 = 0, g1 = 0, g2 = 0, g3 = 0;
  int32_t i_off = 0, i0 = 0, i1 = 0, i2 = 0, i3 = 0;
};
static_assert(sizeof(PoolBackwardParams) == 68, "pool_backward.comp's push constants");

// Outputs of one plane a pool_backward dispatch walks per invocation: a loop far below lavapipe's
// 65535 iterations.
constexpr int64_t kPlaneRun = 16384;

// The window of w over an H x W plane with OH x OW outputs, as 32-bit ints; SizeError naming op
// when the padded plane or the dilated kernel reach beyond them (shaders index with int).
void set_window(WindowParams& p, const Window2d& w, int64_t C, int64_t H, int64_t W, int64_t OH,
                int64_t OW, std::string_view op) {
  i32(H + 2 * w.ph + w.dh * w.kh, op);
  i32(W + 2 * w.pw + w.dw * w.kw, op);
  p.C = i32(C, op), p.H = i32(H, op), p.W = i32(W, op), p.OH = i32(OH, op), p.OW = i32(OW, op);
  p.kh = i32(w.kh, op), p.kw = i32(w.kw, op), p.sh = i32(w.sh, op), p.sw = i32(w.sw, op);
  p.ph = i32(w.ph, op), p.pw = i32(w.pw, op), p.dh = i32(w.dh, op), p.dw = i32(w.dw, op);
  i32(w.kh * w.kw * C, op);
}

void set_source(WindowParams& p, const Tensor& t) {
  p.src_off = static_cast<int32_t>(t.offset());
  int32_t* s[] = {&p.s0, &p.s1, &p.s2, &p.s3};
  for (int64_t d = 0; d < t.ndim(); ++d) *s[d] = static_cast<int32_t>(t.strides()[d]);
}

// Runs `shader` over p.total elements, `per` per workgroup.
void run_linear(const std::string& shader, std::span<Buffer* const> buffers, const void* p,
                uint32_t bytes, uint64_t total, uint32_t per, uint32_t writes) {
  Context& ctx = context();
  const Pipeline& pipe =
      ctx.pipeline(shader, shader_spirv(shader), static_cast<uint32_t>(buffers.size()), bytes);
  ctx.dispatch(pipe, buffers, p, (total + per - 1) / per, writes);
}

// A conv.comp or pool.comp variant: `src` into the contiguous `out` (and `idx`, max_pool2d's
// indices, when given), one element of out per invocation, over as many passes of window taps as
// needed (im2col: one).
void run_window(const std::string& shader, const Tensor& out, const Tensor* idx, const Tensor& src,
                WindowParams& p, bool col2im, bool taps, std::string_view op) {
  p.total = static_cast<uint32_t>(i32(out.numel(), op));
  set_source(p, src);
  std::vector<Buffer*> buffers{&checked_buffer(out, op)};
  if (idx) buffers.push_back(&checked_buffer(*idx, op));
  buffers.push_back(&checked_buffer(src, op));
  const std::string name = shader + std::string(dtype_suffix(out));
  const uint32_t writes = idx ? 2 : 1;
  const std::vector<TapPass> passes =
      taps ? passes_of(p, col2im) : std::vector<TapPass>{{0, 0, 0, 0}};
  for (size_t k = 0; k < passes.size(); ++k) {
    p.i_begin = static_cast<int32_t>(passes[k].i0), p.i_end = static_cast<int32_t>(passes[k].i1);
    p.j_begin = static_cast<int32_t>(passes[k].j0), p.j_end = static_cast<int32_t>(passes[k].j1);
    p.flags = (k > 0 ? kResume : 0) | (k + 1 == passes.size() ? kFinal : 0);
    run_linear(name, buffers, &p, sizeof(p), p.total, 256, writes);
  }
}

// gemm.comp -DCONV's parameters for conv2d of x with the contiguous weight wt into out.
ConvParams conv_params(const Tensor& out, const Tensor& x, const Tensor& wt, const Tensor* bias,
                       const Window2d& w, std::string_view op) {
  const int64_t C = x.shape()[1], O = wt.shape()[0], G = w.groups;
  WindowParams win;
  set_window(win, w, C, x.shape()[2], x.shape()[3], out.shape()[2], out.shape()[3], op);
  ConvParams p;
  p.head.M = static_cast<uint32_t>(O / G);
  p.head.N = static_cast<uint32_t>(i32(out.shape()[2] * out.shape()[3], op));
  p.head.K = static_cast<uint32_t>(i32(C / G * w.kh * w.kw, op));
  p.head.nb1 = static_cast<uint32_t>(G);
  p.head.flags = bias ? kGemmBiasRow : 0;
  p.a_off = i32(wt.offset(), op);
  if (bias) p.bias_off = i32(bias->offset(), op), p.bias_s = i32(bias->strides()[0], op);
  p.x_off = i32(x.offset(), op);
  p.x_sn = i32(x.strides()[0], op), p.x_sc = i32(x.strides()[1], op);
  p.x_sh = i32(x.strides()[2], op), p.x_sw = i32(x.strides()[3], op);
  p.H = win.H, p.W = win.W, p.OW = win.OW, p.kw = win.kw, p.kk = win.kh * win.kw;
  p.cg = static_cast<int32_t>(C / G);
  p.sh = win.sh, p.sw = win.sw, p.ph = win.ph, p.pw = win.pw, p.dh = win.dh, p.dw = win.dw;
  return p;
}

// conv2d's GEMM per (image n, group g): out[n, g] (Og x L) = weight[g] (Og x Cg*kk) @ the
// im2col matrix of x[n, g's channels] (Cg*kk x L), read from x as the shader needs it.
void conv_gemm(const Tensor& out, const Tensor& x, const Tensor& wt, const Tensor* bias,
               const Window2d& w, std::string_view op) {
  ConvParams p = conv_params(out, x, wt, bias, w, op);
  i32(out.numel(), op);
  Buffer* buffers[] = {&checked_buffer(out, op), &checked_buffer(wt, op), &checked_buffer(x, op),
                       &checked_buffer(bias ? *bias : wt, op)};
  run_gemm("gemm_conv" + std::string(dtype_suffix(out)), p.head, &p, sizeof(p), buffers,
           static_cast<uint64_t>(x.shape()[0] * w.groups));
}

// pool_backward.comp's parameters for g and its indices into out.
PoolBackwardParams backward_params(const Tensor& out, const Tensor& g, const Tensor& idx,
                                   std::string_view op) {
  PoolBackwardParams p;
  p.total = static_cast<uint32_t>(i32(out.numel(), op));
  p.C = i32(out.shape()[1], op);
  p.OW = i32(g.shape()[3], op);
  p.HW = i32(out.shape()[2] * out.shape()[3], op);
  p.g_off = i32(g.offset(), op), p.i_off = i32(idx.offset(), op);
  int32_t* gs[] = {&p.g0, &p.g1, &p.g2, &p.g3};
  int32_t* is[] = {&p.i0, &p.i1, &p.i2, &p.i3};
  for (int d = 0; d < 4; ++d) *gs[d] = i32(g.strides()[d], op), *is[d] = i32(idx.strides()[d], op);
  return p;
}

}  // namespace

void set_taps_per_pass(int64_t n) { taps_per_pass = n > 0 ? n : kTapsPerPass; }

VK_KERNEL(im2col) {
  const Tensor& x = in[0];
  check_numeric(x, "im2col");  // integers too, as on the CPU
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  const int64_t H = x.shape()[2], W = x.shape()[3];
  const Window2d& w = a.win;
  WindowParams p;
  set_window(p, w, x.shape()[1], H, W, window_out(H, w.kh, w.sh, w.ph, w.dh),
             window_out(W, w.kw, w.sw, w.pw, w.dw), "im2col");
  run_window("im2col", out, nullptr, x, p, false, false, "im2col");
  return out;
}

VK_KERNEL(col2im) {
  const Tensor& cols = in[0];
  check_numeric(cols, "col2im");  // integers too, as on the CPU
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  const int64_t H = m.shape[2], W = m.shape[3];
  const Window2d& w = a.win;
  WindowParams p;
  set_window(p, w, m.shape[1], H, W, window_out(H, w.kh, w.sh, w.ph, w.dh),
             window_out(W, w.kw, w.sw, w.pw, w.dw), "col2im");
  run_window("col2im", out, nullptr, cols, p, true, true, "col2im");
  return out;
}

VK_KERNEL(conv2d) {
  const Tensor& x = in[0];
  Tensor wt = in[1];
  const Tensor* bias = in.size() == 3 ? &in[2] : nullptr;
  for (const Tensor& t : in) check_float(t, "conv2d");
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  if (!wt.is_contiguous()) {  // the shader reads each group's rows of the weight as one matrix
    // im2col with a 1 x 1 window is a contiguous copy of any 4-D view, in either dtype
    const int64_t O = wt.shape()[0], Cg = wt.shape()[1], kh = wt.shape()[2], kw = wt.shape()[3];
    Tensor c = Tensor::empty({O, Cg, kh * kw}, wt.dtype(), wt.device());
    WindowParams p;
    set_window(p, Window2d{}, Cg, kh, kw, kh, kw, "conv2d");
    run_window("im2col", c, nullptr, wt, p, false, false, "conv2d");
    wt = c.alias(wt.shape(), contiguous_strides(wt.shape()), 0);
  }
  conv_gemm(out, x, wt, bias, a.win, "conv2d");
  return out;
}

VK_KERNEL(max_pool2d) {
  const Tensor& x = in[0];
  check_float(x, "max_pool2d");
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  Tensor idx = Tensor::empty(m.shape, DType::Int64, m.device);
  if (out.numel() == 0) return {out, idx};
  WindowParams p;
  set_window(p, a.win, x.shape()[1], x.shape()[2], x.shape()[3], m.shape[2], m.shape[3],
             "max_pool2d");
  run_window("pool_max", out, &idx, x, p, false, true, "max_pool2d");
  return {out, idx};
}

VK_KERNEL(avg_pool2d) {
  const Tensor& x = in[0];
  check_float(x, "avg_pool2d");
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  const Window2d& w = a.win;
  WindowParams p;
  set_window(p, w, x.shape()[1], x.shape()[2], x.shape()[3], m.shape[2], m.shape[3], "avg_pool2d");
  // 1 / (kh * kw) rounded as the CPU rounds it, in the dtype
  if (x.dtype() == DType::Float64) {
    const auto bits = std::bit_cast<uint64_t>(1.0 / (static_cast<double>(w.kh) * w.kw));
    p.inv_lo = static_cast<uint32_t>(bits), p.inv_hi = static_cast<uint32_t>(bits >> 32);
  } else {
    p.inv_lo = std::bit_cast<uint32_t>(1.0f / (static_cast<float>(w.kh) * w.kw));
  }
  run_window("pool_avg", out, nullptr, x, p, false, true, "avg_pool2d");
  return out;
}

VK_KERNEL(max_pool2d_backward) {
  (void)a;
  const Tensor& g = in[0];
  const Tensor& idx = in[1];
  const char* op = "max_pool2d_backward";
  check_float(g, op);
  VK_CHECK(idx.dtype() == DType::Int64 || idx.dtype() == DType::Int32, DTypeError, op,
           ": indices must be int64 or int32, got ", dtype_name(idx.dtype()));
  Tensor out = Tensor::empty(m.shape, m.dtype, m.device);
  if (out.numel() == 0) return out;
  PoolBackwardParams p = backward_params(out, g, idx, op);
  Buffer* buffers[] = {&checked_buffer(out, op), &checked_buffer(g, op), &checked_buffer(idx, op)};
  std::string shader = "pool_max_backward" + std::string(dtype_suffix(g));
  if (idx.dtype() == DType::Int32) shader += "_i32";
  run_linear(shader, buffers, &p, sizeof(p), p.total, 64, 1);  // zeros
  const int64_t outputs = g.shape()[2] * g.shape()[3], planes = m.shape[0] * m.shape[1];
  p.mode = 1;
  p.total = static_cast<uint32_t>(planes);
  for (int64_t o = 0; o < outputs; o += kPlaneRun) {
    p.o_begin = static_cast<int32_t>(o);
    p.o_end = i32(std::min(outputs, o + kPlaneRun), op);
    run_linear(shader, buffers, &p, sizeof(p), p.total, 64, 1);
  }
  return out;
}

namespace {

// A contiguous copy of t viewed with `shape` and `strides` (from t's offset): the permutations
// conv2d's gradients need as plain matrices.
Tensor dense_view(const Tensor& t, const Shape& shape, const Strides& strides) {
  return contiguous({t.alias(shape, strides, t.offset())}, Attrs{},
                    Meta{shape, t.dtype(), t.device()})[0];
}
Tensor matmul_of(const Tensor& a, const Tensor& b, const Shape& shape) {
  return matmul({a, b}, Attrs{}, Meta{shape, a.dtype(), a.device()})[0];
}

}  // namespace

// conv2d's gradients as the composite rule computes them, from this backend's own GEMM, im2col
// and col2im: dx = col2im(W^T @ g) per group, one product batched over the images;
// dW = g @ im2col(x)^T per group, one product over every image's positions (both operands
// permuted to (group, rows, N * L) copies first). Their results match the CPU's to float32
// rounding (the sweep); the GEMMs are not fused with the window walks (a later step).
VK_KERNEL(conv2d_backward_input) {
  for (const Tensor& t : in) check_float(t, "conv2d_backward_input");
  const Tensor g = rows::contiguous_of(in[0], "conv2d_backward_input"),
               wt = rows::contiguous_of(in[1], "conv2d_backward_input");
  const int64_t G = a.win.groups, N = m.shape[0], C = m.shape[1], O = wt.shape()[0];
  const int64_t Og = O / G, CgKK = C / G * a.win.kh * a.win.kw;
  const int64_t L = g.shape()[2] * g.shape()[3];
  if (numel_of(m.shape) == 0) return Tensor::empty(m.shape, m.dtype, m.device);
  const Tensor wT = wt.alias({N, G, CgKK, Og}, {0, Og * CgKK, 1, CgKK}, wt.offset());
  const Tensor gn = g.alias({N, G, Og, L}, {O * L, Og * L, L, 1}, g.offset());
  const Tensor cols = matmul_of(wT, gn, {N, G, CgKK, L});
  const Shape cols_shape{N, G * CgKK, L};
  return col2im({cols.alias(cols_shape, contiguous_strides(cols_shape), cols.offset())}, a, m);
}

VK_KERNEL(conv2d_backward_weight) {
  for (const Tensor& t : in) check_float(t, "conv2d_backward_weight");
  const Tensor g = rows::contiguous_of(in[0], "conv2d_backward_weight");
  const Tensor& x = in[1];
  const int64_t G = a.win.groups, N = x.shape()[0], C = x.shape()[1], O = m.shape[0];
  const int64_t Og = O / G, kk = a.win.kh * a.win.kw, CgKK = C / G * kk;
  const int64_t L = g.shape()[2] * g.shape()[3], NL = N * L;
  if (numel_of(m.shape) == 0) return Tensor::empty(m.shape, m.dtype, m.device);
  const Tensor cols = im2col({x}, a, Meta{{N, C * kk, L}, x.dtype(), x.device()})[0];
  const Tensor gp = dense_view(g, {G, Og, N, L}, {Og * L, L, O * L, 1});
  const Tensor cp = dense_view(cols, {G, CgKK, N, L}, {CgKK * L, L, C * kk * L, 1});
  const Tensor dw =
      matmul_of(gp.alias({G, Og, NL}, {Og * NL, NL, 1}, gp.offset()),
                cp.alias({G, NL, CgKK}, {CgKK * NL, 1, NL}, cp.offset()), {G, Og, CgKK});
  return dw.alias(m.shape, contiguous_strides(m.shape), dw.offset());
}

}  // namespace vk::vulkan
