// Argument checks and bookkeeping around the fused updates each backend provides (core/kernel.h).
#include "vkml/optim/optim.h"

#include <cmath>
#include <optional>
#include <string>

#include "vkml/core/grad_mode.h"
#include "vkml/core/kernel.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/inplace.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk::optim {
namespace {

void check_param(const Tensor& param, const char* fn) {
  VK_CHECK(param.defined(), RuntimeError, fn, ": param is undefined");
  VK_CHECK(is_floating(param.dtype()), DTypeError, fn, ": param must be floating point, got ",
           param.describe());
}

// `t` (named `what`) must have the parameter's shape, dtype and device.
void check_like_param(const Tensor& t, const Tensor& param, const char* fn, const char* what) {
  VK_CHECK(t.defined(), RuntimeError, fn, ": ", what, " is undefined");
  VK_CHECK(t.device() == param.device(), DeviceError, fn, ": ", what, " is on ",
           device_name(t.device()), " but param is on ", device_name(param.device()));
  VK_CHECK(t.shape() == param.shape(), ShapeError, fn, ": ", what, " of shape ",
           shape_str(t.shape()), " does not match param of shape ", shape_str(param.shape()));
  VK_CHECK(t.dtype() == param.dtype(), DTypeError, fn, ": ", what, " has dtype ",
           dtype_name(t.dtype()), " but param has dtype ", dtype_name(param.dtype()));
}

// The kernels need contiguous memory. A tensor that is not contiguous (a rare strided view) is
// updated through a contiguous copy that is written back afterwards.
class Dense {
 public:
  explicit Dense(const Tensor& t) : target_(t), dense_(t.is_contiguous() ? t : clone(t)) {}
  const Tensor& get() const { return dense_; }
  // Writes the copy back (when there is one) and records the in-place write.
  void commit() const {
    if (!dense_.same(target_)) in_place::copy(target_, dense_);
    target_.bump_version();
  }

 private:
  Tensor target_, dense_;
};

}  // namespace

Tensor sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, double lr,
                 double momentum, double dampening, bool nesterov, double weight_decay,
                 bool maximize) {
  constexpr const char* fn = "sgd_step_";
  check_param(param, fn);
  check_like_param(grad, param, fn, "grad");
  VK_CHECK(!nesterov || (momentum > 0.0 && dampening == 0.0), RuntimeError, fn,
           ": nesterov momentum requires a momentum > 0 and zero dampening (got momentum ",
           momentum, ", dampening ", dampening, ")");
  NoGradGuard no_grad;
  const bool first_step = momentum != 0.0 && !momentum_buffer.defined();
  Tensor buffer = momentum_buffer;
  if (first_step) buffer = Tensor::empty(param.shape(), param.dtype(), param.device());
  if (momentum != 0.0) check_like_param(buffer, param, fn, "momentum_buffer");

  Dense p(param);
  std::optional<Dense> buf;
  if (momentum != 0.0) buf.emplace(buffer);
  in_place::sgd_update(p.get(), contiguous(grad), buf ? buf->get() : Tensor(),
                       {.lr = lr,
                        .momentum = momentum,
                        .dampening = dampening,
                        .weight_decay = weight_decay,
                        .nesterov = nesterov,
                        .maximize = maximize,
                        .first_step = first_step});
  p.commit();
  if (buf) buf->commit();
  return momentum != 0.0 ? buffer : momentum_buffer;
}

void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, int64_t step, double lr, double beta1, double beta2,
                double eps, double weight_decay, bool decoupled, bool amsgrad,
                const Tensor& max_exp_avg_sq, bool maximize) {
  const char* fn = decoupled ? "adamw_step_" : "adam_step_";
  check_param(param, fn);
  check_like_param(grad, param, fn, "grad");
  check_like_param(exp_avg, param, fn, "exp_avg");
  check_like_param(exp_avg_sq, param, fn, "exp_avg_sq");
  if (amsgrad) check_like_param(max_exp_avg_sq, param, fn, "max_exp_avg_sq (amsgrad)");
  VK_CHECK(step >= 1, RuntimeError, fn, ": step is 1-based (the step being taken), got ", step);
  NoGradGuard no_grad;
  Dense p(param), m(exp_avg), v(exp_avg_sq);
  std::optional<Dense> vmax;
  if (amsgrad) vmax.emplace(max_exp_avg_sq);
  in_place::adam_update(p.get(), contiguous(grad), m.get(), v.get(), vmax ? vmax->get() : Tensor(),
                        {.lr = lr,
                         .beta1 = beta1,
                         .beta2 = beta2,
                         .eps = eps,
                         .weight_decay = weight_decay,
                         .step = step,
                         .decoupled = decoupled,
                         .amsgrad = amsgrad,
                         .maximize = maximize});
  p.commit();
  m.commit();
  v.commit();
  if (vmax) vmax->commit();
}

void adadelta_step_(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                    const Tensor& acc_delta, double lr, double rho, double eps, double weight_decay,
                    bool maximize) {
  constexpr const char* fn = "adadelta_step_";
  check_param(param, fn);
  check_like_param(grad, param, fn, "grad");
  check_like_param(square_avg, param, fn, "square_avg");
  check_like_param(acc_delta, param, fn, "acc_delta");
  NoGradGuard no_grad;
  Dense p(param), sq(square_avg), acc(acc_delta);
  in_place::adadelta_update(
      p.get(), contiguous(grad), sq.get(), acc.get(),
      {.lr = lr, .rho = rho, .eps = eps, .weight_decay = weight_decay, .maximize = maximize});
  p.commit();
  sq.commit();
  acc.commit();
}

namespace {

// torch.linalg.vector_norm of one tensor, as a 0-d tensor of its dtype.
Tensor vector_norm(const Tensor& g, double norm_type) {
  if (std::isinf(norm_type)) return amax(abs(g));
  if (norm_type == 2.0) return sqrt(sum_squares(g));
  if (norm_type == 1.0) return sum(abs(g));
  return pow(sum(pow(abs(g), norm_type)), 1.0 / norm_type);
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& grads, double max_norm, double norm_type) {
  constexpr const char* fn = "clip_grad_norm_";
  VK_CHECK(norm_type > 0.0, RuntimeError, fn, ": norm_type must be > 0 or inf, got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> norms;
  DType dtype = DType::Float32;
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (!g.defined()) continue;
    VK_CHECK(is_floating(g.dtype()), DTypeError, fn, ": gradient ", i, " is ", g.describe(),
             ", not floating point");
    dtype = norms.empty() ? g.dtype() : promote(dtype, g.dtype());
    if (g.numel() > 0) norms.push_back(vector_norm(g, norm_type));  // empty adds nothing
  }
  if (norms.empty()) return zeros({}, dtype);
  for (Tensor& n : norms) n = cast(n, dtype);
  Tensor total = vector_norm(stack(norms), norm_type);
  // min(1, coef) computed as torch does, in the gradients' dtype; a NaN total stays NaN.
  Tensor coef = scalar_like(max_norm, total) / (total + 1e-6);
  Tensor one = scalar_like(1.0, coef);
  Tensor clamped = where(lt(coef, one), coef, where(ne(coef, coef), coef, one));
  for (const Tensor& g : grads)
    if (g.defined()) mul_(g, cast(clamped, g.dtype()));
  return total;
}

}  // namespace vk::optim
