// scatter_add without atomics: one invocation per element of out (already a contiguous copy of
// base) adds, in index order, the src elements whose index points at it, so every sum runs in the
// CPU's order (base, then src along dim by ascending position) and matches it bit for bit.
// The index is inverted first, on the device (index.cpp, Buckets): bucket (line, v) lists,
// ascending, the positions j along dim whose index value is v, for each line (the position in
// index's other dims; one line for all when index is broadcast along them): `offsets` (lines * size + 1 entries)
// and `order` (the j's). A dispatch adds at most CHUNK entries of each bucket, starting at
// `first`: lavapipe stops a shader loop after 65535 iterations, so the host runs as many passes as
// the largest bucket may need (index.shape[dim] / CHUNK, rounded up). TYPE: F32, F64 (shaderFloat64), I32, or I64 (two's complement on
// uint pairs, no shaderInt64).
#version 450
#if defined(F64)
#define ELEM double
#define ADD(a, b) ((a) + (b))
#elif defined(F32)
#define ELEM float
#define ADD(a, b) ((a) + (b))
#elif defined(I32)
#define ELEM int
#define ADD(a, b) ((a) + (b))
#else
#define ELEM uvec2
uvec2 add64(uvec2 a, uvec2 b) {
  uint carry;
  const uint lo = uaddCarry(a.x, b.x, carry);
  return uvec2(lo, a.y + b.y + carry);
}
#define ADD(a, b) add64(a, b)
#endif

const uint CHUNK = 4096u;

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint n;
  uint ndim;
  uint dim;
  uint size;        // out.shape[dim]
  int src_offset;
  uint first;       // this pass's first entry of each bucket
  uint one_line;    // 1: index is broadcast along the other dims (one line for all)
  uint shape[8];    // out's
  uint extent[8];   // index's: positions beyond it in another dim get nothing
  int src_stride[8];
} p;

layout(std430, binding = 0) buffer Out { ELEM o[]; };
layout(std430, binding = 1) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 2) readonly buffer Offsets { uint offsets[]; };
layout(std430, binding = 3) readonly buffer Order { uint order[]; };

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  int is = p.src_offset;
  uint r = i, line = 0u, line_size = 1u, v = 0u;
  for (int d = int(p.ndim) - 1; d >= 0; --d) {  // at most 8 iterations
    const uint c = r % p.shape[d];
    r /= p.shape[d];
    if (uint(d) == p.dim) {
      v = c;
      continue;
    }
    if (c >= p.extent[d]) return;  // no index position reaches this element
    is += int(c) * p.src_stride[d];
    line += c * line_size;
    line_size *= p.extent[d];
  }
  if (p.one_line != 0u) line = 0u;
  const uint bucket = line * p.size + v;
  const uint end = offsets[bucket + 1u];
  const uint begin = offsets[bucket] + p.first;
  if (begin >= end) return;
  const uint stop = min(end, begin + CHUNK);
  ELEM acc = o[i];
  const int step = p.src_stride[p.dim];
  for (uint t = begin; t < stop; ++t) acc = ADD(acc, src[is + int(order[t]) * step]);
  o[i] = acc;
}
