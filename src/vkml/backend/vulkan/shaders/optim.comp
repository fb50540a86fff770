// Fused optimizer steps (one invocation per element), the arithmetic of backend/cpu/optim.cpp op
// for op with the scalars rounded to T first, so that a float32 step rounds as torch's does. T is
// float or double (-DT=...); ADAM, ADADELTA or SGD picks the step.
#version 450
#if defined(USE_FLOAT64)
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : require
#endif

layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer P { T p[]; };
#if defined(ADAM)
layout(std430, binding = 1) buffer M { T m[]; };
layout(std430, binding = 2) buffer V { T v[]; };
layout(std430, binding = 3) buffer VMax { T vmax[]; };
layout(std430, binding = 4) readonly buffer G { T g[]; };

layout(push_constant) uniform Params {
  uint n, flags;  // 1 maximize, 2 L2 weight decay, 4 decoupled weight decay, 8 amsgrad
  int offset[5];  // p, m, v, vmax, g
  T decay_factor, weight_decay, avg_weight, beta2, sq_weight, neg_step_size, bc2_sqrt, eps;
} k;
#elif defined(ADADELTA)
layout(std430, binding = 1) buffer Sq { T sq[]; };
layout(std430, binding = 2) buffer Acc { T acc[]; };
layout(std430, binding = 3) readonly buffer G { T g[]; };

layout(push_constant) uniform Params {
  uint n, flags;  // 1 maximize, 2 weight decay
  int offset[4];  // p, sq, acc, g
  T neg_lr, rho, one_minus_rho, eps, weight_decay;
} k;
#else
layout(std430, binding = 1) buffer Buf { T buf[]; };
layout(std430, binding = 2) readonly buffer G { T g[]; };

layout(push_constant) uniform Params {
  uint n, flags;  // 1 maximize, 2 weight decay, 4 momentum, 8 first step, 16 nesterov
  int offset[3];  // p, buf, g
  T neg_lr, momentum, keep, weight_decay;
} k;
#endif

// torch.lerp: the form chosen by |weight| keeps both ends exact.
T lerp_exact(T start, T end, T weight) {
  return abs(weight) < T(0.5) ? start + weight * (end - start) : end - (end - start) * (T(1) - weight);
}

// torch.maximum: NaN in either operand gives NaN.
T nan_max(T a, T b) { return isnan(a) || a > b ? a : b; }

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  if (i >= k.n) return;
  const int ip = k.offset[0] + int(i);
#if defined(ADAM)
  const int im = k.offset[1] + int(i), iv = k.offset[2] + int(i), ix = k.offset[3] + int(i);
  const int ig = k.offset[4] + int(i);
  T d = (k.flags & 1u) != 0u ? -g[ig] : g[ig];
  if ((k.flags & 4u) != 0u) p[ip] = p[ip] * k.decay_factor;
  if ((k.flags & 2u) != 0u) d = d + k.weight_decay * p[ip];
  m[im] = lerp_exact(m[im], d, k.avg_weight);
  v[iv] = v[iv] * k.beta2 + k.sq_weight * d * d;
  T second = v[iv];
  if ((k.flags & 8u) != 0u) {
    second = nan_max(vmax[ix], v[iv]);
    vmax[ix] = second;
  }
  const T denom = sqrt(second) / k.bc2_sqrt + k.eps;
  p[ip] = p[ip] + k.neg_step_size * (m[im] / denom);
#elif defined(ADADELTA)
  const int is = k.offset[1] + int(i), ia = k.offset[2] + int(i), ig = k.offset[3] + int(i);
  T d = (k.flags & 1u) != 0u ? -g[ig] : g[ig];
  if ((k.flags & 2u) != 0u) d = d + k.weight_decay * p[ip];
  sq[is] = sq[is] * k.rho + k.one_minus_rho * d * d;
  const T delta = sqrt(acc[ia] + k.eps) / sqrt(sq[is] + k.eps) * d;
  acc[ia] = acc[ia] * k.rho + k.one_minus_rho * delta * delta;
  p[ip] = p[ip] + k.neg_lr * delta;
#else
  const int ib = k.offset[1] + int(i), ig = k.offset[2] + int(i);
  T d = (k.flags & 1u) != 0u ? -g[ig] : g[ig];
  if ((k.flags & 2u) != 0u) d = d + k.weight_decay * p[ip];
  if ((k.flags & 4u) != 0u) {
    const T b = (k.flags & 8u) != 0u ? d : buf[ib] * k.momentum + k.keep * d;
    buf[ib] = b;
    d = (k.flags & 16u) != 0u ? d + k.momentum * b : b;
  }
  p[ip] = p[ip] + k.neg_lr * d;
#endif
}
