// The scan family: one invocation per row along a dim, walking its K elements in order. A
// dispatch walks k in [start, stop) (the host keeps stop - start under lavapipe's 65535 loop
// iterations, and runs as many as a row needs), carrying on from the outputs at start - 1: the
// same sequence of operations as one walk of the whole row. x and the outputs are contiguous
// (outer, K, inner); row r is (r / inner, :, r % inner), K elements `inner` apart.
//   CUMSUM / CUMPROD   the running sum / product
//   CUMMAX / CUMMIN    the running extreme and its index as int64 (lo, hi) words: an element at
//                      least as large (small) takes over, so ties give the latest index; a NaN
//                      always takes over and then stays, as on the CPU
#version 450
#if defined(INT64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T int64_t
#elif defined(INT32)
#define T int
#elif defined(FLOAT64)
#define T double
#else
#define T float
#endif
#if defined(INT32) || defined(INT64)
#define IS_NAN(v) false
#else
#define IS_NAN(v) isnan(v)
#endif

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint rows;
  uint K;
  uint inner;
  int x_offset;
  uint start;  // this pass's first k
  uint stop;   // and the k after its last
} p;

layout(std430, binding = 0) buffer Out { T o[]; };
#if defined(CUMMAX) || defined(CUMMIN)
layout(std430, binding = 1) buffer OutIndex { uint oi[]; };
layout(std430, binding = 2) readonly buffer X { T x[]; };
#else
layout(std430, binding = 1) readonly buffer X { T x[]; };
#endif

void main() {
  const uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                   gl_LocalInvocationID.x;
  if (row >= p.rows) return;
  const uint base = (row / p.inner) * p.K * p.inner + row % p.inner;
#if defined(CUMMAX) || defined(CUMMIN)
  T best = x[p.x_offset + int(base)];
  uint at_best = 0u;
  if (p.start > 0u) {  // carry on from the previous pass
    const uint prev = base + (p.start - 1u) * p.inner;
    best = o[prev];
    at_best = oi[2u * prev];
  }
  for (uint k = p.start; k < p.stop; ++k) {
    const uint at = base + k * p.inner;
    const T v = x[p.x_offset + int(at)];
#if defined(CUMMAX)
    const bool wins = v >= best;
#else
    const bool wins = v <= best;
#endif
    if (IS_NAN(v) || (!IS_NAN(best) && wins)) {
      best = v;
      at_best = k;
    }
    o[at] = best;
    oi[2u * at] = at_best;
    oi[2u * at + 1u] = 0u;
  }
#else
#if defined(CUMPROD)
  T acc = T(1);
#else
  T acc = T(0);
#endif
  if (p.start > 0u) acc = o[base + (p.start - 1u) * p.inner];  // carry on from the previous pass
  for (uint k = p.start; k < p.stop; ++k) {
    const uint at = base + k * p.inner;
#if defined(CUMPROD)
    acc *= x[p.x_offset + int(at)];
#else
    acc += x[p.x_offset + int(at)];
#endif
    o[at] = acc;
  }
#endif
}
