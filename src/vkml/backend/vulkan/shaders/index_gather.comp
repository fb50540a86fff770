// gather and index_select: out[i] = x[p with p[dim] = index[p]], p the i-th position of out's
// (row-major, contiguous) shape; index_select is the gather whose index is broadcast along every
// other dim (stride 0). x and index are walked by their own offsets and strides, x with stride 0
// along dim (the index value steps along it by x_dim_stride). Elements of ES bytes (any dtype,
// moved as bits); IDX64: int64 indices read as uint pairs, else int32.
// The host does not check the indices (that would need a read-back and a wait): an index out of
// [0, size) gives a zero element rather than a read outside x, and raises the error word (the
// host's deferred IndexError, context.h): word[0] = slot, word[1..2] = the value.
#version 450
#if ES == 1
#extension GL_EXT_shader_8bit_storage : require
#define ELEM uint8_t
#define ZERO uint8_t(0)
#elif ES == 2
#extension GL_EXT_shader_16bit_storage : require
#define ELEM uint16_t
#define ZERO uint16_t(0)
#elif ES == 4
#define ELEM uint
#define ZERO 0u
#else
#define ELEM uvec2
#define ZERO uvec2(0u)
#endif

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint n;
  uint ndim;
  int size;  // x.shape[dim]: valid index values are [0, size)
  int x_offset;
  int i_offset;
  int x_dim_stride;
  uint slot;  // this launch's deferred error (Context::expect_in_range)
  uint shape[8];
  int x_stride[8];
  int i_stride[8];
} p;

layout(std430, binding = 0) writeonly buffer Out { ELEM o[]; };
layout(std430, binding = 1) buffer Err { uint word[]; };
layout(std430, binding = 2) readonly buffer X { ELEM x[]; };
#if defined(IDX64)
layout(std430, binding = 3) readonly buffer I { uvec2 idx[]; };
#else
layout(std430, binding = 3) readonly buffer I { int idx[]; };
#endif

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  int ix = p.x_offset, ii = p.i_offset;
  uint r = i;
  for (int d = int(p.ndim) - 1; d >= 0; --d) {  // at most 8 iterations
    const uint c = r % p.shape[d];
    r /= p.shape[d];
    ix += int(c) * p.x_stride[d];
    ii += int(c) * p.i_stride[d];
  }
#if defined(IDX64)
  const uvec2 w = idx[ii];
  const int v = int(w.x);
  const bool fits = int(w.y) == (v >> 31);  // the high word only sign-extends the low one
#else
  const int v = idx[ii];
  const bool fits = true;
#endif
  if (fits && v >= 0 && v < p.size) {
    o[i] = x[ix + v * p.x_dim_stride];
  } else {
    o[i] = ZERO;
    if (atomicCompSwap(word[0], 0u, p.slot) == 0u) {
#if defined(IDX64)
      word[1] = w.x;
      word[2] = w.y;
#else
      word[1] = uint(v);
      word[2] = v < 0 ? 0xffffffffu : 0u;
#endif
    }
  }
}
