// The strided element-wise shader: element i of the output's shape, located in each tensor by
// its own offset and strides (launch.h, StridedParams), for one operation chosen at compile time
// (-DOP_ADD, ...). NIN is the number of inputs.
#version 450

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint n;
  uint ndim;
  float scalar;
  uint unused;
  uint shape[6];
  int offset[3];
  int stride[18];
} p;

layout(std430, binding = 0) buffer Out { float o[]; };
#if NIN >= 1
layout(std430, binding = 1) readonly buffer A { float a[]; };
#endif
#if NIN >= 2
layout(std430, binding = 2) readonly buffer B { float b[]; };
#endif

#if defined(OP_ADD)
#define EXPR (a[ia] + b[ib])
#elif defined(OP_SUB)
#define EXPR (a[ia] - b[ib])
#elif defined(OP_MUL)
#define EXPR (a[ia] * b[ib])
#elif defined(OP_DIV)
#define EXPR (a[ia] / b[ib])
#elif defined(OP_NEG)
#define EXPR (-a[ia])
#elif defined(OP_EXP)
#define EXPR exp(a[ia])
#elif defined(OP_LOG)
#define EXPR log(a[ia])
#elif defined(OP_SQRT)
#define EXPR sqrt(a[ia])
#elif defined(OP_RSQRT)
#define EXPR inversesqrt(a[ia])
#elif defined(OP_RECIPROCAL)
#define EXPR (1.0 / a[ia])
#elif defined(OP_ABS)
#define EXPR abs(a[ia])
#elif defined(OP_SIGN)  // -1, 0 or 1; NaN and -0 give 0, as the CPU's (ordered comparisons)
#define EXPR (float(0.0 < a[ia]) - float(a[ia] < 0.0))
#elif defined(OP_SIN)
#define EXPR sin(a[ia])
#elif defined(OP_COS)
#define EXPR cos(a[ia])
#elif defined(OP_TANH)  // +-1 past 9 in float32; some tanh builtins overflow to NaN far out
#define EXPR (abs(a[ia]) > 10.0 ? sign(a[ia]) : tanh(a[ia]))
#elif defined(OP_SIGMOID)
#define EXPR (1.0 / (1.0 + exp(-a[ia])))
#elif defined(OP_COPY)
#define EXPR (a[ia])
#elif defined(OP_FILL)
#define EXPR (p.scalar)
#endif

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
  int io = p.offset[0], ia = p.offset[1], ib = p.offset[2];
  uint r = i;
  for (int d = int(p.ndim) - 1; d >= 0; --d) {
    const uint c = r % p.shape[d];
    r /= p.shape[d];
    io += int(c) * p.stride[d];
    ia += int(c) * p.stride[6 + d];
    ib += int(c) * p.stride[12 + d];
  }
  o[io] = EXPR;
}
