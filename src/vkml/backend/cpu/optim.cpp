// Fused SGD and Adam updates. The arithmetic follows torch.optim's single-tensor code op by op
// (same operations, same order, scalars rounded to the element type first), so a float32 step
// matches torch's rounding rather than a re-associated formula.
#include "vkml/backend/cpu/optim.h"

#include <cmath>

#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/parallel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// The hyperparameters of one SGD step in the element type.
template <class T>
struct SgdScalars {
  T neg_lr, momentum, keep, weight_decay;  // keep = 1 - dampening
  explicit SgdScalars(const SgdHyper& h)
      : neg_lr(static_cast<T>(-h.lr)),
        momentum(static_cast<T>(h.momentum)),
        keep(static_cast<T>(1.0 - h.dampening)),
        weight_decay(static_cast<T>(h.weight_decay)) {}
};

template <class T>
void sgd_typed(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SgdHyper& h) {
  T* __restrict const p = param.data<T>();
  const T* __restrict const g = grad.data<T>();
  T* __restrict const buf = h.momentum != 0.0 ? buffer.data<T>() : nullptr;
  const SgdScalars<T> s(h);
  // Loop-invariant flags as locals (not read through h on every element, which a store to p
  // might alias), so the compiler unswitches the loop and vectorises each variant.
  const bool maximize = h.maximize, decay = h.weight_decay != 0.0, momentum = buf != nullptr,
             first = h.first_step, nesterov = h.nesterov;
  auto body = [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T d = maximize ? -g[i] : g[i];
      if (decay) d = d + s.weight_decay * p[i];  // grad.add(param, alpha=wd)
      if (momentum) {
        const T b = first ? d : buf[i] * s.momentum + s.keep * d;
        buf[i] = b;
        d = nesterov ? d + s.momentum * b : b;
      }
      p[i] = p[i] + s.neg_lr * d;  // param.add_(grad, alpha=-lr)
    }
  };
  parallel_for(param.numel(), kElementwiseGrain, body);
}

// The hyperparameters of one Adam step, bias corrections included, in the element type.
template <class T>
struct AdamScalars {
  T decay_factor;  // AdamW: 1 - lr * weight_decay
  T weight_decay, avg_weight, beta2, sq_weight, neg_step_size, bias_correction2_sqrt, eps;
  explicit AdamScalars(const AdamHyper& h) {
    const double step = static_cast<double>(h.step);
    const double bias_correction1 = 1.0 - std::pow(h.beta1, step);
    const double bias_correction2 = 1.0 - std::pow(h.beta2, step);
    decay_factor = static_cast<T>(1.0 - h.lr * h.weight_decay);
    weight_decay = static_cast<T>(h.weight_decay);
    avg_weight = static_cast<T>(1.0 - h.beta1);
    beta2 = static_cast<T>(h.beta2);
    sq_weight = static_cast<T>(1.0 - h.beta2);
    neg_step_size = static_cast<T>(-(h.lr / bias_correction1));
    bias_correction2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
    eps = static_cast<T>(h.eps);
  }
};

// torch.lerp(start, end, weight): the form chosen by |weight| keeps both ends exact.
template <class T>
T lerp(T start, T end, T weight) {
  return std::abs(weight) < T(0.5) ? start + weight * (end - start)
                                   : end - (end - start) * (T(1) - weight);
}

// torch.maximum: NaN in either operand gives NaN (std::max would drop a NaN second operand).
template <class T>
T nan_max(T a, T b) {
  return std::isnan(a) || a > b ? a : b;
}

// Elements [begin, end) of one Adam step, the options as template arguments so that the loop has
// no branch and vectorises (the buffers are distinct tensors: restrict).
template <class T, bool kMaximize, bool kL2, bool kDecoupled, bool kAmsgrad>
void adam_range(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
                T* __restrict vmax, const AdamScalars<T> s, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    T d = kMaximize ? -g[i] : g[i];
    if constexpr (kDecoupled) p[i] = p[i] * s.decay_factor;  // param.mul_(1 - lr * wd)
    if constexpr (kL2) d = d + s.weight_decay * p[i];        // grad.add(param, alpha=wd)
    m[i] = lerp(m[i], d, s.avg_weight);                      // exp_avg.lerp_(grad, 1 - beta1)
    v[i] = v[i] * s.beta2 + s.sq_weight * d * d;  // mul_(beta2).addcmul_(g, g, 1 - beta2)
    T second = v[i];
    if constexpr (kAmsgrad) second = vmax[i] = nan_max(vmax[i], v[i]);
    const T denom = std::sqrt(second) / s.bias_correction2_sqrt + s.eps;
    p[i] = p[i] + s.neg_step_size * (m[i] / denom);  // param.addcdiv_(m, denom, -step_size)
  }
}

template <class T, bool... kFlags>
void adam_run(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
              const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamScalars<T>& s) {
  T* const p = param.data<T>();
  const T* const g = grad.data<T>();
  T* const m = exp_avg.data<T>();
  T* const v = exp_avg_sq.data<T>();
  T* const vmax = max_exp_avg_sq.defined() ? max_exp_avg_sq.data<T>() : nullptr;
  parallel_for(param.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    adam_range<T, kFlags...>(p, g, m, v, vmax, s, begin, end);
  });
}

// Picks the instantiation for the runtime options, one flag at a time.
template <class T, bool... kChosen>
void adam_dispatch(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                   const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamScalars<T>& s,
                   const bool* flags) {
  if constexpr (sizeof...(kChosen) == 4) {
    adam_run<T, kChosen...>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, s);
  } else if (flags[sizeof...(kChosen)]) {
    adam_dispatch<T, kChosen..., true>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, s, flags);
  } else {
    adam_dispatch<T, kChosen..., false>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, s, flags);
  }
}

template <class T>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  const bool decay = h.weight_decay != 0.0;
  const bool flags[4] = {h.maximize, decay && !h.decoupled, decay && h.decoupled, h.amsgrad};
  adam_dispatch<T>(param, grad, exp_avg, exp_avg_sq, h.amsgrad ? max_exp_avg_sq : Tensor(),
                   AdamScalars<T>(h), flags);
}

// A float32 copy of a 16-bit tensor (undefined stays undefined): a 16-bit parameter steps in
// float32 and each tensor the step writes is rounded back once.
Tensor in_float32(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor w = Tensor::empty(t.shape(), DType::Float32);
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
    sgd_typed<float>(p, in_float32(grad), buf, h);
    write_back(param, p);
    write_back(momentum_buffer, buf);
    return;
  }
  VK_DISPATCH_FLOAT(param.dtype(), "sgd_step_", sgd_typed<T>(param, grad, momentum_buffer, h));
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  if (is_half(param.dtype())) {
    const Tensor p = in_float32(param), m = in_float32(exp_avg), v = in_float32(exp_avg_sq);
    const Tensor vmax = h.amsgrad ? in_float32(max_exp_avg_sq) : Tensor();
    adam_typed<float>(p, in_float32(grad), m, v, vmax, h);
    write_back(param, p);
    write_back(exp_avg, m);
    write_back(exp_avg_sq, v);
    if (h.amsgrad) write_back(max_exp_avg_sq, vmax);
    return;
  }
  VK_DISPATCH_FLOAT(param.dtype(), "adam_step_",
                    adam_typed<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, h));
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
