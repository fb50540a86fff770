// The recurrent cells (issue #16 item 2: rnn), one invocation per (b, j) of B x H: no loops at
// all, so no invocation comes near lavapipe's loop bound. Every tensor is contiguous at its
// offset; the activations are vmath.glsl's, the CPU's routines, so results match the CPU's.
//   (default)  lstm_cell: gates (B, 4H) in order (i, f, g, o) and c_prev (B, H) -> out (2, B, H),
//              [h, c] with c = f c_prev + i g, h = o tanh(c)
//   BACKWARD   lstm_cell_backward: gradient (2, B, H), gates, c_prev -> flat out: dgates (B, 4H)
//              then dc_prev (B, H)
// FLOAT64: double tensors (vmath's double routines need the 64-bit integer types).
#version 450
#if defined(FLOAT64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T double
#define VM_DOUBLE 1
#else
#define T float
#define VM_DOUBLE 0
#endif
#include "vmath.glsl"

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint B;
  uint H;
  int g_offset;      // the gradient's (BACKWARD)
  int gates_offset;
  int c_offset;
} p;

layout(std430, binding = 0) writeonly buffer Out { T o[]; };
#if defined(BACKWARD)
layout(std430, binding = 1) readonly buffer Grad { T gr[]; };
layout(std430, binding = 2) readonly buffer Gates { T gates[]; };
layout(std430, binding = 3) readonly buffer CPrev { T cp[]; };
#else
layout(std430, binding = 1) readonly buffer Gates { T gates[]; };
layout(std430, binding = 2) readonly buffer CPrev { T cp[]; };
#endif

void main() {
  const uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
                  gl_LocalInvocationID.x;
  if (id >= p.B * p.H) return;
  const uint r = id / p.H, j = id % p.H;
  const int a = p.gates_offset + int(r * 4u * p.H + j);
  const T i = vm_sigmoid(gates[a]);
  const T f = vm_sigmoid(gates[a + int(p.H)]);
  const T g = vm_tanh(gates[a + int(2u * p.H)]);
  const T og = vm_sigmoid(gates[a + int(3u * p.H)]);
  const T c0 = cp[p.c_offset + int(id)];
  precise T c = f * c0 + i * g;
  const T tc = vm_tanh(c);
#if defined(BACKWARD)
  const T gh = gr[p.g_offset + int(id)];
  const T gc = gr[p.g_offset + int(p.B * p.H + id)];
  precise T e = gc + gh * og * (T(1) - tc * tc);
  const uint d = r * 4u * p.H + j;
  o[d] = e * g * (i * (T(1) - i));
  o[d + p.H] = e * c0 * (f * (T(1) - f));
  o[d + 2u * p.H] = e * i * (T(1) - g * g);
  o[d + 3u * p.H] = gh * tc * (og * (T(1) - og));
  o[4u * p.B * p.H + id] = e * f;
#else
  o[p.B * p.H + id] = c;
  o[id] = og * tc;
#endif
}
