// Layer and batch normalisation, one workgroup per group of M values: a row of layer_norm's
// trailing dims, or a channel of batch_norm's (N, C, S) input. Value j of group grp is element
//   grp * seg + (j / S) * step + j % S
// of the contiguous input (layer_norm: seg = S = M, step = 0; batch_norm: seg = S, step = C * S).
// Each invocation folds the values t, t + 128, ... in order (at most M / 128 of them, three times
// over: the host keeps that well under the 65535 loop iterations lavapipe allows a shader in all),
// then the 128 partial sums are combined
// in shared memory in a fixed tree: results do not depend on scheduling. The variance is taken in
// a second pass from the mean, as the CPU's.
//   FORWARD   y = (x - mean) * rstd * w + b; stats = [mean, biased var] per group
//   BACKWARD  u = g * w (w per value; a per-group weight multiplies dx instead);
//             dx = rstd * ((u - mean(u)) - xhat * mean(u * xhat));
//             stats = [mean, rstd]; pg = [sum(u * xhat), sum(u)] per group (batch_norm's
//             weight and bias gradients: there u = g)
// SHORT_ROWS: one invocation per group instead (small groups: a workgroup each is slower).
// FLOAT64: double tensors, computed in double (T), as the CPU's float64 kernels.
#version 450

#if defined(FLOAT64)
#define T double
#define T2 dvec2
#else
#define T float
#define T2 vec2
#endif

#if defined(SHORT_ROWS)
#define LANES 1u
layout(local_size_x = 64) in;
#else
#define LANES 128u
layout(local_size_x = 128) in;
#endif

layout(push_constant) uniform Params {
  uint groups;
  uint M;
  uint S;
  uint seg;
  uint step;
  uint flags;  // 1: weight, 2: bias, 4: one weight per group (else per value), 8: write dx
  float eps;
  int x_offset;
  int g_offset;
  int w_offset;
  int b_offset;
#if defined(FLOAT64)
  double eps64;  // eps as the CPU's float64 kernels add it
#endif
} p;

#if defined(FORWARD)
layout(std430, binding = 0) buffer Out { T o[]; };
layout(std430, binding = 1) buffer Stats { T stats[]; };
layout(std430, binding = 2) readonly buffer X { T x[]; };
layout(std430, binding = 3) readonly buffer W { T w[]; };
layout(std430, binding = 4) readonly buffer B { T b[]; };
#else
layout(std430, binding = 0) buffer Out { T o[]; };
layout(std430, binding = 1) buffer ParamGrad { T pg[]; };
layout(std430, binding = 2) buffer Stats { T stats[]; };
layout(std430, binding = 3) readonly buffer G { T g[]; };
layout(std430, binding = 4) readonly buffer X { T x[]; };
layout(std430, binding = 5) readonly buffer W { T w[]; };
#endif

#if defined(SHORT_ROWS)
T2 tree_sum(T2 v) { return v; }
#else
shared T2 partial[128];

T2 tree_sum(T2 v) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint width = 64u; width > 0u; width >>= 1u) {
    if (t < width) partial[t] += partial[t + width];
    barrier();
  }
  const T2 r = partial[0];
  barrier();  // every invocation has read partial[0] before it is written again
  return r;
}
#endif

uint at_of(uint grp, uint j) {
  if (p.step == 0u) return grp * p.seg + j;  // a row: no division
  return grp * p.seg + (j / p.S) * p.step + j % p.S;
}

// The weight of value j, 1 without one or where it is one per group.
T value_weight(uint j) {
  return (p.flags & 5u) == 1u ? w[p.w_offset + int(j % p.S)] : 1.0;
}

void main() {
  const uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
#if defined(SHORT_ROWS)
  const uint grp = group * 64u + gl_LocalInvocationID.x, t = 0u;
#else
  const uint grp = group, t = gl_LocalInvocationID.x;
#endif
  if (grp >= p.groups) return;  // without SHORT_ROWS the whole workgroup: barriers stay uniform
  const T count = T(p.M);
  // The mean from sums of x - x0, x0 the group's first value (0 if not finite): a plain float sum
  // of off-centre values (1000 +- 1) rounds their spread away.
  const T first = p.M > 0u ? x[p.x_offset + int(at_of(grp, 0u))] : 0.0;
  const T x0 = isinf(first) || isnan(first) ? 0.0 : first;
  precise T2 s = T2(0.0);  // sum(x - x0), sum(u)
  for (uint j = t; j < p.M; j += LANES) {
    const uint at = at_of(grp, j);
#if defined(FORWARD)
    s.x += x[p.x_offset + int(at)] - x0;
#else
    s += T2(x[p.x_offset + int(at)] - x0, g[p.g_offset + int(at)] * value_weight(j));
#endif
  }
  s = tree_sum(s);
  precise const T mu = x0 + s.x / count;
  T2 q = T2(0.0);  // sum((x - mean)^2), sum(u * (x - mean))
  for (uint j = t; j < p.M; j += LANES) {
    const uint at = at_of(grp, j);
    const T d = x[p.x_offset + int(at)] - mu;
#if defined(FORWARD)
    q.x += d * d;
#else
    q += T2(d * d, g[p.g_offset + int(at)] * value_weight(j) * d);
#endif
  }
  q = tree_sum(q);
  const T var = q.x / count;
#if defined(FLOAT64)
  const T rs = 1.0 / sqrt(var + p.eps64);
#else
  const T rs = 1.0 / sqrt(var + p.eps);
#endif
#if defined(FORWARD)
  if (t == 0u) {
    stats[grp] = mu;
    stats[p.groups + grp] = var;
  }
  const bool per_group = (p.flags & 4u) != 0u;
  for (uint j = t; j < p.M; j += LANES) {
    const uint at = at_of(grp, j);
    const uint k = per_group ? grp : j % p.S;
    T y = (x[p.x_offset + int(at)] - mu) * rs;
    if ((p.flags & 1u) != 0u) y *= w[p.w_offset + int(k)];
    if ((p.flags & 2u) != 0u) y += b[p.b_offset + int(k)];
    o[at] = y;
  }
#else
  if (t == 0u) {
    stats[grp] = mu;
    stats[p.groups + grp] = rs;
    pg[grp] = rs * q.y;
    pg[p.groups + grp] = s.y;
  }
  const T mean_u = s.y / count, mean_ux = rs * q.y / count;
  const T scale = (p.flags & 5u) == 5u ? w[p.w_offset + int(grp)] * rs : rs;
  const uint end = (p.flags & 8u) != 0u ? p.M : 0u;  // no dx: batch_norm_param_grad
  for (uint j = t; j < end; j += LANES) {
    const uint at = at_of(grp, j);
    const T xh = (x[p.x_offset + int(at)] - mu) * rs;
    const T u = g[p.g_offset + int(at)] * value_weight(j);
    o[at] = scale * ((u - mean_u) - xh * mean_ux);
  }
#endif
}
