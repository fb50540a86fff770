// User-defined differentiable ops, checkpointing and gradient checks.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "vkml/core/tensor.h"

namespace vk::autograd {

using Vjp = std::function<std::vector<Tensor>(const Tensor& grad)>;

// The lowest seam: `result` (computed by user code) becomes the output of an op named `name`
// whose inputs are `parents` and whose vector-Jacobian product is `vjp`. vjp(grad) returns one
// gradient per parent (undefined for none); written with vkml ops, it is differentiable again.
// With grad mode off, or no parent requiring grad, returns `result` detached.
Tensor from_op(const Tensor& result, const std::vector<Tensor>& parents, Vjp vjp,
               std::string name = "custom");

// A custom function with a context, as torch.autograd.Function: forward runs without recording.
class FunctionCtx {
 public:
  std::vector<bool> needs_input_grad;
  // The recorded output, set just before backward runs: a backward that uses it (rather than a
  // copy saved in forward) stays connected to the inputs, so it can be differentiated again.
  Tensor output;
  void save_for_backward(std::vector<Tensor> tensors);
  // The saved tensors; RuntimeError if one was written in place since it was saved (its new
  // values would give a wrong gradient), as torch's.
  const std::vector<Tensor>& saved_tensors() const;

 private:
  std::vector<Tensor> saved_;
  std::vector<uint32_t> versions_;  // each saved tensor's version when saved
};
using ForwardFn = std::function<Tensor(FunctionCtx&, const std::vector<Tensor>&)>;
using BackwardFn = std::function<std::vector<Tensor>(FunctionCtx&, const Tensor& grad)>;
Tensor apply_function(const std::string& name, const std::vector<Tensor>& inputs,
                      const ForwardFn& forward, const BackwardFn& backward);

// Runs fn without keeping its graph; during backward re-runs it (with the random-number state it
// first saw) and differentiates the recomputed graph. Works with backward, grad, create_graph.
Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                  const std::vector<Tensor>& inputs);

// Compares every analytic Jacobian entry of fn at `inputs` (float64, requiring grad) with
// central differences. Returns an empty string when they agree, else what disagreed.
using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;
std::string gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                      double atol = 1e-5, double rtol = 1e-3);
// gradcheck of x -> d(fn(x) . v)/dx for a fixed random v: second derivatives.
std::string gradgradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                          double atol = 1e-5, double rtol = 1e-3);

}  // namespace vk::autograd
