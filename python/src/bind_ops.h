// What the binding files of the op families share (python/src/bind_*.cpp, one per family of
// ops/, and functions.cpp, which holds these helpers and calls every family's bind function).
#pragma once
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.h"

namespace vkpy {
namespace bindings {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The same callable as module function f(input, ...) and method input.f(...).
template <class F, class... Extra>
void both(nb::module_& m, nb::class_<Tensor>& c, const char* name, F f, const Extra&... extra) {
  m.def(name, f, nb::arg("input"), extra...);
  c.def(name, f, extra...);
}

// A unary / binary op as module function and method, in bind functions with `m` and `c` in scope:
// EXPR computes from `x` (and `y`, the other operand) with the GIL released.
#define VKPY_UNARY(NAME, EXPR) \
  both(m, c, NAME, [](const Tensor& x) { return without_gil(heavy(x), [&] { return EXPR; }); })
#define VKPY_BINARY(NAME, EXPR)                                \
  both(                                                        \
      m, c, NAME,                                              \
      [](const Tensor& x, nb::handle other) {                  \
        Tensor y = operand_or_raise(other, x, NAME);           \
        return without_gil(heavy(x, y), [&] { return EXPR; }); \
      },                                                       \
      "other"_a)

extern nb::object g_max_type, g_min_type, g_sort_like;  // namedtuples (values, indices)

// (values, indices) as torch's max/min namedtuple.
nb::object values_indices(bool is_max, const vk::ValuesIndices& r);
int64_t as_i64(nb::handle h);
std::vector<Tensor> tensor_list(nb::handle seq);
nb::tuple to_tuple(const std::vector<Tensor>& ts);
// operand(), or a TypeError naming `op` when `h` is no tensor, number or array.
Tensor operand_or_raise(nb::handle h, const Tensor& like, const char* op);
Tensor clamp_any(const Tensor& x, nb::handle min, nb::handle max);
std::vector<Tensor> split_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
std::vector<Tensor> split_even(const Tensor& x, int64_t size, int64_t dim);
Tensor squeeze_any(const Tensor& x, nb::handle dim);
Tensor repeat(const Tensor& x, const Shape& reps);
DType creation_dtype(nb::handle dtype, DType dflt);  // None -> dflt
Tensor with_grad(Tensor t, bool requires_grad);
int64_t randint_bound(nb::handle h, const char* what);
vk::Scalar number_arg(nb::handle v, const char* op);
double correction_of(nb::handle& dim, nb::handle unbiased, nb::handle correction);
Tensor divide_rounded(const Tensor& x, const Tensor& y, const std::optional<std::string>& mode);

}  // namespace bindings

void bind_elementwise(nb::module_& m, nb::class_<Tensor>& c);
void bind_reduction(nb::module_& m, nb::class_<Tensor>& c);
void bind_shape(nb::module_& m, nb::class_<Tensor>& c);
void bind_index(nb::module_& m, nb::class_<Tensor>& c);
void bind_softmax(nb::module_& m, nb::class_<Tensor>& c);
void bind_linalg(nb::module_& m, nb::class_<Tensor>& c);
void bind_conv(nb::module_& m);
void bind_norm(nb::module_& m);
void bind_creation(nb::module_& m);
void bind_composite(nb::module_& m, nb::class_<Tensor>& c);  // issue #15 item 4
void bind_random(nb::module_& m);  // issue 15 item 3, called by bind_creation
// sort and scan families (sortscan)
void bind_sort(nb::module_& m, nb::class_<Tensor>& c);
void bind_scan(nb::module_& m, nb::class_<Tensor>& c);
// recurrent cells (issue #16 item 2: rnn)
void bind_rnn(nb::module_& m);
void bind_math(nb::module_& m, nb::class_<Tensor>& c);  // math ops (#15)
// solvers (#15 linalg)
void bind_solve(nb::module_& m, nb::class_<Tensor>& c);
void bind_qr(nb::module_& m);                              // QR (#15 linalg)
void bind_special(nb::module_& m, nb::class_<Tensor>& c);  // special functions (#15)
void bind_activation(nb::module_& m);                      // the activations' fused gradients (#18)
void bind_attention(nb::module_& m);  // scaled dot-product attention, fused (#18)
void bind_pointwise(nb::module_& m, nb::class_<Tensor>& c);  // lerp, addcmul, addcdiv (#18)

}  // namespace vkpy
