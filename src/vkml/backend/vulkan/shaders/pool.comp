// 2-D pooling on NCHW tensors, one output element per invocation, window taps in (i, j) order as
// on the CPU (over one or more passes); taps in the padding are skipped.
// -DMAX: values and int64 argmax indices (flat ih * W + iw in the plane, written as two 32-bit
//   words): the first maximum wins, a NaN always wins (so the last NaN), -inf and -1 when no tap
//   lies inside the plane.
// -DAVG: window sums / (kh * kw) (the padding counts as zeros).
// -DF64: float64.
#version 450
#if defined(F64)
#define T double
#else
#define T float
#endif

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint total;
  int C, H, W, OH, OW, kh, kw;
  int sh, sw, ph, pw, dh, dw;
  int x_off, sn, sc, sy, sx;
  uint inv_lo, inv_hi;  // AVG: 1 / (kh * kw) as the host rounds it (a float, or a double's words)
  int i_begin, i_end, j_begin, j_end;  // the taps of this pass
  uint flags;                          // RESUME, FINAL
} p;

// lavapipe stops a shader once it has made 65535 loop iterations in all, so a big window is
// walked in several passes (in (i, j) order), each resuming from the last one's output.
const uint RESUME = 1u;  // start from what the pass before left in the outputs
const uint FINAL = 2u;   // AVG: the last pass (scale the sum)

layout(std430, binding = 0) buffer Out { T o[]; };
#if defined(MAX)
layout(std430, binding = 1) buffer Idx { uint idx[]; };
layout(std430, binding = 2) readonly buffer In { T x[]; };
#else
layout(std430, binding = 1) readonly buffer In { T x[]; };
#endif

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

void main() {
  const uint e = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  if (e >= p.total) return;
  const int ow = int(e % uint(p.OW));
  const int oh = int((e / uint(p.OW)) % uint(p.OH));
  const int q = int(e / uint(p.OW * p.OH));
  const int base = p.x_off + (q / p.C) * p.sn + (q % p.C) * p.sc;
  const int h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;  // the window's first tap
  // This pass's taps inside the plane: h0 + i * dh in [0, H), w0 + j * dw in [0, W).
  const int ilo = max(p.i_begin, max(0, floor_div(-h0 + p.dh - 1, p.dh)));
  const int ihi = min(p.i_end, min(p.kh, floor_div(p.H - 1 - h0, p.dh) + 1));
  const int jlo = max(p.j_begin, max(0, floor_div(-w0 + p.dw - 1, p.dw)));
  const int jhi = min(p.j_end, min(p.kw, floor_div(p.W - 1 - w0, p.dw) + 1));
  const bool resume = (p.flags & RESUME) != 0u;
#if defined(MAX)
#if defined(F64)
  T best = resume ? o[e] : packDouble2x32(uvec2(0u, 0xfff00000u));  // -inf
#else
  T best = resume ? o[e] : uintBitsToFloat(0xff800000u);  // -inf
#endif
  int at = resume ? int(idx[2u * e]) : -1;
#else
  T acc = resume ? o[e] : T(0);
#endif
  for (int i = ilo; i < ihi; ++i) {
    const int ih = h0 + i * p.dh;
    for (int j = jlo; j < jhi; ++j) {
      const int iw = w0 + j * p.dw;
      const T v = x[base + ih * p.sy + iw * p.sx];
#if defined(MAX)
      if (at < 0 || v > best || isnan(v)) {
        best = v;
        at = ih * p.W + iw;
      }
#else
      acc += v;
#endif
    }
  }
#if defined(MAX)
  o[e] = best;
  idx[2u * e] = uint(at);
  idx[2u * e + 1u] = at < 0 ? 0xffffffffu : 0u;
#else
  if ((p.flags & FINAL) != 0u) {
#if defined(F64)
    acc *= packDouble2x32(uvec2(p.inv_lo, p.inv_hi));
#else
    acc *= uintBitsToFloat(p.inv_lo);
#endif
  }
  o[e] = acc;
#endif
}
