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
#version 450

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
} p;

layout(std430, binding = 0) buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer A { float a[]; };
#if defined(SOFTMAX_BW) || defined(LOG_BW)
layout(std430, binding = 2) readonly buffer B { float b[]; };
#endif

#if defined(SHORT_ROWS)
float tree_sum(float v) { return v; }
float tree_max(float v) { return v; }
#else
shared float partial[128];

float tree_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint w = 64u; w > 0u; w >>= 1u) {
    if (t < w) partial[t] += partial[t + w];
    barrier();
  }
  const float r = partial[0];
  barrier();  // every invocation has read partial[0] before it is written again
  return r;
}

float tree_max(float v) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint w = 64u; w > 0u; w >>= 1u) {
    if (t < w) partial[t] = partial[t + w] > partial[t] ? partial[t + w] : partial[t];
    barrier();
  }
  const float r = partial[0];
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
  float m = -1.0 / 0.0;
  for (uint k = t; k < valid; k += LANES) {
    const float v = a[p.a_offset + int(base + k * step)] * p.scale;
    m = v > m ? v : m;
  }
  m = tree_max(m);
  float s = 0.0;
  for (uint k = t; k < valid; k += LANES)
    s += exp(a[p.a_offset + int(base + k * step)] * p.scale - m);
  s = tree_sum(s);
#if defined(SOFTMAX)
  const float inv = 1.0 / s;  // a multiply per element, as the CPU's
  for (uint k = t; k < K; k += LANES) {
    const float v = a[p.a_offset + int(base + k * step)];
    o[base + k * step] = k < valid ? exp(v * p.scale - m) * inv : 0.0;
  }
#else
  const float ls = log(s);
  for (uint k = t; k < K; k += LANES)
    o[base + k * step] = (a[p.a_offset + int(base + k * step)] - m) - ls;
#endif
#else
  float s = 0.0;
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
    const float g = a[p.a_offset + at], y = b[p.b_offset + at];
#if defined(SOFTMAX_BW)
    o[at] = y * (g - s);
#else
    o[at] = g - exp(y) * s;
#endif
  }
#endif
}
