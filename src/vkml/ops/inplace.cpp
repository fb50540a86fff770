// In-place ops: compute out of place with the table's ops, then write into x's storage; the
// arithmetic ones (add_, sub_, mul_, div_) straight into x where the device has a kernel for it.
#include "vkml/ops/inplace.h"

#include "vkml/core/grad_mode.h"
#include "vkml/core/kernel.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/indexing.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

void check_target(const Tensor& x, const Tensor* value, const char* op) {
  if (!GradMode::is_enabled()) return;
  VK_CHECK(!x.requires_grad(), RuntimeError, op, ": in-place write into a ", x.describe(),
           " tensor that requires grad while grad mode is on; use the out-of-place op, or "
           "no_grad() for updates such as optimizer steps");
  VK_CHECK(value == nullptr || !value->requires_grad(), RuntimeError, op,
           ": writing a value that requires grad into a tensor in place would drop its graph; "
           "build the result out of place (cat, stack, where) instead");
}

// Writes `result` (same shape as x after broadcasting) into x and records the write.
void write_back(const Tensor& x, const Tensor& result, const char* op) {
  // As PyTorch: never into a lower category (int += 1.5 is float32, which an int64 x cannot hold).
  VK_CHECK(can_cast(result.dtype(), x.dtype()), RuntimeError, op, ": result type ",
           dtype_name(result.dtype()), " can't be cast to the desired output type ",
           dtype_name(x.dtype()), " (the dtype of the tensor written in place)");
  Tensor r = result;
  if (r.shape() != x.shape()) {
    Shape b = broadcast_shapes(x.shape(), r.shape(), op);
    VK_CHECK(b == x.shape(), ShapeError, op, ": cannot write a result of shape ",
             shape_str(r.shape()), " in place into shape ", shape_str(x.shape()));
    r = expand(r, x.shape());
  }
  // As torch: element-wise results cannot go into memory that several elements share; one value
  // (fill_, zero_, a 0-d source) can.
  if (result.ndim() > 0) check_no_internal_overlap(x, op);
  if (r.storage() == x.storage()) r = clone(r);  // e.g. x.copy_(flip(x)): read before writing
  in_place::copy(x, r);
  x.bump_version();
}

template <class F>
void apply(const Tensor& x, const Tensor& other, const char* op, F f) {
  check_target(x, &other, op);
  NoGradGuard no_grad;  // nothing here is recorded: the check above guarantees no graph is lost
  write_back(x, f(x, other), op);
}

// Whether `small`'s shape broadcasts to `big`'s without growing it.
bool broadcasts_to(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return false;
  const size_t lead = big.size() - small.size();
  for (size_t i = 0; i < small.size(); ++i)
    if (small[i] != 1 && small[i] != big[lead + i]) return false;
  return true;
}

// x = x op other straight into x's memory (one pass, no temporary: x.add_(y) took 2.6x torch's
// time through an out-of-place sum and a copy), where that gives the out-of-place result bit for
// bit: one floating dtype on one device that has the kernel, other broadcasting to x's shape and
// either apart from x's memory or x itself (x.mul_(x)). Otherwise false, nothing written.
bool direct(const Tensor& x, const Tensor& other, InPlaceOp kind, const char* op) {
  const bool floating = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
  if (!floating || other.dtype() != x.dtype() || other.device() != x.device() ||
      !broadcasts_to(other.shape(), x.shape()))
    return false;
  const bool is_x =
      other.offset() == x.offset() && other.shape() == x.shape() && other.strides() == x.strides();
  if (other.storage() == x.storage() && !is_x) return false;
  check_target(x, &other, op);
  if (x.ndim() > 0) check_no_internal_overlap(x, op);
  NoGradGuard no_grad;
  if (!in_place::binary(x, x, other.shape() == x.shape() ? other : expand(other, x.shape()), kind))
    return false;
  x.bump_version();
  return true;
}

}  // namespace

void add_(const Tensor& x, const Tensor& other, double alpha) {
  Tensor b = other;
  if (alpha != 1.0) {  // x + other * alpha, rounded as its out-of-place form: the product first
    check_target(x, &other, "add_");
    NoGradGuard no_grad;
    b = other * alpha;
  }
  if (direct(x, b, InPlaceOp::Add, "add_")) return;
  apply(x, b, "add_", [](auto& p, auto& q) { return p + q; });
}
void sub_(const Tensor& x, const Tensor& other) {
  if (direct(x, other, InPlaceOp::Sub, "sub_")) return;
  apply(x, other, "sub_", [](auto& a, auto& b) { return a - b; });
}
void mul_(const Tensor& x, const Tensor& other) {
  if (direct(x, other, InPlaceOp::Mul, "mul_")) return;
  apply(x, other, "mul_", [](auto& a, auto& b) { return a * b; });
}
void div_(const Tensor& x, const Tensor& other) {
  if (direct(x, other, InPlaceOp::Div, "div_")) return;
  apply(x, other, "div_", [](auto& a, auto& b) { return a / b; });
}
void add_(const Tensor& x, Scalar other) { add_(x, scalar_like(other, x, "add_")); }
void mul_(const Tensor& x, Scalar other) { mul_(x, scalar_like(other, x, "mul_")); }
void zero_(const Tensor& x) { fill_(x, 0); }

void fill_(const Tensor& x, Scalar value) {
  check_target(x, nullptr, "fill_");
  NoGradGuard no_grad;
  // The value is made on the CPU; a device tensor's copy reads its source there (init/utils/hooks
  // (#16): fill_ and zero_ of a Vulkan tensor crashed reading the CPU scalar as device memory).
  write_back(x, to_device(scalar_tensor(value, x.dtype(), "fill_"), x.device()), "fill_");
}

void copy_(const Tensor& x, const Tensor& src) {
  check_target(x, &src, "copy_");
  NoGradGuard no_grad;
  // As torch: the source may be on another device (cpu_tensor.copy_(gpu_tensor)); it moves first.
  Tensor s = to_device(src, x.device());
  if (s.dtype() != x.dtype()) s = cast(s, x.dtype());
  write_back(x, s, "copy_");
}

void clamp_(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  check_target(x, nullptr, "clamp_");
  NoGradGuard no_grad;
  write_back(x, clamp(x, min, max), "clamp_");
}

// ---- every other in-place op (issue #15, composite ops) ----

void inplace(const Tensor& x, const std::vector<Tensor>& others, const char* op,
             const std::function<Tensor()>& compute) {
  check_target(x, nullptr, op);
  for (const Tensor& o : others) check_target(x, &o, op);
  NoGradGuard no_grad;
  write_back(x, compute(), op);
}

}  // namespace vk
