// 2-D pooling on NCHW tensors, one output element per invocation, window taps in (i, j) order as
// on the CPU; taps in the padding are skipped.
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
} p;

layout(std430, binding = 0) buffer Out { T o[]; };
#if defined(MAX)
layout(std430, binding = 1) buffer Idx { uint idx[]; };
layout(std430, binding = 2) readonly buffer In { T x[]; };
#else
layout(std430, binding = 1) readonly buffer In { T x[]; };
#endif

// Loops over window taps run in blocks of this many, so that no loop nears the 65535 iterations
// after which lavapipe stops it, whatever the kernel size.
const int BLOCK = 4096;

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
  // The taps inside the plane: h0 + i * dh in [0, H), w0 + j * dw in [0, W).
  const int ilo = max(0, floor_div(-h0 + p.dh - 1, p.dh));
  const int ihi = min(p.kh, floor_div(p.H - 1 - h0, p.dh) + 1);
  const int jlo = max(0, floor_div(-w0 + p.dw - 1, p.dw));
  const int jhi = min(p.kw, floor_div(p.W - 1 - w0, p.dw) + 1);
#if defined(MAX)
#if defined(F64)
  T best = packDouble2x32(uvec2(0u, 0xfff00000u));  // -inf
#else
  T best = uintBitsToFloat(0xff800000u);  // -inf
#endif
  int at = -1;
#else
  T acc = T(0);
#endif
  for (int i0 = ilo; i0 < ihi; i0 += BLOCK) {
    for (int i = i0; i < min(ihi, i0 + BLOCK); ++i) {
      const int ih = h0 + i * p.dh;
      for (int j0 = jlo; j0 < jhi; j0 += BLOCK) {
        for (int j = j0; j < min(jhi, j0 + BLOCK); ++j) {
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
    }
  }
#if defined(MAX)
  o[e] = best;
  idx[2u * e] = uint(at);
  idx[2u * e + 1u] = at < 0 ? 0xffffffffu : 0u;
#elif defined(F64)
  o[e] = acc * packDouble2x32(uvec2(p.inv_lo, p.inv_hi));
#else
  o[e] = acc * uintBitsToFloat(p.inv_lo);
#endif
}
