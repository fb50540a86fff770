// The solver family (#15 linalg), one workgroup of 256 invocations cooperating per matrix, with
// barriers between steps (lavapipe stops an invocation after 65535 loop iterations in all its
// loops, so one invocation per matrix would cap n near 40):
//   LU    P A = L U in place (a: the matrix copied in): per column k, the pivot is the first
//         largest |a[i][k]| at or below row k (a fixed tree over the invocations' candidates, ties
//         to the lower row, so results do not depend on scheduling), rows k and pivot swapped
//         whole, then when the pivot is nonzero the column below is divided by it and the trailing
//         block updated. The CPU's order of operations (backend/cpu/solve.cpp). About n^3 / 768
//         + 12 n iterations per invocation: the host keeps n <= 256.
//   CHOL  A = L L^T in place (a: the matrix copied in; its lower triangle read): per column k,
//         l_kk = sqrt(a_kk), the column below divided by it, then the trailing lower triangle
//         updated, a_ij -= l_ik l_jk (right-looking, the CPU's order); a non-positive a_kk gives
//         a NaN or zero l_kk that the host finds (the LAPACK info). The strict upper triangle is
//         zeroed last. About n^3 / 768 + 4 n iterations per invocation: the host keeps n <= 256.
//   TRSM  X = A^-1 B in place (x: B copied in), A triangular, for a block of up to 16 columns of
//         B per workgroup: row i divided by a[i][i] (unless unitriangular), then subtracted from
//         the rows still to solve, in the CPU's order. About n^2 / 32 + 2 n iterations.
//   EIGH  A = V diag(L) V^T of a symmetric A (its lower triangle read): cyclic Jacobi rotations in
//         round-robin order, each round's disjoint rotations computed (one invocation per pair),
//         then applied to rows, then to columns and V, until a sweep rotates nothing (at most 30);
//         the host keeps n <= 64.
//   SVD   A = U diag(S) V^T of a tall A (m >= n): one-sided Jacobi rotations of its columns, the
//         same schedule (at most 20 sweeps); the host keeps m <= 64, n <= 32.
//   QR    Householder QR (LAPACK geqr2's order and signs) of a copy of A, each column's norm by
//         two fixed trees (the largest |a|, then the scaled sum of squares), then Q formed as
//         org2r does into the packed result, or (p.flags 1, geqrf) the reflectors and tau written
//         out. About 2 m k + m n k / 128 + 20 k iterations per invocation: the host keeps n <= 128
//         and m k <= 16384.
// FLOAT64: double (shaderFloat64). perm (int64 on the host) is written as pairs of 32-bit words.
#version 450
#if defined(FLOAT64)
#define T double
#else
#define T float
#endif

layout(local_size_x = 256) in;
#define LANES 256u

layout(push_constant) uniform Params {
  uint n;
  uint k;           // TRSM: columns of B
  uint batch_base;  // the first matrix of this dispatch
  uint flags;       // TRSM: 1 upper, 2 unitriangular
  int a_offset;     // TRSM: A's first element
} p;

#if defined(LU) || defined(CHOL)
layout(std430, binding = 0) coherent buffer LUBuf { T a[]; };
#endif

#if defined(CHOL)
void sync() {
  memoryBarrierBuffer();
  barrier();
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint n = p.n;
  const uint base = (p.batch_base + gl_WorkGroupID.x) * n * n;
  for (uint k = 0u; k < n; ++k) {
    if (t == 0u) a[base + k * n + k] = sqrt(a[base + k * n + k]);
    sync();
    const T diag = a[base + k * n + k];
    for (uint i = k + 1u + t; i < n; i += LANES) a[base + i * n + k] = a[base + i * n + k] / diag;
    sync();
    const uint m = n - k - 1u;
    for (uint e = t; e < m * m; e += LANES) {
      const uint i = k + 1u + e / m, j = k + 1u + e % m;
      if (j <= i) a[base + i * n + j] -= a[base + i * n + k] * a[base + j * n + k];
    }
    sync();
  }
  for (uint e = t; e < n * n; e += LANES)
    if (e % n > e / n) a[base + e] = T(0);
}

#elif defined(LU)
layout(std430, binding = 1) coherent buffer PivBuf { int piv[]; };
layout(std430, binding = 2) coherent buffer PermBuf { uint perm[]; };

shared T best_v[LANES];
shared uint best_i[LANES];

void sync() {
  memoryBarrierBuffer();
  memoryBarrierShared();
  barrier();
}

// The first largest |a[i][k]| for i >= k: each invocation's candidate, then a fixed tree.
uint pivot_row(uint base, uint n, uint k, uint t) {
  T bv = T(-1);
  uint bi = 0xffffffffu;
  for (uint i = k + t; i < n; i += LANES) {
    const T v = abs(a[base + i * n + k]);
    if (v > bv) {
      bv = v;
      bi = i;
    }
  }
  best_v[t] = bv;
  best_i[t] = bi;
  sync();
  for (uint w = LANES / 2u; w > 0u; w >>= 1u) {
    if (t < w) {
      const T v = best_v[t + w];
      const uint i = best_i[t + w];
      if (v > best_v[t] || (v == best_v[t] && i < best_i[t])) {
        best_v[t] = v;
        best_i[t] = i;
      }
    }
    sync();
  }
  // Every column has a candidate at row k (NaN aside): a NaN column keeps its diagonal.
  return best_i[0] == 0xffffffffu ? k : best_i[0];
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint n = p.n;
  const uint b = p.batch_base + gl_WorkGroupID.x;
  const uint base = b * n * n;
  for (uint i = t; i < n; i += LANES) {
    perm[2u * (b * n + i)] = i;
    perm[2u * (b * n + i) + 1u] = 0u;
  }
  sync();
  for (uint k = 0u; k < n; ++k) {
    const uint pr = pivot_row(base, n, k, t);
    const bool nonzero = best_v[0] != T(0);
    sync();  // best_* read by all before the next column writes them
    if (t == 0u) piv[b * n + k] = int(pr + 1u);
    if (pr != k) {
      for (uint j = t; j < n; j += LANES) {
        const T v = a[base + k * n + j];
        a[base + k * n + j] = a[base + pr * n + j];
        a[base + pr * n + j] = v;
      }
      if (t == 0u) {
        const uint v = perm[2u * (b * n + k)];
        perm[2u * (b * n + k)] = perm[2u * (b * n + pr)];
        perm[2u * (b * n + pr)] = v;
      }
    }
    sync();
    if (nonzero) {
      const T pivot = a[base + k * n + k];
      for (uint i = k + 1u + t; i < n; i += LANES) a[base + i * n + k] = a[base + i * n + k] / pivot;
      sync();
      const uint m = n - k - 1u;
      for (uint e = t; e < m * m; e += LANES) {
        const uint i = k + 1u + e / m, j = k + 1u + e % m;
        a[base + i * n + j] -= a[base + i * n + k] * a[base + k * n + j];
      }
      sync();
    }
  }
}

#elif defined(EIGH) || defined(SVD)
// EIGH: o the packed result (n + 1 rows of n per matrix); w per matrix A (copied in, its lower
// triangle read) then V, 2 n rows of n, worked in place.
// SVD: o the packed result (m + n + 1 rows of n per matrix); w per matrix W (A copied in, m rows
// of n) then V (n rows), worked in place; p.k is m.
// backend/cpu/solve.cpp's eigh_one and svd_one, step by step.
layout(std430, binding = 0) coherent buffer OutBuf { T o[]; };
layout(std430, binding = 1) coherent buffer WorkBuf { T w[]; };

#define MAX_PAIRS 64u
shared T rot_c[MAX_PAIRS];
shared T rot_s[MAX_PAIRS];
shared bool rot_on[MAX_PAIRS];
shared uint rotated;

void sync() {
  memoryBarrierBuffer();
  memoryBarrierShared();
  barrier();
}

// backend/cpu/solve.cpp's round_pair and jacobi_rotation.
uvec2 round_pair(uint m, uint r, uint k) {
  const uint p = k == 0u ? m - 1u : (r + k) % (m - 1u), q = (r + (m - 1u) - k) % (m - 1u);
  return uvec2(min(p, q), max(p, q));
}

#if defined(FLOAT64)
const T kEps = 2.220446049250313e-16lf;
#else
const T kEps = 1.1920928955078125e-07;
#endif

bool jacobi_rotation(T dp, T dq, T off, out T c, out T s) {
  c = T(1);
  s = T(0);
  if (off == T(0) || abs(off) <= kEps * sqrt(abs(dp)) * sqrt(abs(dq))) return false;
  precise T theta = (dq - dp) / (T(2) * off);
  const T at = abs(theta);
  precise T root = at > T(1) ? at * sqrt(T(1) + T(1) / (theta * theta)) : sqrt(theta * theta + T(1));
  precise T t = (theta < T(0) ? T(-1) : T(1)) / (at + root);
  c = T(1) / sqrt(t * t + T(1));
  s = t * c;
  return true;
}

#if defined(EIGH)
void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint n = p.n, m = n + (n & 1u), pairs = m / 2u;
  const uint b = p.batch_base + gl_WorkGroupID.x;
  const uint ab = b * 2u * n * n, vb = ab + n * n, ob = b * (n + 1u) * n;
  for (uint e = t; e < n * n; e += LANES) {
    const uint i = e / n, j = e % n;
    if (j > i) w[ab + e] = w[ab + j * n + i];  // the lower triangle mirrored
    w[vb + e] = i == j ? T(1) : T(0);
  }
  for (uint sweep = 0u; sweep < 30u && n > 1u; ++sweep) {
    sync();  // every invocation has read `rotated` before it is reset
    if (t == 0u) rotated = 0u;
    sync();
    for (uint r = 0u; r + 1u < m; ++r) {
      for (uint k = t; k < pairs; k += LANES) {
        const uvec2 pq = round_pair(m, r, k);
        T c, s;
        const bool on = pq.y < n && jacobi_rotation(w[ab + pq.x * n + pq.x], w[ab + pq.y * n + pq.y],
                                                    w[ab + pq.x * n + pq.y], c, s);
        rot_c[k] = c;
        rot_s[k] = s;
        rot_on[k] = on;
        if (on) rotated = 1u;
      }
      sync();
      for (uint e = t; e < pairs * n; e += LANES) {  // rows p and q: J^T A
        const uint k = e / n, j = e % n;
        if (!rot_on[k]) continue;
        const uvec2 pq = round_pair(m, r, k);
        const T ap = w[ab + pq.x * n + j], aq = w[ab + pq.y * n + j];
        w[ab + pq.x * n + j] = rot_c[k] * ap - rot_s[k] * aq;
        w[ab + pq.y * n + j] = rot_s[k] * ap + rot_c[k] * aq;
      }
      sync();
      for (uint e = t; e < pairs * n; e += LANES) {  // columns p and q: (J^T A) J, and V J
        const uint k = e / n, i = e % n;
        if (!rot_on[k]) continue;
        const uvec2 pq = round_pair(m, r, k);
        const T ap = w[ab + i * n + pq.x], aq = w[ab + i * n + pq.y];
        w[ab + i * n + pq.x] = rot_c[k] * ap - rot_s[k] * aq;
        w[ab + i * n + pq.y] = rot_s[k] * ap + rot_c[k] * aq;
        const T vp = w[vb + i * n + pq.x], vq = w[vb + i * n + pq.y];
        w[vb + i * n + pq.x] = rot_c[k] * vp - rot_s[k] * vq;
        w[vb + i * n + pq.y] = rot_s[k] * vp + rot_c[k] * vq;
      }
      sync();
    }
    if (rotated == 0u) break;
  }
  sync();
  // The eigenvalues ascending (ties in index order, NaN last) with their vectors, each vector's
  // largest component (the first of equal ones) positive.
  for (uint i = t; i < n; i += LANES) {
    const T d = w[ab + i * n + i];
    uint rank = 0u;
    for (uint j = 0u; j < n; ++j) {
      const T e = w[ab + j * n + j];
      const bool before = e < d || (e == d && j < i) || (isnan(d) && !isnan(e)) ||
                          (isnan(d) && isnan(e) && j < i);
      rank += before ? 1u : 0u;
    }
    uint big = 0u;
    for (uint r = 1u; r < n; ++r)
      if (abs(w[vb + r * n + i]) > abs(w[vb + big * n + i])) big = r;
    const T sign = w[vb + big * n + i] < T(0) ? T(-1) : T(1);
    o[ob + rank] = d;
    for (uint r = 0u; r < n; ++r) o[ob + (r + 1u) * n + rank] = sign * w[vb + r * n + i];
  }
}

#else
shared T norms[MAX_PAIRS];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint n = p.n, rows = p.k, m = n + (n & 1u), pairs = m / 2u;
  const uint b = p.batch_base + gl_WorkGroupID.x;
  const uint wb = b * (rows + n) * n, vb = wb + rows * n, ob = b * (rows + n + 1u) * n;
  for (uint e = t; e < n * n; e += LANES) w[vb + e] = e / n == e % n ? T(1) : T(0);
  for (uint sweep = 0u; sweep < 20u && n > 1u; ++sweep) {
    sync();  // every invocation has read `rotated` before it is reset
    if (t == 0u) rotated = 0u;
    sync();
    for (uint r = 0u; r + 1u < m; ++r) {
      for (uint k = t; k < pairs; k += LANES) {
        const uvec2 pq = round_pair(m, r, k);
        T c = T(1), s = T(0);
        bool on = false;
        if (pq.y < n) {
          T alpha = T(0), beta = T(0), gamma = T(0);
          for (uint i = 0u; i < rows; ++i) {
            const T wp = w[wb + i * n + pq.x], wq = w[wb + i * n + pq.y];
            alpha += wp * wp;
            beta += wq * wq;
            gamma += wp * wq;
          }
          on = jacobi_rotation(alpha, beta, gamma, c, s);
        }
        rot_c[k] = c;
        rot_s[k] = s;
        rot_on[k] = on;
        if (on) rotated = 1u;
      }
      sync();
      for (uint e = t; e < pairs * (rows + n); e += LANES) {  // W's and V's columns p and q
        const uint k = e / (rows + n), i = e % (rows + n);
        if (!rot_on[k]) continue;
        const uvec2 pq = round_pair(m, r, k);
        const uint at = wb + i * n;  // row i of W, then of V (stored right after W)
        const T xp = w[at + pq.x], xq = w[at + pq.y];
        w[at + pq.x] = rot_c[k] * xp - rot_s[k] * xq;
        w[at + pq.y] = rot_s[k] * xp + rot_c[k] * xq;
      }
      sync();
    }
    if (rotated == 0u) break;
  }
  sync();
  for (uint j = t; j < n; j += LANES) {
    T ss = T(0);
    for (uint i = 0u; i < rows; ++i) ss += w[wb + i * n + j] * w[wb + i * n + j];
    norms[j] = sqrt(ss);
  }
  sync();
  // S descending (ties in index order, NaN first), U = W / S, each U column's largest component
  // positive (zero columns where S is 0).
  for (uint j = t; j < n; j += LANES) {
    const T s = norms[j];
    uint rank = 0u;
    for (uint l = 0u; l < n; ++l) {
      const T e = norms[l];
      const bool before = e > s || (e == s && l < j) || (isnan(e) && !isnan(s)) ||
                          (isnan(e) && isnan(s) && l < j);
      rank += before ? 1u : 0u;
    }
    uint big = 0u;
    for (uint i = 1u; i < rows; ++i)
      if (abs(w[wb + i * n + j]) > abs(w[wb + big * n + j])) big = i;
    const T sign = w[wb + big * n + j] < T(0) ? T(-1) : T(1);
    const T scale = s > T(0) ? sign / s : T(0);
    o[ob + rank] = s;
    for (uint i = 0u; i < rows; ++i) o[ob + (i + 1u) * n + rank] = scale * w[wb + i * n + j];
    for (uint i = 0u; i < n; ++i) o[ob + (rows + 1u + i) * n + rank] = sign * w[vb + i * n + j];
  }
}
#endif

#elif defined(QR)
// o: the packed result, (m + k) x n per matrix (Q zero beyond column k, then R) or, geqrf,
// (m + 1) x n (the reflectors, then tau); a: per matrix the m x n copy of A, factored in place.
// p.k is m. backend/cpu/solve.cpp's householder_one, form_q and qr_one, step by step.
layout(std430, binding = 0) coherent buffer OutBuf { T o[]; };
layout(std430, binding = 1) coherent buffer WorkBuf { T a[]; };

#define MAX_COLS 128u
shared T red[LANES];
shared T wv[MAX_COLS];
shared T tau[MAX_COLS];

void sync() {
  memoryBarrierBuffer();
  memoryBarrierShared();
  barrier();
}

// The largest |a[i][j]| for i in (j, m) (NaN if any is), the same for every invocation.
T column_scale(uint ab, uint m, uint n, uint j, uint t) {
  T s = T(0);
  for (uint i = j + 1u + t; i < m; i += LANES) {
    const T x = abs(a[ab + i * n + j]);
    if (x > s || isnan(x)) s = x;
  }
  red[t] = s;
  sync();
  for (uint w = LANES / 2u; w > 0u; w >>= 1u) {
    if (t < w && (red[t + w] > red[t] || isnan(red[t + w]))) red[t] = red[t + w];
    sync();
  }
  const T r = red[0];
  sync();
  return r;
}

// The sum of (a[i][j] / scale)^2 for i in (j, m): a fixed tree.
T scaled_squares(uint ab, uint m, uint n, uint j, uint t, T scale) {
  T s = T(0);
  for (uint i = j + 1u + t; i < m; i += LANES) {
    const T x = a[ab + i * n + j] / scale;
    s += x * x;
  }
  red[t] = s;
  sync();
  for (uint w = LANES / 2u; w > 0u; w >>= 1u) {
    if (t < w) red[t] += red[t + w];
    sync();
  }
  const T r = red[0];
  sync();
  return r;
}

// Column j's reflector (a uniform branch: scale is the same for every invocation), then H_j
// applied to the columns right of j.
void reflect_column(uint ab, uint m, uint n, uint j, uint t) {
  const T scale = column_scale(ab, m, n, j, t);
  if (scale == T(0)) {
    if (t == 0u) tau[j] = T(0);
    sync();
    return;
  }
  const T alpha = a[ab + j * n + j];
  const T xnorm = scale * sqrt(scaled_squares(ab, m, n, j, t, scale));
  const T big = max(abs(alpha), xnorm), small = min(abs(alpha), xnorm);
  const T norm = isnan(xnorm) ? xnorm : big * sqrt(T(1) + (small / big) * (small / big));
  const T beta = alpha < T(0) || (alpha == T(0) && T(1) / alpha < T(0)) ? norm : -norm;
  const T tj = (beta - alpha) / beta;
  const T inv = T(1) / (alpha - beta);
  for (uint i = j + 1u + t; i < m; i += LANES) a[ab + i * n + j] *= inv;
  sync();
  if (t == 0u) {
    a[ab + j * n + j] = beta;
    tau[j] = tj;
  }
  for (uint c = j + 1u + t; c < n; c += LANES) {
    T w = a[ab + j * n + c];
    for (uint i = j + 1u; i < m; ++i) w += a[ab + i * n + j] * a[ab + i * n + c];
    wv[c] = w;
  }
  sync();
  const uint cols = n - j - 1u;
  for (uint e = t; e < (m - j) * cols; e += LANES) {
    const uint i = j + e / cols, c = j + 1u + e % cols;
    if (i == j)
      a[ab + i * n + c] -= tj * wv[c];
    else
      a[ab + i * n + c] -= tj * wv[c] * a[ab + i * n + j];
  }
  sync();
}

// Q = H_0 ... H_k-1 [I_k; 0] into o's rows ob.. (row stride n), backwards from column k - 1.
void form_q(uint ab, uint ob, uint m, uint n, uint k, uint t) {
  for (uint e = t; e < m * n; e += LANES) o[ob + e] = T(0);
  sync();
  for (uint jj = k; jj > 0u; --jj) {
    const uint j = jj - 1u;
    for (uint c = j + 1u + t; c < k; c += LANES) {
      T w = o[ob + j * n + c];
      for (uint i = j + 1u; i < m; ++i) w += a[ab + i * n + j] * o[ob + i * n + c];
      wv[c] = w;
    }
    sync();
    const uint cols = k - j - 1u;
    for (uint e = t; e < (m - j) * cols; e += LANES) {
      const uint i = j + e / cols, c = j + 1u + e % cols;
      if (i == j)
        o[ob + i * n + c] -= tau[j] * wv[c];
      else
        o[ob + i * n + c] -= tau[j] * wv[c] * a[ab + i * n + j];
    }
    for (uint i = t; i < m; i += LANES)
      o[ob + i * n + j] = i < j ? T(0) : i == j ? T(1) - tau[j] : -tau[j] * a[ab + i * n + j];
    sync();
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint n = p.n, m = p.k, k = min(m, n);
  const bool geqrf = (p.flags & 1u) != 0u;
  const uint b = p.batch_base + gl_WorkGroupID.x;
  const uint ab = b * m * n, ob = b * (m + (geqrf ? 1u : k)) * n;
  for (uint j = 0u; j < k; ++j) reflect_column(ab, m, n, j, t);
  if (geqrf) {
    for (uint e = t; e < m * n; e += LANES) o[ob + e] = a[ab + e];
    for (uint c = t; c < n; c += LANES) o[ob + m * n + c] = c < k ? tau[c] : T(0);
    return;
  }
  form_q(ab, ob, m, n, k, t);
  for (uint e = t; e < k * n; e += LANES) {
    const uint i = e / n, c = e % n;
    o[ob + (m + i) * n + c] = c >= i ? a[ab + i * n + c] : T(0);
  }
}

#elif defined(TRSM)
layout(std430, binding = 0) coherent buffer XBuf { T x[]; };
layout(std430, binding = 1) readonly buffer ABuf { T a[]; };

#define COLS 16u

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint n = p.n, k = p.k;
  const uint b = p.batch_base + gl_WorkGroupID.y;
  const uint c0 = gl_WorkGroupID.x * COLS;
  const uint kc = min(COLS, k - c0);
  const bool upper = (p.flags & 1u) != 0u, unit = (p.flags & 2u) != 0u;
  const uint abase = uint(p.a_offset) + b * n * n, xbase = b * n * k + c0;
  for (uint s = 0u; s < n; ++s) {
    const uint i = upper ? n - 1u - s : s;
    if (!unit && t < kc) x[xbase + i * k + t] = x[xbase + i * k + t] / a[abase + i * n + i];
    memoryBarrierBuffer();
    barrier();
    const uint rem = n - 1u - s;
    for (uint e = t; e < rem * kc; e += LANES) {
      const uint q = e / kc, c = e % kc;
      const uint r = upper ? i - 1u - q : i + 1u + q;
      x[xbase + r * k + c] -= a[abase + r * n + i] * x[xbase + i * k + c];
    }
    memoryBarrierBuffer();
    barrier();
  }
}
#endif
