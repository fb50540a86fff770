// The last step of a reduction, contiguous, n elements:
//   (default)   logsumexp: out = log(sum) + s, s = shift (the maximum), 0 where that is infinite
//               (as the sum of exp(x - s) was taken: shaders/reduce.comp, OP_SUMEXP)
//   DIVIDE64    float64 mean and var: out = sum / divisor, in double (reduce.comp's scale is a
//               float; a division, as the CPU's, and x / 0 is inf or NaN as there)
#version 450

layout(local_size_x = 64) in;

#if defined(DIVIDE64)
layout(push_constant) uniform Params {
  uint n;
  uint unused;
  double divisor;
} p;

layout(std430, binding = 0) buffer Out { double o[]; };
layout(std430, binding = 1) readonly buffer Sum { double sum[]; };
#else
layout(push_constant) uniform Params {
  uint n;
} p;

layout(std430, binding = 0) buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer Sum { float sum[]; };
layout(std430, binding = 2) readonly buffer Shift { float shift[]; };
#endif

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
#if defined(DIVIDE64)
  o[i] = sum[i] / p.divisor;
#else
  const float s = isinf(shift[i]) ? 0.0 : shift[i];
  o[i] = log(sum[i]) + s;
#endif
}
