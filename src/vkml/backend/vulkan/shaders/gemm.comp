// C = A @ B (+ bias) for strided operands, batched over gl_WorkGroupID.z: a 64 x 64 tile of C per
// workgroup, 8 x 8 outputs per invocation kept in registers, TK-deep slices of A and B staged in
// shared memory. (On lavapipe 8 x 8 invocations of 8 x 8 outputs ran 2x faster than 16 x 16 of
// 4 x 4: fewer shared-memory loads per product and fewer invocations to switch at barriers.)
// Every output sums its products in k order, one pass at a time over [k_begin, k_end): the host
// keeps that range short (lavapipe stops a loop after 65535 iterations) and a later pass adds
// onto the C of the one before, so sums stay in a fixed order.
//
// -DCONV: B is the im2col matrix of an NCHW input, read on the fly (conv2d without the column
// matrix in memory); batch (b0, b1) is (image, group).
// -DF64: float64 throughout. -DI32, -DI64: int32, int64 (matmul only): products and sums wrap
// around, as the CPU's (which computes them unsigned), so any order of the sums gives the same.
#version 450
#extension GL_EXT_control_flow_attributes : require
#if defined(I64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#define WG 8  // invocations per workgroup along x and y
#if defined(F64)
#define T double
#elif defined(I64)
#define T int64_t
#elif defined(I32)
#define T int
#else
#define T float
#endif
#if defined(I32) || defined(I64)
#define MAC(a, b, c) ((c) + (a) * (b))
#else
#define MAC(a, b, c) fma(a, b, c)
#endif

layout(local_size_x = WG, local_size_y = WG) in;

const int TILE = 64;  // rows and columns of C per workgroup
const int TK = 16;    // depth of one shared slice (32 gave no more on lavapipe)
const int PER = TILE / WG;              // rows (and columns) per invocation
const int LOADS = TK * TILE / (WG * WG);  // elements of each slice one invocation stages

#if defined(CONV)
layout(push_constant) uniform Params {
  uint M, N, K, k_begin, k_end, flags, nb1, m_base, n_base, b_base;
  int a_off, bias_off, bias_s;
  int x_off, x_sn, x_sc, x_sh, x_sw;
  int H, W, OW, kw, kk, cg;
  int sh, sw, ph, pw, dh, dw;
} p;
#else
layout(push_constant) uniform Params {
  uint M, N, K, k_begin, k_end, flags, nb1, m_base, n_base, b_base;
  int a_off, a_rs, a_cs, a_s0, a_s1;
  int b_off, b_rs, b_cs, b_s0, b_s1;
  int c_off, c_rs, c_s0, c_s1;
  int bias_off, bias_s, bias_sb;
} p;
#endif

const uint BIAS_COL = 1u;    // bias[col] added to every row
const uint BIAS_ROW = 2u;    // bias[row] added to every column
const uint ACCUMULATE = 4u;  // a later pass over k: add onto C
const uint BIAS_MATRIX = 8u;  // bias[row, col] (a 2-D product; bias_sb is its row stride)

layout(std430, binding = 0) buffer Out { T c[]; };
layout(std430, binding = 1) readonly buffer InA { T a[]; };
layout(std430, binding = 2) readonly buffer InB { T b[]; };
layout(std430, binding = 3) readonly buffer InBias { T bias[]; };

shared T As[TK][TILE];
shared T Bs[TK][TILE];

// Element (row, k) of A and (k, col) of B for batch (b0, b1); callers check the bounds.
#if defined(CONV)
T a_at(uint b0, uint b1, uint row, uint k) {
  return a[p.a_off + int((b1 * p.M + row) * p.K + k)];
}
T b_at(uint b0, uint b1, uint k, uint col) {
  const int ch = int(k) / p.kk, r = int(k) % p.kk;
  const int oh = int(col) / p.OW, ow = int(col) % p.OW;
  const int ih = oh * p.sh - p.ph + (r / p.kw) * p.dh;
  const int iw = ow * p.sw - p.pw + (r % p.kw) * p.dw;
  if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) return T(0);
  return b[p.x_off + int(b0) * p.x_sn + (int(b1) * p.cg + ch) * p.x_sc + ih * p.x_sh +
           iw * p.x_sw];
}
int c_index(uint b0, uint b1, uint row, uint col) {
  return int(((b0 * p.nb1 + b1) * p.M + row) * p.N + col);
}
int bias_index(uint b1, uint row, uint col) {
  return p.bias_off + int(b1 * p.M + row) * p.bias_s;
}
#else
T a_at(uint b0, uint b1, uint row, uint k) {
  return a[p.a_off + int(b0) * p.a_s0 + int(b1) * p.a_s1 + int(row) * p.a_rs + int(k) * p.a_cs];
}
T b_at(uint b0, uint b1, uint k, uint col) {
  return b[p.b_off + int(b0) * p.b_s0 + int(b1) * p.b_s1 + int(k) * p.b_rs + int(col) * p.b_cs];
}
int c_index(uint b0, uint b1, uint row, uint col) {
  return p.c_off + int(b0) * p.c_s0 + int(b1) * p.c_s1 + int(row) * p.c_rs + int(col);
}
int bias_index(uint b1, uint row, uint col) {
  if ((p.flags & BIAS_MATRIX) != 0u) return p.bias_off + int(row) * p.bias_sb + int(col) * p.bias_s;
  return p.bias_off + int(b1) * p.bias_sb + int((p.flags & BIAS_ROW) != 0u ? row : col) * p.bias_s;
}
#endif

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint tid = ty * WG + tx;
  const uint row0 = p.m_base + gl_WorkGroupID.y * TILE, col0 = p.n_base + gl_WorkGroupID.x * TILE;
  const uint batch = p.b_base + gl_WorkGroupID.z;
  const uint b0 = batch / p.nb1, b1 = batch % p.nb1;
  const bool inside = row0 + ty < p.M && col0 + tx < p.N;

  T acc[PER][PER];
  [[unroll]] for (int i = 0; i < PER; ++i)
    [[unroll]] for (int j = 0; j < PER; ++j) acc[i][j] = T(0);

  for (uint k0 = p.k_begin; k0 < p.k_end; k0 += TK) {
    // TK x TILE elements of each slice, LOADS per invocation: A with k fastest, B with columns
    // fastest. lavapipe counts the iterations of all loops together against its limit of 65535:
    // per slice 1 + LOADS + TK of them (NIR unrolls the loops over PER), which bounds the K of one
    // pass (linalg.cpp). Unrolling these two as well made lavapipe's compile take 30 s.
    for (int r = 0; r < LOADS; ++r) {
      const uint e = tid + uint(r * WG * WG);
      const uint ar = e / TK, ak = e % TK;
      const uint grow = row0 + ar, gk = k0 + ak;
      As[ak][ar] = (grow < p.M && gk < p.k_end) ? a_at(b0, b1, grow, gk) : T(0);
      const uint bk = e / TILE, bc = e % TILE;
      const uint gcol = col0 + bc, gkb = k0 + bk;
      Bs[bk][bc] = (gcol < p.N && gkb < p.k_end) ? b_at(b0, b1, gkb, gcol) : T(0);
    }
    barrier();
    // Invocations of an edge tile with no output inside C skip the products (the barriers stay
    // uniform: this sits between them).
    if (inside) {
      for (int kk = 0; kk < TK; ++kk) {
        T av[PER], bv[PER];
        [[unroll]] for (int i = 0; i < PER; ++i) av[i] = As[kk][ty + WG * i];
        [[unroll]] for (int j = 0; j < PER; ++j) bv[j] = Bs[kk][tx + WG * j];
        [[unroll]] for (int i = 0; i < PER; ++i)
          [[unroll]] for (int j = 0; j < PER; ++j) acc[i][j] = MAC(av[i], bv[j], acc[i][j]);
      }
    }
    barrier();
  }

  [[unroll]] for (int i = 0; i < PER; ++i) {
    const uint row = row0 + ty + WG * i;
    if (row >= p.M) continue;
    [[unroll]] for (int j = 0; j < PER; ++j) {
      const uint col = col0 + tx + WG * j;
      if (col >= p.N) continue;
      const int ci = c_index(b0, b1, row, col);
      T v = acc[i][j];
      if ((p.flags & ACCUMULATE) != 0u)
        v += c[ci];
      else if ((p.flags & (BIAS_ROW | BIAS_COL | BIAS_MATRIX)) != 0u)
        v += bias[bias_index(b1, row, col)];
      c[ci] = v;
    }
  }
}
