// scatter_add's inversion of its index on the device (index.cpp, invert_on_device), in three
// passes around a stable sort, so that the host never reads the index back:
// KEYS (mode 0): for each index element k, in row-major order of the index's shape, the bucket
//   key = line * size + v (line: k's position in the other dims, row-major; v its value). A value
//   outside [0, size) is clamped and raises the error word (the host's deferred IndexError).
// (the host sorts the keys stably: the sort family's merge sort, whose indices are the k's)
// OFFSETS (mode 1): offsets[b] = the number of sorted keys below b, b in [0, buckets]: one
//   binary search each.
// ORDER (mode 2): order[s] = the position along dim of the s-th sorted element, (k / inner) % len.
// Every buffer is bound as words: int64 values (the index with idx64, the sort's indices) as
// (low, high) pairs.
#version 450

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint n;      // KEYS, ORDER: index elements; OFFSETS: buckets + 1
  uint mode;
  uint ndim;   // the index's walk (KEYS)
  uint size;   // out.shape[dim]: valid values are [0, size)
  uint len;    // index.shape[dim]
  uint inner;  // index elements after dim, per step along it
  uint slot;   // the deferred error of this launch
  uint idx64;  // the index is int64
  int i_offset;
  uint keys;   // OFFSETS: how many sorted keys
  uint shape[8];
  int i_stride[8];
} p;

layout(std430, binding = 0) writeonly buffer Out { uint o[]; };
layout(std430, binding = 1) buffer Err { uint word[]; };
layout(std430, binding = 2) readonly buffer A { uint a[]; };

uint at(uint i) { return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + i; }

void keys(uint k) {
  int ii = p.i_offset;
  uint r = k;
  for (int d = int(p.ndim) - 1; d >= 0; --d) {  // at most 8 iterations
    ii += int(r % p.shape[d]) * p.i_stride[d];
    r /= p.shape[d];
  }
  uint lo, hi;
  if (p.idx64 != 0u) {
    lo = a[2 * ii];
    hi = a[2 * ii + 1];
  } else {
    lo = a[ii];
    hi = int(lo) < 0 ? 0xffffffffu : 0u;
  }
  const bool fits = int(hi) == (int(lo) >> 31) && int(lo) >= 0 && lo < p.size;
  uint v = lo;
  if (!fits) {
    v = 0u;
    if (atomicCompSwap(word[0], 0u, p.slot) == 0u) {
      word[1] = lo;
      word[2] = hi;
    }
  }
  const uint line = (k / (p.len * p.inner)) * p.inner + k % p.inner;
  o[k] = line * p.size + v;
}

void offsets(uint b) {
  uint first = 0u, count = p.keys;  // lower bound of b among a[0, keys)
  while (count > 0u) {               // at most 32 iterations
    const uint half_count = count / 2u;
    if (a[first + half_count] < b) {
      first += half_count + 1u;
      count -= half_count + 1u;
    } else {
      count = half_count;
    }
  }
  o[b] = first;
}

void main() {
  const uint i = at(gl_LocalInvocationID.x);
  if (i >= p.n) return;
  if (p.mode == 0u) {
    keys(i);
  } else if (p.mode == 1u) {
    offsets(i);
  } else {
    o[i] = (a[2u * i] / p.inner) % p.len;  // the sort's index k (< 2^31: its low word)
  }
}
