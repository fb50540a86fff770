// In-place ops (PyTorch's trailing underscore). Each writes into x's storage and bumps its version
// counter, so a graph that saved x and is differentiated later raises instead of computing a
// wrong gradient.
//
// While grad mode is on and x or a value written requires grad, the write is recorded, as
// torch's: each returns the tensor that now stands for x, a new node over x's memory carrying the
// write's history, and the caller takes it in place of x (x = mul_(x, w); the Python binding
// rebinds the object). Otherwise each returns x. A leaf that requires grad, or a view of one,
// cannot be written while grad mode is on (RuntimeError): use no_grad() for updates such as
// optimizer steps. A tensor over x's memory made before a recorded write (a view taken earlier)
// cannot be used while grad mode is on afterwards: take it again from the tensor returned.
#pragma once
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "vkml/core/scalar.h"
#include "vkml/core/tensor.h"
#include "vkml/ops/indexing.h"

namespace vk {

Tensor add_(const Tensor& x, const Tensor& other, double alpha = 1.0);  // x += alpha * other
Tensor sub_(const Tensor& x, const Tensor& other);
Tensor mul_(const Tensor& x, const Tensor& other);
Tensor div_(const Tensor& x, const Tensor& other);
Tensor add_(const Tensor& x, Scalar other);
Tensor mul_(const Tensor& x, Scalar other);
Tensor zero_(const Tensor& x);
Tensor fill_(const Tensor& x, Scalar value);  // converts as full() does: a value must fit x's dtype
Tensor copy_(const Tensor& x, const Tensor& src);  // src broadcasts to x's shape; dtype converts
Tensor clamp_(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
// x[items] = value; value broadcasts to the indexed shape (ops/indexing.h).
Tensor index_put_(const Tensor& x, const std::vector<IndexItem>& items, const Tensor& value);

// After a recorded write through a view (`view`: the tensor the write returned for it, as
// y[0].mul_(2) gives): the node that stood for the view's base before the write and the one that
// stands for the base's memory now, for a binding to move the base's object from one to the other.
// Both undefined when the write went through no view.
std::pair<Tensor, Tensor> base_rebinding(const Tensor& view);

// ---- every other in-place op (issue #15, composite ops): one mechanism ----
// x.<op>_(...) for any out-of-place op: `compute` returns the result (from x and the tensors in
// `others`), which is written into x as the ops above write (dtype must cast, shape must
// broadcast to x's). `compute` runs with grad mode as the caller has it when the write is
// recorded, with it off otherwise. E.g.
//   x = inplace(x, {}, "exp_", [&] { return exp(x); });
Tensor inplace(const Tensor& x, const std::vector<Tensor>& others, const char* op,
               const std::function<Tensor()>& compute);

}  // namespace vk
