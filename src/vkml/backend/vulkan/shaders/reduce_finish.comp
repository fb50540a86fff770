// logsumexp's last step: out = log(sum) + s, s = shift (the maximum), 0 where that is infinite
// (as the sum of exp(x - s) was taken: shaders/reduce.comp, OP_SUMEXP). Contiguous, n elements.
#version 450

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint n;
} p;

layout(std430, binding = 0) buffer Out { float o[]; };
layout(std430, binding = 1) readonly buffer Sum { float sum[]; };
layout(std430, binding = 2) readonly buffer Shift { float shift[]; };

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  const float s = isinf(shift[i]) ? 0.0 : shift[i];
  o[i] = log(sum[i]) + s;
}
