// The last step of a reduction, contiguous, n elements:
//   (default)   logsumexp: out = log(sum) + s, s = shift (the maximum), 0 where that is infinite
//               (as the sum of exp(x - s) was taken: shaders/reduce.comp, OP_SUMEXP)
//   DIVIDE64    float64 mean and var: out = sum / divisor, in double (reduce.comp's scale is a
//               float; a division, as the CPU's, and x / 0 is inf or NaN as there)
//   LSE64       logsumexp in float64, log by vmath.glsl (GLSL has none in double)
#version 450
#if defined(LSE64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T double
#define VM_DOUBLE 1
#include "vmath.glsl"
#define LOG(v) vm_log(v)
#else
#define T float
#define LOG(v) log(v)
#endif

layout(local_size_x = 64) in;

#if defined(DIVIDE64)
layout(push_constant) uniform Params {
  uint n;
  uint unused;
  double divisor;
} p;

layout(std430, binding = 0) buffer Out { double o[]; };
layout(std430, binding = 1) readonly buffer Sum { double sum[]; };
#else
layout(push_constant) uniform Params {
  uint n;
} p;

layout(std430, binding = 0) buffer Out { T o[]; };
layout(std430, binding = 1) readonly buffer Sum { T sum[]; };
layout(std430, binding = 2) readonly buffer Shift { T shift[]; };
#endif

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
#if defined(DIVIDE64)
  o[i] = sum[i] / p.divisor;
#else
  const T s = isinf(shift[i]) ? T(0) : shift[i];
  o[i] = LOG(sum[i]) + s;
#endif
}
