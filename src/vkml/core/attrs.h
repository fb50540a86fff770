// The parameters of one op call (everything that is not a tensor input). One plain struct shared
// by all ops keeps the op table uniform: a few common fields, then one small struct per op family
// (softmax, norm, conv/pool, ...), so that no field means one thing to one op and another to the
// next. Each op's entry documents which it reads.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkml/core/device.h"
#include "vkml/core/dtype.h"
#include "vkml/core/scalar.h"
#include "vkml/core/shape.h"

namespace vk {

class Tensor;
struct GradCtx;

// Each op family's own parameters, one meaning per field; an op reads its family's struct and
// the common fields its entry names (ops/*.cpp document which).

// Convolution and pooling (im2col, col2im, conv2d, max_pool2d, avg_pool2d): the 2-D window, H
// then W.
struct Window2d {
  int64_t kh = 1, kw = 1;  // kernel
  int64_t sh = 1, sw = 1;  // stride
  int64_t ph = 0, pw = 0;  // zero padding
  int64_t dh = 1, dw = 1;  // dilation
  int64_t groups = 1;      // conv2d: channel groups
};

// Normalisation (layer_norm, batch_norm and their backward and parameter-gradient ops). The
// normalized (trailing) shape of layer_norm is Attrs::shape.
struct NormAttrs {
  double eps = 1e-5;
  bool has_weight = false, has_bias = false;  // which optional inputs follow x (or g, x)
  bool with_param_grad = false;  // *_backward: also the weight and bias gradients, output 1
};

// softmax: the row scaled before it is exponentiated, and a causal mask (row i of the last two
// dims sees columns j <= i). log_softmax and the backward ops read none of it.
struct SoftmaxAttrs {
  double scale = 1.0;
  bool causal = false;
};

// gelu and gelu_backward: the tanh approximation instead of the exact erf form. with_derivative
// (gelu's erf form, float32 and float64): also return d gelu / dx as output 1, for the rule.
struct GeluAttrs {
  bool tanh_approximation = false;
  bool with_derivative = false;
};

// The activations with parameters (leaky_relu, elu, softplus and their *_backward ops, as
// torch.nn.functional's); hardtanh's bounds are Attrs::lo and ::hi.
struct ActivationAttrs {
  double negative_slope = 0.01;           // leaky_relu: x * negative_slope where x <= 0
  double alpha = 1.0, input_scale = 1.0;  // elu: alpha * (e^(x * input_scale) - 1) where x <= 0
  double beta = 1.0, threshold = 20.0;    // softplus: log(1 + e^(beta x)) / beta; x past it
  double width = 1.0;  // smooth_l1's beta, huber's delta: the quadratic piece spans |x| < width
};

// var: the correction subtracted from the element count (1: Bessel's).
struct VarAttrs {
  double correction = 1.0;
};

// pad: (before, after) widths per dim from the last dim backwards, and the fill value.
struct PadAttrs {
  std::vector<int64_t> widths;
  double value = 0.0;
};

// arange: exact integers (start + i * step computed in int64, Attrs::start and ::step) or doubles.
struct ArangeAttrs {
  bool integers = false;
  double start = 0.0, step = 1.0;  // when !integers
};

// multinomial (random sampling, issue 15 item 3): samples per row, and whether with replacement.
struct RandomAttrs {
  int64_t num_samples = 0;
  bool replacement = false;
};

// sort: descending order (NaN first) instead of ascending (NaN last); vkml's sort is always
// stable, so `stable` is recorded only to be reported back. searchsorted: `right` counts the
// boundaries <= each value instead of those < it (the result dtype is Attrs::dtype).
struct SortAttrs {
  bool descending = false;
  bool stable = false;
  bool right = false;
  int64_t keep = -1;  // sort: only the first `keep` along dim come out (topk); -1: all
};

// as_strided and strided_scatter: a region of a row-major tensor, its shape in Attrs::shape and
// its elements at offset + sum(i_k * strides[k]) of that tensor's elements in row-major order.
struct StridedAttrs {
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// A user-defined op (custom functions, checkpoint): its gradient is a closure, not a table rule.
struct TensorImpl;
struct CustomOp {
  std::string name;                                         // named in errors as the op
  std::shared_ptr<TensorImpl> result;                       // what user code computed (no history)
  std::function<std::vector<Tensor>(const GradCtx&)> grad;  // one gradient per input
  // The rule checks the versions of what it reads itself (autograd.Function's saved tensors), as
  // torch's: backward then checks nothing of the node's inputs and output for it.
  bool checks_own_reads = false;
};

// triangular_solve (#15 linalg): A is upper (else lower) triangular; unitriangular: its diagonal
// is taken as ones and not read.
struct TriangularAttrs {
  bool upper = false;
  bool unitriangular = false;
};

struct Attrs {
  // Common fields, one meaning each.
  std::vector<int64_t> dims;  // the dims an op acts on: reduced, permuted, flipped (empty = all)
  Shape shape;                // target shape: reshape, expand, full, sum_to, *_backward extents
  int64_t dim = 0;            // the one dim of cat/stack/slice/gather/index_select/argmax/...
  bool keepdim = false;
  Scalar value;                           // full's fill value (an int stays exact)
  std::optional<Scalar> lo, hi;           // clamp's, hardtanh's bounds; nullopt: that side open
  int64_t start = 0, stop = 0, step = 1;  // an integer range: slice, randint, integer arange
  DType dtype = DType::Float32;           // cast target, creation dtype
  Device device;                          // creation ops and to_device: where the result lives
  uint64_t seed = 0, offset = 0;          // counter-based RNG position
  // Per family (above).
  Window2d win;
  NormAttrs norm;
  SoftmaxAttrs softmax;
  GeluAttrs gelu;
  ActivationAttrs activation;
  VarAttrs var;
  PadAttrs pad;
  ArangeAttrs arange;
  RandomAttrs random;
  SortAttrs sort;
  std::shared_ptr<const CustomOp> custom;
  int64_t order = 0;           // math ops (#15): polygamma's n (the derivative of digamma taken)
  TriangularAttrs triangular;  // triangular_solve (#15 linalg)
  StridedAttrs strided;        // as_strided, strided_scatter (#18)
};

}  // namespace vk
