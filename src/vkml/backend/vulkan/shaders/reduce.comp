// One pass of a reduction over the reduced dims: invocation (i, c) folds chunk c -- elements
// [c * chunk, (c + 1) * chunk) of output i's reduced elements in row-major order. Chunks keep
// every invocation's loops short (lavapipe stops a shader once it has made 65535 loop iterations,
// all its loops together, silently: a chunk of 4096 with up to 6 reduced dims walked per element
// makes at most 4096 * 7); the host folds the n_chunks partial results with this shader again. The order is fixed: results do
// not depend on the device's workgroup size or scheduling.
//   (default)   sum, times `scale` (mean), compensated (Kahan), so a long sum in float32 stays
//               close to the CPU's double accumulation
//   OP_SUMEXP   sum of exp(x - s), s = shift[i] (0 where that is infinite): logsumexp
//   OP_SQDEV    sum of (x - mean[i])^2, times `scale`: var
//   OP_PROD     product
//   OP_MAX/MIN  the extreme, NaN propagating as on the CPU; WITH_INDEX also the index of its first
//               occurrence (the first NaN if any), written as int64 (lo, hi) words; MERGE_INDEX
//               reads a previous pass's (value, index) pairs instead of x
// INT32/INT64: the element type of x and the output (sum, prod: wrapping, as the CPU's; max, min)
// instead of float; FLOAT64: double (sum and sqdev: the host divides for mean and var, as the
// scale is float); BOOL: bytes (8-bit storage) of 0 or 1 for max and min, compared as uint. T is
// the type computed in, S the type stored.
#version 450
#if defined(INT64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T int64_t
#elif defined(INT32)
#define T int
#elif defined(BOOL)
#extension GL_EXT_shader_8bit_storage : require
#define T uint
#define S uint8_t
#elif defined(FLOAT64)
#define T double
#else
#define T float
#endif
#if !defined(S)
#define S T
#endif
#if defined(OP_SUMEXP) && defined(FLOAT64)  // GLSL has no double exp: vmath.glsl's, the CPU's
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define VM_DOUBLE 1
#include "vmath.glsl"
#define EXP(v) vm_exp(v)
#else
#define EXP(v) exp(v)
#endif
#if defined(INT32) || defined(INT64) || defined(BOOL)
#define IS_NAN(v) false
#else
#define IS_NAN(v) isnan(v)
#endif

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint n_out;
  uint n_red;
  uint kept_ndim;
  uint red_ndim;
  float scale;
  int in_offset;
  uint chunk;
  uint n_chunks;
  uint kept_shape[6];
  int kept_stride[6];
  uint red_shape[6];
  int red_stride[6];
} p;

layout(std430, binding = 0) buffer Out { S o[]; };
#if defined(WITH_INDEX)
layout(std430, binding = 1) buffer OutIndex { uint oi[]; };
layout(std430, binding = 2) readonly buffer In { S x[]; };
#if defined(MERGE_INDEX)
layout(std430, binding = 3) readonly buffer InIndex { uint xi[]; };
#endif
#else
layout(std430, binding = 1) readonly buffer In { S x[]; };
#if defined(OP_SUMEXP) || defined(OP_SQDEV)
layout(std430, binding = 2) readonly buffer Shift { T shift[]; };
#endif
#endif

// WORST: what a chunk of no elements gives (logsumexp of nothing; the other extremes of nothing
// are errors)
#if defined(OP_MAX)
#define BEYOND(v, a) ((v) > (a))
#define WORST (-1.0 / 0.0)
#elif defined(OP_MIN)
#define BEYOND(v, a) ((v) < (a))
#define WORST (1.0 / 0.0)
#endif
#if defined(INT32) || defined(INT64) || defined(BOOL)
#undef WORST
#define WORST 0
#endif

// The element at reduced index j of the output whose elements start at `base`.
int at_of(int base, uint j) {
  if (p.red_ndim <= 1u) return base + int(j) * p.red_stride[0];  // no division: the common case
  int at = base;
  uint q = j;
  for (int d = int(p.red_ndim) - 1; d >= 0; --d) {
    at += int(q % p.red_shape[d]) * p.red_stride[d];
    q /= p.red_shape[d];
  }
  return at;
}

void main() {
  const uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                  gl_LocalInvocationID.x;
  if (id >= p.n_out * p.n_chunks) return;
  const uint i = id / p.n_chunks;
  const uint first = (id % p.n_chunks) * p.chunk;
  const uint last = min(first + p.chunk, p.n_red);
  int base = p.in_offset;
  uint r = i;
  for (int d = int(p.kept_ndim) - 1; d >= 0; --d) {
    base += int(r % p.kept_shape[d]) * p.kept_stride[d];
    r /= p.kept_shape[d];
  }
#if defined(OP_MAX) || defined(OP_MIN)
  // The first element in order that no later one beats: ties keep the earlier (the CPU's first
  // index), and a NaN, once taken, stays (the first NaN).
  T best = T(WORST);
  uint best_at = 0u;
  bool any = false;
  for (uint j = first; j < last; ++j) {
    const int at = at_of(base, j);
    const T v = T(x[at]);
    if (!any || BEYOND(v, best) || (IS_NAN(v) && !IS_NAN(best))) {
      best = v;
#if defined(MERGE_INDEX)
      best_at = xi[2 * at];
#else
      best_at = j;
#endif
      any = true;
    }
  }
  o[id] = S(best);
#if defined(WITH_INDEX)
  oi[2 * id] = best_at;
  oi[2 * id + 1] = 0u;
#endif
#elif defined(OP_PROD)
  precise T prod = T(1);
  for (uint j = first; j < last; ++j) prod *= x[at_of(base, j)];
  o[id] = prod;
#elif defined(INT32) || defined(INT64)
  T sum = T(0);
  for (uint j = first; j < last; ++j) sum += x[at_of(base, j)];
  o[id] = sum;
#else
#if defined(OP_SUMEXP)
  const T s = isinf(shift[i]) ? T(0) : shift[i];  // all -inf: -inf; any +inf: +inf
#elif defined(OP_SQDEV)
  const T mu = shift[i];
#endif
  precise T sum = T(0);
  precise T carry = T(0);
  for (uint j = first; j < last; ++j) {
#if defined(OP_SUMEXP)
    precise T y = EXP(x[at_of(base, j)] - s) - carry;
#elif defined(OP_SQDEV)
    precise T d = x[at_of(base, j)] - mu;
    precise T y = d * d - carry;
#else
    precise T y = x[at_of(base, j)] - carry;
#endif
    precise T t = sum + y;
    carry = isinf(t) ? T(0) : (t - sum) - y;  // past an infinity there is nothing to compensate
    sum = t;
  }
  o[id] = sum * T(p.scale);
#endif
}
