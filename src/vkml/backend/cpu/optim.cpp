// Fused SGD, Adam and Adadelta updates. The arithmetic follows torch.optim's single-tensor code op
// by op (same operations, same order, scalars rounded to the element type first), so a float32 step
// matches torch's rounding rather than a re-associated formula.
#include "vkml/backend/cpu/optim.h"

#include <array>
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

// Calls f.template operator()<flags...>() with the runtime flags as template arguments, chosen one
// at a time: each combination is its own loop without branches, which the compiler vectorises
// (SGD's loop with the flags as plain locals was left scalar by GCC 12: 1.1 ns per element with
// momentum in cache, where Adam's templated loop took 0.5).
template <size_t kN, bool... kChosen, class F>
void with_flags(const std::array<bool, kN>& flags, F&& f) {
  if constexpr (sizeof...(kChosen) == kN) {
    f.template operator()<kChosen...>();
  } else if (flags[sizeof...(kChosen)]) {
    with_flags<kN, kChosen..., true>(flags, f);
  } else {
    with_flags<kN, kChosen..., false>(flags, f);
  }
}

// Elements [begin, end) of one SGD step (the buffers are distinct tensors: restrict).
template <class T, bool kMaximize, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_range(T* __restrict p, const T* __restrict g, T* __restrict buf, const SgdScalars<T> s,
               int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    T d = kMaximize ? -g[i] : g[i];
    if constexpr (kDecay) d = d + s.weight_decay * p[i];  // grad.add(param, alpha=wd)
    if constexpr (kMomentum) {
      const T b = kFirst ? d : buf[i] * s.momentum + s.keep * d;
      buf[i] = b;
      d = kNesterov ? d + s.momentum * b : b;
    }
    p[i] = p[i] + s.neg_lr * d;  // param.add_(grad, alpha=-lr)
  }
}

template <class T>
void sgd_typed(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SgdHyper& h) {
  T* const p = param.data<T>();
  const T* const g = grad.data<T>();
  const bool momentum = h.momentum != 0.0;
  T* const buf = momentum ? buffer.data<T>() : nullptr;
  const SgdScalars<T> s(h);
  const std::array<bool, 5> flags{h.maximize, h.weight_decay != 0.0, momentum,
                                  momentum && h.first_step, momentum && h.nesterov};
  with_flags(
      flags, [&]<bool... kFlags>() {
        parallel_for(param.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          sgd_range<T, kFlags...>(p, g, buf, s, begin, end);
        });
      });
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

template <class T>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamHyper& h) {
  T* const p = param.data<T>();
  const T* const g = grad.data<T>();
  T* const m = exp_avg.data<T>();
  T* const v = exp_avg_sq.data<T>();
  T* const vmax = h.amsgrad ? max_exp_avg_sq.data<T>() : nullptr;
  const AdamScalars<T> s(h);
  const bool decay = h.weight_decay != 0.0;
  const std::array<bool, 4> flags{h.maximize, decay && !h.decoupled, decay && h.decoupled,
                                  h.amsgrad};
  with_flags(
      flags, [&]<bool... kFlags>() {
        parallel_for(param.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          adam_range<T, kFlags...>(p, g, m, v, vmax, s, begin, end);
        });
      });
}

// The hyperparameters of one Adadelta step in the element type.
template <class T>
struct AdadeltaScalars {
  T neg_lr, rho, one_minus_rho, eps, weight_decay;
  explicit AdadeltaScalars(const AdadeltaHyper& h)
      : neg_lr(static_cast<T>(-h.lr)),
        rho(static_cast<T>(h.rho)),
        one_minus_rho(static_cast<T>(1.0 - h.rho)),
        eps(static_cast<T>(h.eps)),
        weight_decay(static_cast<T>(h.weight_decay)) {}
};

// Elements [begin, end) of one Adadelta step, torch's single-tensor code op by op.
template <class T, bool kMaximize, bool kDecay>
void adadelta_range(T* __restrict p, const T* __restrict g, T* __restrict sq, T* __restrict acc,
                    const AdadeltaScalars<T> s, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    T d = kMaximize ? -g[i] : g[i];
    if constexpr (kDecay) d = d + s.weight_decay * p[i];      // grad.add(param, alpha=wd)
    sq[i] = sq[i] * s.rho + s.one_minus_rho * d * d;          // mul_(rho).addcmul_(g, g, 1 - rho)
    const T std_dev = std::sqrt(sq[i] + s.eps);               // square_avg.add(eps).sqrt_()
    const T delta = std::sqrt(acc[i] + s.eps) / std_dev * d;  // .div_(std).mul_(grad)
    acc[i] = acc[i] * s.rho + s.one_minus_rho * delta * delta;
    p[i] = p[i] + s.neg_lr * delta;  // param.add_(delta, alpha=-lr)
  }
}

template <class T>
void adadelta_typed(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                    const Tensor& acc_delta, const AdadeltaHyper& h) {
  T* const p = param.data<T>();
  const T* const g = grad.data<T>();
  T* const sq = square_avg.data<T>();
  T* const acc = acc_delta.data<T>();
  const AdadeltaScalars<T> s(h);
  const std::array<bool, 2> flags{h.maximize, h.weight_decay != 0.0};
  with_flags(
      flags, [&]<bool... kFlags>() {
        parallel_for(param.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          adadelta_range<T, kFlags...>(p, g, sq, acc, s, begin, end);
        });
      });
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

void adadelta_update(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                     const Tensor& acc_delta, const AdadeltaHyper& h) {
  if (is_half(param.dtype())) {
    const Tensor p = in_float32(param), sq = in_float32(square_avg), acc = in_float32(acc_delta);
    adadelta_typed<float>(p, in_float32(grad), sq, acc, h);
    write_back(param, p);
    write_back(square_avg, sq);
    write_back(acc_delta, acc);
    return;
  }
  VK_DISPATCH_FLOAT(param.dtype(), "adadelta_step_",
                    adadelta_typed<T>(param, grad, square_avg, acc_delta, h));
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
