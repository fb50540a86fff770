// searchsorted: one invocation per value, a binary search in its row of boundaries (at most
// log2(M) steps). boundaries are contiguous (rows, M), values contiguous; value i searches row
// i / n_per_row. The result counts the boundaries < v (RIGHT: <= v), written as "not >=" ("not
// >") so that a NaN value counts every boundary, as the CPU's; OUT32: int32, else int64 (lo, hi)
// words.
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

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint n;
  uint M;
  uint n_per_row;
  uint right;
  uint out_int32;
  int b_offset;
  int v_offset;
} p;

layout(std430, binding = 0) writeonly buffer Out { uint o[]; };
layout(std430, binding = 1) readonly buffer B { T b[]; };
layout(std430, binding = 2) readonly buffer V { T v[]; };

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  const T x = v[p.v_offset + int(i)];
  const int base = p.b_offset + int((i / p.n_per_row) * p.M);
  uint lo = 0u, hi = p.M;
  while (lo < hi) {
    const uint mid = (lo + hi) / 2u;
    const T bm = b[base + int(mid)];
    const bool goes_before = p.right != 0u ? !(bm > x) : !(bm >= x);
    if (goes_before) {
      lo = mid + 1u;
    } else {
      hi = mid;
    }
  }
  if (p.out_int32 != 0u) {
    o[i] = lo;
  } else {
    o[2u * i] = lo;
    o[2u * i + 1u] = 0u;
  }
}
