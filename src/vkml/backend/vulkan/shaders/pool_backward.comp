// max_pool2d_backward: zeros of the input's shape (N, C, H, W) with g added at the indices of
// each plane. Overlapping windows can send several g to one input, so each plane is summed by one
// invocation walking its outputs in order (the CPU's order, no atomics), a bounded run of them
// per dispatch (lavapipe stops a loop after 65535 iterations); MODE 0 zeros the output first.
// Indices outside the plane (-1: a window wholly in the padding) add nothing.
// -DIDX32: int32 indices (else int64, read as two 32-bit words). -DF64: float64.
#version 450
#if defined(F64)
#define T double
#else
#define T float
#endif

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint mode;   // 0: zero the output, one element per invocation; 1: add, one plane per invocation
  uint total;  // elements (mode 0) or planes (mode 1)
  int C, OW, HW;
  int o_begin, o_end;  // the outputs (oh * OW + ow) this dispatch walks in each plane
  int g_off, g0, g1, g2, g3;
  int i_off, i0, i1, i2, i3;
} p;

layout(std430, binding = 0) buffer Out { T o[]; };
layout(std430, binding = 1) readonly buffer G { T g[]; };
layout(std430, binding = 2) readonly buffer Idx { uint idx[]; };

int index_at(int at) {
#if defined(IDX32)
  return int(idx[at]);
#else
  const uint lo = idx[2 * at], hi = idx[2 * at + 1];
  // an int64 beyond 32 bits is out of range anyway: -1
  return (hi == 0u && lo < 0x80000000u) ? int(lo) : -1;
#endif
}

void main() {
  const uint e = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                 gl_LocalInvocationID.x;
  if (e >= p.total) return;
  if (p.mode == 0u) {
    o[e] = T(0);
    return;
  }
  const int n = int(e) / p.C, ch = int(e) % p.C;
  const int gb = p.g_off + n * p.g0 + ch * p.g1, ib = p.i_off + n * p.i0 + ch * p.i1;
  const int ob = int(e) * p.HW;
  for (int l = p.o_begin; l < p.o_end; ++l) {
    const int oh = l / p.OW, ow = l % p.OW;
    const int k = index_at(ib + oh * p.i2 + ow * p.i3);
    if (k >= 0 && k < p.HW) o[ob + k] += g[gb + oh * p.g2 + ow * p.g3];
  }
}
