// The optimizer services on the Vulkan device: one fused SGD, Adam or Adadelta step over a
// parameter, its gradient and its state (shaders/optim.comp), so that a training step's update
// never leaves the device.
#include <cmath>
#include <limits>

#include "vkml/backend/vulkan/kernels.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"

namespace vk::vulkan {
namespace {

// Push constants of optim.comp, laid out as its Params blocks (std430: T-sized scalars after
// the ints, aligned to T).
template <class T>
struct alignas(sizeof(T)) AdamParams {
  uint32_t n = 0, flags = 0;
  int32_t offset[5] = {};
  alignas(sizeof(T)) T decay_factor, weight_decay, avg_weight, beta2, sq_weight,
      neg_step_size, bc2_sqrt, eps;
};
template <class T>
struct alignas(sizeof(T)) SgdParams {
  uint32_t n = 0, flags = 0;
  int32_t offset[3] = {};
  alignas(sizeof(T)) T neg_lr, momentum, keep, weight_decay;
};
template <class T>
struct alignas(sizeof(T)) AdadeltaParams {
  uint32_t n = 0, flags = 0;
  int32_t offset[4] = {};
  alignas(sizeof(T)) T neg_lr, rho, one_minus_rho, eps, weight_decay;
};
static_assert(sizeof(AdamParams<float>) == 60 && sizeof(AdamParams<double>) == 96);
static_assert(sizeof(SgdParams<float>) == 36 && sizeof(SgdParams<double>) == 56);
static_assert(sizeof(AdadeltaParams<float>) == 44 && sizeof(AdadeltaParams<double>) == 64);

constexpr uint32_t kGroupSize = 256;  // local_size_x of optim.comp

// Every tensor of the step: on the device, of the parameter's dtype (float32, or float64 where
// the device has it), contiguous, as many elements as the parameter, indexable in 32 bits.
void check_step(const Tensor& param, std::initializer_list<const Tensor*> ts, const char* op) {
  Context& ctx = context();
  const bool f64 = param.dtype() == DType::Float64;
  VK_CHECK(param.dtype() == DType::Float32 || (f64 && ctx.has_float64()), DTypeError, op,
           ": the vulkan device steps float32 parameters", ctx.has_float64() ? " and float64" : "",
           ", got ", dtype_name(param.dtype()));
  VK_CHECK(param.numel() <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ",
           param.describe(), " is more than the vulkan backend indexes");
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    VK_CHECK(t->is_contiguous() && t->numel() == param.numel() && t->dtype() == param.dtype(),
             RuntimeError, op, ": the step's tensors are contiguous and shaped as the parameter, ",
             "got ", t->describe(), " for ", param.describe());
    VK_CHECK(t->offset() + t->numel() <= std::numeric_limits<int32_t>::max(), SizeError, op, ": ",
             t->describe(), " reaches elements beyond the vulkan backend's 32-bit indices");
  }
}

template <class T>
void sgd_typed(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SgdHyper& h) {
  SgdParams<T> k;
  k.n = static_cast<uint32_t>(param.numel());
  const bool momentum = h.momentum != 0.0;
  k.flags = (h.maximize ? 1u : 0u) | (h.weight_decay != 0.0 ? 2u : 0u) | (momentum ? 4u : 0u) |
            (h.first_step ? 8u : 0u) | (h.nesterov ? 16u : 0u);
  const Tensor& buf = momentum ? buffer : param;  // bound but unused without momentum
  k.offset[0] = static_cast<int32_t>(param.offset());
  k.offset[1] = static_cast<int32_t>(buf.offset());
  k.offset[2] = static_cast<int32_t>(grad.offset());
  k.neg_lr = static_cast<T>(-h.lr);
  k.momentum = static_cast<T>(h.momentum);
  k.keep = static_cast<T>(1.0 - h.dampening);
  k.weight_decay = static_cast<T>(h.weight_decay);
  Context& ctx = context();
  const char* name = sizeof(T) == 8 ? "sgd_f64" : "sgd_f32";
  const Pipeline& pipe = ctx.pipeline(name, shader_spirv(name), 3, sizeof(k));
  Buffer* buffers[] = {&bound_buffer(param, name), &bound_buffer(buf, name),
                       &bound_buffer(grad, name)};
  ctx.dispatch(pipe, buffers, &k, (uint64_t{k.n} + kGroupSize - 1) / kGroupSize, 2);
}

template <class T>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  AdamParams<T> k;
  k.n = static_cast<uint32_t>(param.numel());
  const bool decay = h.weight_decay != 0.0;
  k.flags = (h.maximize ? 1u : 0u) | (decay && !h.decoupled ? 2u : 0u) |
            (decay && h.decoupled ? 4u : 0u) | (h.amsgrad ? 8u : 0u);
  const Tensor& vmax = h.amsgrad ? max_exp_avg_sq : exp_avg_sq;  // bound but unused otherwise
  const Tensor* ts[] = {&param, &exp_avg, &exp_avg_sq, &vmax, &grad};
  for (int i = 0; i < 5; ++i) k.offset[i] = static_cast<int32_t>(ts[i]->offset());
  const double step = static_cast<double>(h.step);
  k.decay_factor = static_cast<T>(1.0 - h.lr * h.weight_decay);
  k.weight_decay = static_cast<T>(h.weight_decay);
  k.avg_weight = static_cast<T>(1.0 - h.beta1);
  k.beta2 = static_cast<T>(h.beta2);
  k.sq_weight = static_cast<T>(1.0 - h.beta2);
  k.neg_step_size = static_cast<T>(-(h.lr / (1.0 - std::pow(h.beta1, step))));
  k.bc2_sqrt = static_cast<T>(std::sqrt(1.0 - std::pow(h.beta2, step)));
  k.eps = static_cast<T>(h.eps);
  Context& ctx = context();
  const char* name = sizeof(T) == 8 ? "adam_f64" : "adam_f32";
  const Pipeline& pipe = ctx.pipeline(name, shader_spirv(name), 5, sizeof(k));
  const std::vector<Buffer*> buffers =
      bound_buffers({&param, &exp_avg, &exp_avg_sq, &vmax, &grad}, name);
  ctx.dispatch(pipe, buffers, &k, (uint64_t{k.n} + kGroupSize - 1) / kGroupSize, 4);
}

template <class T>
void adadelta_typed(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                    const Tensor& acc_delta, const AdadeltaHyper& h) {
  AdadeltaParams<T> k;
  k.n = static_cast<uint32_t>(param.numel());
  k.flags = (h.maximize ? 1u : 0u) | (h.weight_decay != 0.0 ? 2u : 0u);
  const Tensor* ts[] = {&param, &square_avg, &acc_delta, &grad};
  for (int i = 0; i < 4; ++i) k.offset[i] = static_cast<int32_t>(ts[i]->offset());
  k.neg_lr = static_cast<T>(-h.lr);
  k.rho = static_cast<T>(h.rho);
  k.one_minus_rho = static_cast<T>(1.0 - h.rho);
  k.eps = static_cast<T>(h.eps);
  k.weight_decay = static_cast<T>(h.weight_decay);
  Context& ctx = context();
  const char* name = sizeof(T) == 8 ? "adadelta_f64" : "adadelta_f32";
  const Pipeline& pipe = ctx.pipeline(name, shader_spirv(name), 4, sizeof(k));
  const std::vector<Buffer*> buffers =
      bound_buffers({&param, &square_avg, &acc_delta, &grad}, name);
  ctx.dispatch(pipe, buffers, &k, (uint64_t{k.n} + kGroupSize - 1) / kGroupSize, 3);
}

// A float32 copy of a 16-bit tensor (undefined stays undefined): as on the CPU, a 16-bit
// parameter steps in float32 and each tensor the step writes is rounded back once.
Tensor in_float32(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor w = Tensor::empty(t.shape(), DType::Float32, t.device());
  copy_into(w, t);
  return w;
}

void write_back(const Tensor& narrow, const Tensor& wide) {
  if (narrow.defined()) copy_into(narrow, wide);
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const SgdHyper& h) {
  if (is_half(param.dtype())) {
    const Tensor p = in_float32(param), buf = in_float32(momentum_buffer);
    sgd_update(p, in_float32(grad), buf, h);
    write_back(param, p);
    write_back(momentum_buffer, buf);
    return;
  }
  check_step(param, {&param, &grad, &momentum_buffer}, "SGD step");
  if (param.numel() == 0) return;
  if (param.dtype() == DType::Float64) return sgd_typed<double>(param, grad, momentum_buffer, h);
  sgd_typed<float>(param, grad, momentum_buffer, h);
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  if (is_half(param.dtype())) {
    const Tensor p = in_float32(param), m = in_float32(exp_avg), v = in_float32(exp_avg_sq);
    const Tensor vmax = h.amsgrad ? in_float32(max_exp_avg_sq) : Tensor();
    adam_update(p, in_float32(grad), m, v, vmax, h);
    write_back(param, p);
    write_back(exp_avg, m);
    write_back(exp_avg_sq, v);
    if (h.amsgrad) write_back(max_exp_avg_sq, vmax);
    return;
  }
  check_step(param, {&param, &grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq}, "Adam step");
  if (param.numel() == 0) return;
  if (param.dtype() == DType::Float64)
    return adam_typed<double>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
  adam_typed<float>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h);
}

void adadelta_update(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                     const Tensor& acc_delta, const AdadeltaHyper& h) {
  if (is_half(param.dtype())) {
    const Tensor p = in_float32(param), sq = in_float32(square_avg), acc = in_float32(acc_delta);
    adadelta_update(p, in_float32(grad), sq, acc, h);
    write_back(param, p);
    write_back(square_avg, sq);
    write_back(acc_delta, acc);
    return;
  }
  check_step(param, {&param, &grad, &square_avg, &acc_delta}, "Adadelta step");
  if (param.numel() == 0) return;
  if (param.dtype() == DType::Float64)
    return adadelta_typed<double>(param, grad, square_avg, acc_delta, h);
  adadelta_typed<float>(param, grad, square_avg, acc_delta, h);
}

}  // namespace vk::vulkan
