// The sort family: a stable merge sort of every row along a dim, one pass per doubling of the
// sorted runs, one invocation per element per pass. An element's place in the merged run is its
// place in its own run plus the number of elements of the partner run that go before it, found
// by a binary search (at most log2(K) steps: far under lavapipe's 65535 loop iterations). Equal
// elements of the left run go before those of the right one, so the sort is stable, and each
// element's place is computed alone: the result does not depend on scheduling.
//   FIRST   runs of 1: reads x, contiguous (outer, K, inner) at x_offset, row r = (r / inner,
//           :, r % inner); the index of an element is its position
//   (none)  merges runs of `width` from (keys_in, idx_in), rows of K side by side
//   FINISH  writes the sorted rows' first `keep` (all K but for topk) to the (outer, keep, inner)
//           layout: values and the indices as int64 (lo, hi) words
// Order: a before b when a < b (a > b descending); NaN is larger than everything, as the CPU's.
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
  uint width;  // the length of the runs being merged
  uint descending;
  int x_offset;
  uint keep;  // FINISH: each row's first `keep` come out, rows of `keep` (topk)
} p;

layout(std430, binding = 0) writeonly buffer KeysOut { T keys_out[]; };
#if defined(FINISH)
layout(std430, binding = 1) writeonly buffer IdxOut { uint idx_out[]; };  // int64 words
#else
layout(std430, binding = 1) writeonly buffer IdxOut { int idx_out[]; };
#endif
layout(std430, binding = 2) readonly buffer KeysIn { T keys_in[]; };
layout(std430, binding = 3) readonly buffer IdxIn { int idx_in[]; };

bool before(T a, T b) {
  if (p.descending != 0u) return a > b || (IS_NAN(a) && !IS_NAN(b));
  return a < b || (IS_NAN(b) && !IS_NAN(a));
}

uint row_base(uint row) { return (row / p.inner) * p.K * p.inner + row % p.inner; }

// Element j of row `row` as the pass reads it.
T key_at(uint row, uint j) {
#if defined(FIRST)
  return keys_in[p.x_offset + int(row_base(row) + j * p.inner)];
#else
  return keys_in[row * p.K + j];
#endif
}

void main() {
  const uint e = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                 gl_LocalInvocationID.x;
  if (e >= p.rows * p.K) return;
  const uint row = e / p.K, pos = e % p.K;
#if defined(FINISH)
  if (pos >= p.keep) return;
  const uint at = (row / p.inner) * p.keep * p.inner + row % p.inner + pos * p.inner;
  keys_out[at] = keys_in[e];
  idx_out[2u * at] = uint(idx_in[e]);
  idx_out[2u * at + 1u] = 0u;
#else
  const T me = key_at(row, pos);
#if defined(FIRST)
  const int my_index = int(pos);
#else
  const int my_index = idx_in[e];
#endif
  const uint start = pos - pos % p.width;
  const bool left = (pos / p.width) % 2u == 0u;
  const uint other = left ? start + p.width : start - p.width;
  const uint other_len = left ? (other < p.K ? min(p.width, p.K - other) : 0u) : p.width;
  // The number of the partner's elements that go before me: a prefix of it, as it is sorted.
  // Left: those strictly before me; right: those not after me (ties: the left run first).
  uint lo = 0u, hi = other_len;
  while (lo < hi) {
    const uint mid = (lo + hi) / 2u;
    const T o = key_at(row, other + mid);
    const bool goes_before = left ? before(o, me) : !before(me, o);
    if (goes_before) {
      lo = mid + 1u;
    } else {
      hi = mid;
    }
  }
  const uint dest = row * p.K + min(start, other) + (pos - start) + lo;
  keys_out[dest] = me;
  idx_out[dest] = my_index;
#endif
}
