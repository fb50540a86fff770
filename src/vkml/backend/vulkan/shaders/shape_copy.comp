// Data movement for any dtype, keyed on the element size ES (1, 2, 4 or 8 bytes: bool, uint8 and
// int8; float16, bfloat16 and int16; int32 and float32; int64 and float64 moved as uint pairs, so
// neither shaderInt64 nor shaderFloat64 is needed). COPY: dst[i] = src[i], both walked over one shape by their own offsets and strides
// (views, negative strides for flip). FILL: dst[i] = the value's bits. See movement.h.
#version 450
#if ES == 1
#extension GL_EXT_shader_8bit_storage : require
#define ELEM uint8_t
#define VALUE uint8_t(p.value.x)
#elif ES == 2
#extension GL_EXT_shader_16bit_storage : require
#define ELEM uint16_t
#define VALUE uint16_t(p.value.x)
#elif ES == 4
#define ELEM uint
#define VALUE p.value.x
#else
#define ELEM uvec2
#define VALUE p.value
#endif

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint n;
  uint ndim;
  uvec2 value;
  uint shape[8];
  int offset[2];
  int stride[16];
} p;

layout(std430, binding = 0) writeonly buffer Dst { ELEM dst[]; };
#if defined(COPY)
layout(std430, binding = 1) readonly buffer Src { ELEM src[]; };
#endif

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  int io = p.offset[0], ia = p.offset[1];
  uint r = i;
  for (int d = int(p.ndim) - 1; d >= 0; --d) {  // at most 8 iterations
    const uint c = r % p.shape[d];
    r /= p.shape[d];
    io += int(c) * p.stride[d];
    ia += int(c) * p.stride[8 + d];
  }
#if defined(COPY)
  dst[io] = src[ia];
#else
  dst[io] = VALUE;
#endif
}
