// The parameters of one op call (everything that is not a tensor input). One plain struct shared
// by all ops keeps the op table uniform; each op's entry documents which fields it reads.
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

// Window geometry of im2col/col2im/conv2d/pooling (2-D; H then W).
struct Window2d {
  int64_t kh = 1, kw = 1;  // kernel
  int64_t sh = 1, sw = 1;  // stride
  int64_t ph = 0, pw = 0;  // zero padding
  int64_t dh = 1, dw = 1;  // dilation
};

// A user-defined op (custom functions, checkpoint): its gradient is a closure, not a table rule.
struct TensorImpl;
struct CustomOp {
  std::string name;                                         // named in errors as the op
  std::shared_ptr<TensorImpl> result;                       // what user code computed (no history)
  std::function<std::vector<Tensor>(const GradCtx&)> grad;  // one gradient per input
};

struct Attrs {
  std::vector<int64_t> dims;  // reduction dims (empty = all), permutation, flip dims
  Shape shape;                // target shape: reshape, expand, full, sum_to, *_backward extents
  int64_t dim = 0;            // the one dim of cat/stack/slice/gather/index_select/argmax/...
  bool keepdim = false;
  bool flag = false;                      // op-specific switch (gelu: tanh approximation; ...)
  double scalar = 0.0;                    // arange start, var correction, pad value, ...
  double scalar2 = 0.0;                   // arange step (floating), ...
  Scalar value;                           // full's fill value (an int stays exact)
  std::optional<Scalar> lo, hi;           // clamp's bounds; nullopt leaves that side open
  int64_t start = 0, stop = 0, step = 1;  // slice, arange
  std::vector<int64_t> ints;              // pad widths, ...
  Window2d win;                           // conv/pool geometry
  DType dtype = DType::Float32;           // cast target, creation dtype
  Device device;                          // creation ops and to_device: where the result lives
  uint64_t seed = 0, offset = 0;          // counter-based RNG position
  std::shared_ptr<const CustomOp> custom;
};

}  // namespace vk
