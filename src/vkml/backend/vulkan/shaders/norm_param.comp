// layer_norm's weight and bias gradients, as column sums over the rows: invocation (c, i) adds
// g * xhat and g of column i over rows [c * chunk, (c + 1) * chunk) in order, compensated
// (Kahan), with each row's mean and rstd from stats (norm.comp, BACKWARD). Chunks keep the loop
// short (lavapipe stops a shader after 65535 loop iterations, silently); the host sums the n_chunks
// partial rows (reduce.comp). Writes part[c * 2n + i] and part[c * 2n + n + i]. FLOAT64: double
// tensors, computed in double.
#version 450

#if defined(FLOAT64)
#define T double
#define T2 dvec2
#else
#define T float
#define T2 vec2
#endif

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint n;
  uint rows;
  uint chunk;
  uint n_chunks;
  int g_offset;
  int x_offset;
} p;

layout(std430, binding = 0) buffer Out { T part[]; };
layout(std430, binding = 1) readonly buffer G { T g[]; };
layout(std430, binding = 2) readonly buffer X { T x[]; };
layout(std430, binding = 3) readonly buffer Stats { T stats[]; };

void main() {
  const uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                  gl_LocalInvocationID.x;
  if (id >= p.n * p.n_chunks) return;
  const uint i = id % p.n, c = id / p.n;
  const uint first = c * p.chunk, last = min(first + p.chunk, p.rows);
  precise T2 sum = T2(0.0);
  precise T2 carry = T2(0.0);
  for (uint r = first; r < last; ++r) {
    const int at = int(r * p.n + i);
    const T gv = g[p.g_offset + at];
    const T xh = (x[p.x_offset + at] - stats[r]) * stats[p.rows + r];
    precise T2 y = T2(gv * xh, gv) - carry;
    precise T2 t = sum + y;
    precise T2 lost = (t - sum) - y;
    // past an infinity there is nothing to compensate
    carry = T2(isinf(t.x) ? 0.0 : lost.x, isinf(t.y) ? 0.0 : lost.y);
    sum = t;
  }
  part[c * 2u * p.n + i] = sum.x;
  part[c * 2u * p.n + p.n + i] = sum.y;
}
