// Bindings: Shape ops (ops/shape.cpp): views, reshapes, cat/stack/split, padding, flips,
// repeats.
#include "bind_ops.h"
#include "vkml/core/grad_mode.h"

namespace vkpy {

using namespace bindings;

namespace {

// ---- shape/index breadth (#15): in-place view ops (t_, transpose_, squeeze_, ...) ----
// _inplace_view(x, "t_", fn, args): x takes the geometry of the view fn(x, *args) over its own
// storage, as torch's in-place metadata ops. While grad mode is on and x requires grad, x's object
// takes the recorded view instead (its history is the view's, as torch's TBackward), and a leaf is
// refused, as torch's. The version counter is bumped, as torch's, so a graph that saved x raises in
// backward instead of reading the new shape. The GIL stays held: fn is Python.
void bind_inplace_view(nb::module_& m) {
  m.def(
      "_inplace_view",
      [](nb::handle self, const char* op, nb::callable fn, nb::tuple args) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        const bool records = vk::GradMode::is_enabled() && x.requires_grad();
        VK_CHECK(!records || !x.is_leaf(), RuntimeError, op,
                 ": a leaf that requires grad is being used in an in-place operation while grad "
                 "mode is on; use the out-of-place op, or no_grad()");
        Tensor v;
        {
          vk::GradModeGuard mode(records);
          v = nb::cast<Tensor>(fn(records ? x : x.detach(), *args));
        }
        VK_CHECK(v.storage() == x.storage(), RuntimeError, op,
                 ": the view does not share the tensor's memory");
        x.bump_version();
        if (records) {
          if (!v.same(x)) v.impl()->own_version = v.version();
          return rebind(self, v);
        }
        exclusive([&] {
          vk::TensorImpl* impl = x.impl();
          impl->shape = v.shape();
          impl->strides = v.strides();
          impl->offset = v.offset();
        });
        return nb::borrow(self);
      },
      "self"_a, "op"_a, "fn"_a, "args"_a);
}

}  // namespace

void bind_shape(nb::module_& m, nb::class_<Tensor>& c) {
  // ---- shape ----
  c.def("reshape",
        [](const Tensor& x, nb::args shape) { return vk::reshape(x, shape_from_args(shape)); });
  c.def("view",
        [](const Tensor& x, nb::args shape) { return vk::view(x, shape_from_args(shape)); });
  m.def(
      "reshape", [](const Tensor& x, nb::handle shape) { return vk::reshape(x, to_shape(shape)); },
      "input"_a, "shape"_a);
  c.def(
      "view_as", [](const Tensor& x, const Tensor& o) { return vk::view(x, o.shape()); },
      "other"_a);
  c.def(
      "reshape_as", [](const Tensor& x, const Tensor& o) { return vk::reshape(x, o.shape()); },
      "other"_a);
  c.def("permute",
        [](const Tensor& x, nb::args dims) { return vk::permute(x, shape_from_args(dims)); });
  m.def(
      "permute", [](const Tensor& x, nb::handle dims) { return vk::permute(x, to_shape(dims)); },
      "input"_a, "dims"_a);
  c.def("expand",
        [](const Tensor& x, nb::args sizes) { return vk::expand(x, shape_from_args(sizes)); });
  c.def(
      "expand_as", [](const Tensor& x, const Tensor& o) { return vk::expand(x, o.shape()); },
      "other"_a);
  both(
      m, c, "broadcast_to",
      [](const Tensor& x, nb::handle shape) { return vk::broadcast_to(x, to_shape(shape)); },
      "size"_a);
  c.def("repeat",
        [](const Tensor& x, nb::args sizes) { return repeat(x, shape_from_args(sizes)); });
  both(
      m, c, "transpose",
      [](const Tensor& x, int64_t d0, int64_t d1) { return vk::transpose(x, d0, d1); }, "dim0"_a,
      "dim1"_a);
  both(
      m, c, "swapaxes",
      [](const Tensor& x, int64_t d0, int64_t d1) { return vk::transpose(x, d0, d1); }, "axis0"_a,
      "axis1"_a);
  both(m, c, "t", [](const Tensor& x) {
    VK_CHECK(x.ndim() <= 2, ShapeError, "t() expects a tensor with <= 2 dims, got shape ",
             vk::shape_str(x.shape()));
    return x.ndim() < 2 ? x : vk::transpose(x, 0, 1);
  });
  c.def_prop_ro("T", [](const Tensor& x) {
    std::vector<int64_t> p;
    for (int64_t i = x.ndim() - 1; i >= 0; --i) p.push_back(i);
    return x.ndim() < 2 ? x : vk::permute(x, p);
  });
  c.def_prop_ro("mT", [](const Tensor& x) {
    VK_CHECK(x.ndim() >= 2, ShapeError, "mT: expected a tensor with >= 2 dims, got shape ",
             vk::shape_str(x.shape()));
    return vk::transpose(x, -2, -1);
  });
  both(
      m, c, "flatten", [](const Tensor& x, int64_t s, int64_t e) { return vk::flatten(x, s, e); },
      "start_dim"_a = 0, "end_dim"_a = -1);
  both(m, c, "squeeze", squeeze_any, "dim"_a = nb::none());
  both(
      m, c, "unsqueeze", [](const Tensor& x, int64_t d) { return vk::unsqueeze(x, d); }, "dim"_a);
  c.def("contiguous", [](nb::handle self) -> nb::object {
    const Tensor& x = nb::cast<const Tensor&>(self);
    if (x.is_contiguous()) return nb::borrow(self);
    return nb::cast(without_gil(heavy(x), [&] { return vk::contiguous(x); }));
  });
  both(m, c, "clone",
       [](const Tensor& x) { return without_gil(heavy(x), [&] { return vk::clone(x); }); });
  c.def("flip", [](const Tensor& x, nb::args dims) { return vk::flip(x, shape_from_args(dims)); });
  m.def(
      "flip", [](const Tensor& x, nb::handle dims) { return vk::flip(x, to_shape(dims)); },
      "input"_a, "dims"_a);
  both(
      m, c, "narrow",
      [](const Tensor& x, int64_t dim, int64_t start, int64_t length) {
        return vk::narrow(x, dim, start, length);
      },
      "dim"_a, "start"_a, "length"_a);
  both(
      m, c, "select",
      [](const Tensor& x, int64_t dim, int64_t index) { return vk::select(x, dim, index); },
      "dim"_a, "index"_a);
  both(
      m, c, "split",
      [](const Tensor& x, nb::handle size, int64_t dim) {
        if (PyLong_Check(size.ptr())) return to_tuple(split_even(x, as_i64(size), dim));
        return to_tuple(split_sizes(x, to_shape(size), dim));
      },
      "split_size_or_sections"_a, "dim"_a = 0);
  both(
      m, c, "chunk",
      [](const Tensor& x, int64_t chunks, int64_t dim) {
        VK_CHECK(chunks > 0, ShapeError, "chunk: chunks must be positive, got ", chunks);
        const int64_t d = vk::wrap_dim(dim, x.ndim(), "chunk");
        const int64_t n = x.shape()[d];
        if (n == 0) {  // as torch: `chunks` empty pieces
          VK_CHECK(chunks <= (int64_t{1} << 24), SizeError, "chunk: ", chunks,
                   " empty pieces of an empty dim are more than a tuple can hold");
          return to_tuple(std::vector<Tensor>(static_cast<size_t>(chunks), vk::narrow(x, d, 0, 0)));
        }
        // ceil(n / chunks) without n + chunks - 1, which overflows for chunks near 2^63
        return to_tuple(split_even(x, (n - 1) / chunks + 1, d));
      },
      "chunks"_a, "dim"_a = 0);
  both(
      m, c, "unbind",
      [](const Tensor& x, int64_t dim) {
        int64_t d = vk::wrap_dim(dim, x.ndim(), "unbind");
        std::vector<Tensor> out;
        for (int64_t i = 0; i < x.shape()[d]; ++i) out.push_back(vk::select(x, d, i));
        return to_tuple(out);
      },
      "dim"_a = 0);
  for (const char* name : {"cat", "concat", "concatenate"})
    m.def(
        name,
        [](nb::handle tensors, int64_t dim) {
          std::vector<Tensor> ts = tensor_list(tensors);
          return without_gil(true, [&] { return vk::cat(ts, dim); });
        },
        "tensors"_a, "dim"_a = 0);
  m.def(
      "stack",
      [](nb::handle tensors, int64_t dim) {
        std::vector<Tensor> ts = tensor_list(tensors);
        return without_gil(true, [&] { return vk::stack(ts, dim); });
      },
      "tensors"_a, "dim"_a = 0);
  m.def(
      "pad",
      [](const Tensor& x, nb::handle pad, const std::string& mode, nb::handle value) {
        VK_CHECK(mode == "constant", NotImplementedError,
                 "pad: only mode='constant' is implemented, got '", mode, "'");
        return vk::pad(x, to_shape(pad), value.is_none() ? 0.0 : scalar_value(value));
      },
      "input"_a, "pad"_a, "mode"_a = "constant", "value"_a = nb::none());
  m.def(
      "sum_to", [](const Tensor& x, nb::handle shape) { return vk::sum_to(x, to_shape(shape)); },
      "input"_a, "shape"_a, "x summed down to `shape` (the adjoint of broadcasting).");
  m.def(
      "slice",
      [](const Tensor& x, int64_t dim, int64_t start, int64_t stop, int64_t step) {
        return vk::slice(x, dim, start, stop, step);
      },
      "input"_a, "dim"_a, "start"_a, "stop"_a, "step"_a = 1);
  m.def(
      "slice_backward",
      [](const Tensor& g, nb::handle input_shape, int64_t dim, int64_t start, int64_t stop,
         int64_t step) {
        return vk::slice_backward(g, to_shape(input_shape), dim, start, stop, step);
      },
      "grad"_a, "input_shape"_a, "dim"_a, "start"_a, "stop"_a, "step"_a = 1);
  // The table's region ops (the recorded x[...] = v is one strided_scatter node); the offset counts
  // from the input's first element in row-major order. vk.as_strided (a copy, any overlap) and
  // vk.as_strided_scatter keep torch's storage offsets (vkml/_torch_rest.py).
  m.def(
      "_as_strided_region",
      [](const Tensor& x, nb::handle size, nb::handle stride, int64_t offset) {
        return vk::as_strided(x, to_shape(size), to_shape(stride), offset);
      },
      "input"_a, "size"_a, "stride"_a, "offset"_a = 0);
  m.def(
      "_strided_scatter",
      [](const Tensor& x, const Tensor& src, nb::handle size, nb::handle stride, int64_t offset) {
        return vk::strided_scatter(x, src, to_shape(size), to_shape(stride), offset);
      },
      "input"_a, "src"_a, "size"_a, "stride"_a, "offset"_a = 0);
  bind_inplace_view(m);
}

}  // namespace vkpy
