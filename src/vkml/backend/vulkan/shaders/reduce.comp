// Sum (times `scale`: mean) over the reduced dims: invocation (i, c) sums chunk c -- elements
// [c * chunk, (c + 1) * chunk) of output i's reduced elements in row-major order -- compensated
// (Kahan), so a long sum in float32 stays close to the CPU's double accumulation. Chunks keep
// every invocation's loop short (lavapipe stops a loop after 65535 iterations, silently); the
// host sums the n_chunks partial sums with this shader again. The order is fixed: results do not
// depend on the device's workgroup size or scheduling.
#version 450

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint n_out;
  uint n_red;
  uint kept_ndim;
  uint red_ndim;
  float scale;
  int in_offset;
  uint chunk;
  uint n_chunks;
  uint kept_shape[6];
  int kept_stride[6];
  uint red_shape[6];
  int red_stride[6];
} p;

layout(std430, binding = 0) buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer In { float x[]; };

void main() {
  const uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                  gl_LocalInvocationID.x;
  if (id >= p.n_out * p.n_chunks) return;
  const uint i = id / p.n_chunks;
  const uint first = (id % p.n_chunks) * p.chunk;
  const uint last = min(first + p.chunk, p.n_red);
  int base = p.in_offset;
  uint r = i;
  for (int d = int(p.kept_ndim) - 1; d >= 0; --d) {
    base += int(r % p.kept_shape[d]) * p.kept_stride[d];
    r /= p.kept_shape[d];
  }
  precise float sum = 0.0;
  precise float carry = 0.0;
  for (uint j = first; j < last; ++j) {
    int at = base;
    uint q = j;
    for (int d = int(p.red_ndim) - 1; d >= 0; --d) {
      at += int(q % p.red_shape[d]) * p.red_stride[d];
      q /= p.red_shape[d];
    }
    precise float y = x[at] - carry;
    precise float t = sum + y;
    carry = isinf(t) ? 0.0 : (t - sum) - y;  // past an infinity there is nothing to compensate
    sum = t;
  }
  o[id] = sum * p.scale;
}
