// im2col and col2im on NCHW tensors, one output element per invocation (so col2im's overlapping
// windows are gathered per output element, in the CPU's (i, j) order, with no atomics).
// -DIM2COL: x (N, C, H, W) strided -> cols (N, C*kh*kw, OH*OW) contiguous.
// -DCOL2IM: cols (N, C*kh*kw, OH*OW) strided -> x (N, C, H, W) contiguous, overlaps summed.
// -DF64: float64. -DI32, -DI64: int32, int64 (col2im's sums wrap around, as the CPU's).
#version 450
#if defined(I64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#if defined(F64)
#define T double
#elif defined(I64)
#define T int64_t
#elif defined(I32)
#define T int
#else
#define T float
#endif

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint total;
  int C, H, W, OH, OW, kh, kw;
  int sh, sw, ph, pw, dh, dw;
  int src_off, s0, s1, s2, s3;  // the strided input: offset, then strides of its dims
  uint unused_lo, unused_hi;    // (pool.comp's block, which shares the host's struct)
  int i_begin, i_end, j_begin, j_end;  // COL2IM: the taps of this pass
  uint flags;                          // COL2IM: RESUME
} p;

// lavapipe stops a shader once it has made 65535 loop iterations in all, so col2im walks big
// windows in several passes (in (i, j) order), each adding onto the last one's output.
const uint RESUME = 1u;

layout(std430, binding = 0) buffer Out { T o[]; };
layout(std430, binding = 1) readonly buffer In { T x[]; };

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

void main() {
  const uint e = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  if (e >= p.total) return;
  const int kk = p.kh * p.kw;
#if defined(IM2COL)
  const int L = p.OH * p.OW;
  const int l = int(e % uint(L));
  const int r = int((e / uint(L)) % uint(p.C * kk));
  const int n = int(e / uint(L * p.C * kk));
  const int ch = r / kk, i = (r % kk) / p.kw, j = r % p.kw;
  const int ih = (l / p.OW) * p.sh - p.ph + i * p.dh;
  const int iw = (l % p.OW) * p.sw - p.pw + j * p.dw;
  const bool inside = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
  o[e] = inside ? x[p.src_off + n * p.s0 + ch * p.s1 + ih * p.s2 + iw * p.s3] : T(0);
#else
  const int w = int(e % uint(p.W));
  const int h = int((e / uint(p.W)) % uint(p.H));
  const int q = int(e / uint(p.W * p.H));
  const int n = q / p.C, ch = q % p.C;
  // Tap i reaches h from output row oh = (h + ph - i * dh) / sh when that is a whole number in
  // [0, OH): i from the taps whose h + ph - i * dh lies in [0, (OH - 1) * sh].
  const int ilo = max(p.i_begin, max(0, floor_div(h + p.ph - (p.OH - 1) * p.sh + p.dh - 1, p.dh)));
  const int ihi = min(p.i_end, min(p.kh, floor_div(h + p.ph, p.dh) + 1));
  const int jlo = max(p.j_begin, max(0, floor_div(w + p.pw - (p.OW - 1) * p.sw + p.dw - 1, p.dw)));
  const int jhi = min(p.j_end, min(p.kw, floor_div(w + p.pw, p.dw) + 1));
  T acc = (p.flags & RESUME) != 0u ? o[e] : T(0);
  const int base = p.src_off + n * p.s0 + ch * kk * p.s1;
  for (int i = ilo; i < ihi; ++i) {
    const int th = h + p.ph - i * p.dh;
    if (th % p.sh != 0) continue;
    const int row = base + i * p.kw * p.s1 + (th / p.sh) * p.OW * p.s2;
    for (int j = jlo; j < jhi; ++j) {
      const int tw = w + p.pw - j * p.dw;
      if (tw % p.sw == 0) acc += x[row + j * p.s1 + (tw / p.sw) * p.s2];
    }
  }
  o[e] = acc;
#endif
}
