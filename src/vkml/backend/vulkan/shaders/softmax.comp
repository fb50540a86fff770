// The softmax family, one workgroup per row: x is contiguous (outer, K, inner) and row r is
// (r / inner, :, r % inner), K elements `inner` apart. Each invocation folds the elements
// t, t + 128, ... of the row in order (at most K / 128 of them, three times over: the host keeps
// that well under the 65535 loop iterations lavapipe allows a shader in all), then the 128 partial
// results are combined in shared memory in a fixed tree, so results do not depend on scheduling.
//   SOFTMAX      y = exp(s - max) / sum(exp(s - max)), s = scale * x; with a causal mask (queries
//                > 0: inner is 1) row r keeps its first (r % queries) + 1 elements, the rest 0
//   LOG_SOFTMAX  y = (x - max) - log(sum(exp(x - max)))
//   SOFTMAX_BW   dx = y * (g - sum(g * y))        (a = g, b = y)
//   LOG_BW       dx = g - exp(y) * sum(g)
// A NaN is skipped by the max but makes the sum NaN: the row comes out NaN, as on the CPU.
// SHORT_ROWS: one invocation per row instead (short rows: a workgroup each is slower).
// FLOAT64: double throughout, exp and log by vmath.glsl's port of the CPU's routines (GLSL has
// none in double; the CPU's exp to the bit, so only the sums' order differs from the CPU's), the
// scale from scale_lo and scale_hi.
#version 450
#if defined(FLOAT64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T double
#define VM_DOUBLE 1
#include "vmath.glsl"
#define EXP(v) vm_exp(v)
#define LOG(v) vm_log(v)
#define SCALE packDouble2x32(uvec2(p.scale_lo, p.scale_hi))
#else
#define T float
#define EXP(v) exp(v)
#define LOG(v) log(v)
#define SCALE p.scale
#endif

#if defined(SHORT_ROWS)
#define LANES 1u
layout(local_size_x = 64) in;
#else
#define LANES 128u
layout(local_size_x = 128) in;
#endif

layout(push_constant) uniform Params {
  uint rows;
  uint K;
  uint inner;
  uint queries;  // 0: no causal mask
  float scale;
  int a_offset;
  int b_offset;
  uint scale_lo, scale_hi;  // FLOAT64's scale, a double's words (a float32 variant declares no
                            // double, which needs shaderFloat64)
} p;

layout(std430, binding = 0) buffer Out { T o[]; };
layout(std430, binding = 1) readonly buffer A { T a[]; };
#if defined(SOFTMAX_BW) || defined(LOG_BW)
layout(std430, binding = 2) readonly buffer B { T b[]; };
#endif

#if defined(SHORT_ROWS)
T tree_sum(T v) { return v; }
T tree_max(T v) { return v; }
#else
shared T partial[128];

T tree_sum(T v) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint w = 64u; w > 0u; w >>= 1u) {
    if (t < w) partial[t] += partial[t + w];
    barrier();
  }
  const T r = partial[0];
  barrier();  // every invocation has read partial[0] before it is written again
  return r;
}

T tree_max(T v) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint w = 64u; w > 0u; w >>= 1u) {
    if (t < w) partial[t] = partial[t + w] > partial[t] ? partial[t + w] : partial[t];
    barrier();
  }
  const T r = partial[0];
  barrier();
  return r;
}
#endif

void main() {
  const uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
#if defined(SHORT_ROWS)
  const uint row = group * 64u + gl_LocalInvocationID.x, t = 0u;
#else
  const uint row = group, t = gl_LocalInvocationID.x;
#endif
  if (row >= p.rows) return;  // without SHORT_ROWS the whole workgroup: barriers stay uniform
  const uint base = (row / p.inner) * p.K * p.inner + row % p.inner;
  const uint K = p.K, step = p.inner;
#if defined(SOFTMAX) || defined(LOG_SOFTMAX)
  const uint valid = p.queries == 0u ? K : min(K, row % p.queries + 1u);
  T m = T(-1.0 / 0.0);
  for (uint k = t; k < valid; k += LANES) {
    const T v = a[p.a_offset + int(base + k * step)] * SCALE;
    m = v > m ? v : m;
  }
  m = tree_max(m);
  T s = T(0);
  for (uint k = t; k < valid; k += LANES)
    s += EXP(a[p.a_offset + int(base + k * step)] * SCALE - m);
  s = tree_sum(s);
#if defined(SOFTMAX)
  const T inv = T(1) / s;  // a multiply per element, as the CPU's
  for (uint k = t; k < K; k += LANES) {
    const T v = a[p.a_offset + int(base + k * step)];
    o[base + k * step] = k < valid ? EXP(v * SCALE - m) * inv : T(0);
  }
#else
  const T ls = LOG(s);
  for (uint k = t; k < K; k += LANES)
    o[base + k * step] = (a[p.a_offset + int(base + k * step)] - m) - ls;
#endif
#else
  T s = T(0);
  for (uint k = t; k < K; k += LANES) {
    const int at = int(base + k * step);
#if defined(SOFTMAX_BW)
    s += a[p.a_offset + at] * b[p.b_offset + at];
#else
    s += a[p.a_offset + at];
#endif
  }
  s = tree_sum(s);
  for (uint k = t; k < K; k += LANES) {
    const int at = int(base + k * step);
    const T g = a[p.a_offset + at], y = b[p.b_offset + at];
#if defined(SOFTMAX_BW)
    o[at] = y * (g - s);
#else
    o[at] = g - EXP(y) * s;
#endif
  }
#endif
}
