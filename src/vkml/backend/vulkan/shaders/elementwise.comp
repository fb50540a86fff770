// The strided element-wise shader: element i of the output's shape, located in each tensor by
// its own offset and strides (launch.h, StridedParams), for one operation chosen at compile time
// (-DOP_ADD, ...). NIN is the number of inputs. The dtypes are codes, 0 bool, 1 int32, 2 int64,
// 3 float32, 4 float64: DTO the output's, DTA, DTB, DTC the inputs' (each defaulting to the one
// before; everything float32 when none is given). Bools are bytes (8-bit storage), 0 or 1, read
// and written one byte each. The narrow storage dtypes, 5 float16, 6 bfloat16, 7 uint8, 8 int8,
// 9 int16, appear only in copies to or from the dtype they compute in (float32, int32): read into
// 32 bits, and rounded (to nearest even, as core/half.h) or wrapped on store. FLAG adds a written uint buffer after the output (the host's error word),
// which an invocation sets to scalar[3] on an error the host must raise (an integer division by
// zero), deferred to its next read.
#version 450

#ifndef DTO
#define DTO 3
#endif
#ifndef DTA
#define DTA DTO
#endif
#ifndef DTB
#define DTB DTA
#endif
#ifndef DTC
#define DTC DTB
#endif
#ifdef NO_FLOAT64  // float32 math for a device without float64 (log1p, expm1, pow, sin, cos)
#define VM_DOUBLE 0
#endif
#ifndef VM_DOUBLE
#define VM_DOUBLE (DTA == 4)
#endif

#define IS_NARROW(c) ((c) >= 5)
#if (IS_NARROW(DTO) || IS_NARROW(DTA)) && !defined(OP_COPY)
#error "the narrow dtypes are only copied (dispatch computes them in float32 or int32)"
#endif
#if DTO == 0 || DTA == 0 || DTB == 0 || DTC == 0 || DTO == 7 || DTA == 7 || DTO == 8 || DTA == 8
#extension GL_EXT_shader_8bit_storage : require
#endif
#if DTO == 5 || DTA == 5 || DTO == 6 || DTA == 6 || DTO == 9 || DTA == 9
#extension GL_EXT_shader_16bit_storage : require
#endif
#if DTO == 2 || DTA == 2 || DTB == 2 || DTO == 4 || DTA == 4 || DTB == 4 || VM_DOUBLE || \
    defined(OP_SIN) || defined(OP_COS)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif

#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)

#define TYPE_0 bool
#define TYPE_1 int
#define TYPE_2 int64_t
#define TYPE_3 float
#define TYPE_4 double
#define TYPE_5 float
#define TYPE_6 float
#define TYPE_7 int
#define TYPE_8 int
#define TYPE_9 int
#define UTYPE_1 uint
#define UTYPE_2 uint64_t
#define STORAGE_0 uint8_t
#define STORAGE_1 int
#define STORAGE_2 int64_t
#define STORAGE_3 float
#define STORAGE_4 double
#define STORAGE_5 uint16_t
#define STORAGE_6 uint16_t
#define STORAGE_7 uint8_t
#define STORAGE_8 int8_t
#define STORAGE_9 int16_t
#define LOAD_0(buf, i) (uint(buf[i]) != 0u)
#define LOAD_1(buf, i) buf[i]
#define LOAD_2(buf, i) buf[i]
#define LOAD_3(buf, i) buf[i]
#define LOAD_4(buf, i) buf[i]
#define LOAD_5(buf, i) float16_to_float(uint(buf[i]))
#define LOAD_6(buf, i) uintBitsToFloat(uint(buf[i]) << 16)
#define LOAD_7(buf, i) int(uint(buf[i]))
#define LOAD_8(buf, i) int(buf[i])
#define LOAD_9(buf, i) int(buf[i])
#define STORE_0(v) uint8_t((v) ? 1u : 0u)
#define STORE_1(v) (v)
#define STORE_2(v) (v)
#define STORE_3(v) (v)
#define STORE_4(v) (v)
#define STORE_5(v) uint16_t(float_to_float16(v))
#define STORE_6(v) uint16_t(float_to_bfloat16(v))
#define STORE_7(v) uint8_t(uint(v))
#define STORE_8(v) int8_t(v)
#define STORE_9(v) int16_t(v)

#define TO XCAT(TYPE_, DTO)
#define TA XCAT(TYPE_, DTA)
#define TB XCAT(TYPE_, DTB)
#define TC XCAT(TYPE_, DTC)

#if DTO == 5 || DTA == 5
// The conversions of core/half.h, bit for bit (on 32-bit words: 16-bit storage alone allows no
// 16-bit arithmetic).
float float16_to_float(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (e == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (e == 0u) {  // zero or subnormal: mant * 2^-24, exact in float
    precise float v = float(mant) * 5.9604644775390625e-8;
    return uintBitsToFloat(sign | floatBitsToUint(v));
  }
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (mant << 13));
}
uint float_to_float16(float f) {
  uint x = floatBitsToUint(f);
  const uint sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (half-way past 65504): inf
  if (x < 0x38800000u) {
    // float16's subnormal range: adding 0.5 puts the value where float's spacing (2^-24) is
    // float16's, so the addition's own round-to-nearest-even rounds it
    precise float r = uintBitsToFloat(x) + 0.5;
    return sign | (floatBitsToUint(r) - 0x3f000000u);
  }
  x += 0xc8000fffu + ((x >> 13) & 1u);  // rebias the exponent (-112 << 23) and round, ties even
  return sign | ((x >> 13) & 0xffffu);
}
#endif
#if DTO == 6
uint float_to_bfloat16(float f) {
  const uint x = floatBitsToUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;  // NaN
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
#endif

layout(local_size_x = 256) in;

// Rows of strides, one per strided tensor: the output and the inputs when NIN < 3; with three
// inputs the output is dense (element i at offset[0] + i) and the rows are the inputs'. Shape
// is padded with 1s in front. scalar: two constants of the output's dtype, 32 bits each or 64
// (low word first).
layout(push_constant) uniform Params {
  uint shape[6];
  int offset[4];
  int stride[18];
  uint scalar[4];
} p;

#if defined(FLAG)
#define IN_BINDING(k) (2 + k)
#else
#define IN_BINDING(k) (1 + k)
#endif

layout(std430, binding = 0) buffer Out { XCAT(STORAGE_, DTO) o[]; };
#if defined(FLAG)
layout(std430, binding = 1) buffer Flag { uint flag[]; };
#endif
#if NIN >= 1
layout(std430, binding = IN_BINDING(0)) readonly buffer A { XCAT(STORAGE_, DTA) a[]; };
#endif
#if NIN >= 2
layout(std430, binding = IN_BINDING(1)) readonly buffer B { XCAT(STORAGE_, DTB) b[]; };
#endif
#if NIN >= 3
layout(std430, binding = IN_BINDING(2)) readonly buffer C { XCAT(STORAGE_, DTC) c[]; };
#endif

// Constant k (0 or 1) of the push constants, in the output's dtype.
TO scalar_at(int k) {
#if DTO == 0
  return p.scalar[2 * k] != 0u;
#elif DTO == 1 || DTO >= 7
  return int(p.scalar[2 * k]);
#elif DTO == 2
  return int64_t(pack64(uvec2(p.scalar[2 * k], p.scalar[2 * k + 1])));
#elif DTO == 3 || DTO == 5 || DTO == 6
  return uintBitsToFloat(p.scalar[2 * k]);
#else
  return packDouble2x32(uvec2(p.scalar[2 * k], p.scalar[2 * k + 1]));
#endif
}

#define IS_FLOAT_A (DTA == 3 || DTA == 4)

#if defined(OP_EXP) || defined(OP_LOG) || defined(OP_TANH) || defined(OP_SIGMOID) ||      \
    defined(OP_ERF) || defined(OP_ERFC) || defined(OP_GELU) || defined(OP_GELU_TANH) ||   \
    defined(OP_GELU_BACKWARD) || defined(OP_LOG1P) || defined(OP_EXPM1) ||                 \
    (defined(OP_POW) && DTA >= 3) || defined(OP_ELU) || defined(OP_ELU_BACKWARD) ||        \
    defined(OP_SOFTPLUS) || defined(OP_SOFTPLUS_BACKWARD) || defined(OP_SILU) ||           \
    defined(OP_SILU_BACKWARD)
#include "vmath.glsl"
#endif
#if defined(OP_SIN) || defined(OP_COS)
#include "trig.glsl"
#endif
#if defined(OP_FLOOR_DIVIDE) || defined(OP_REMAINDER) || defined(OP_POW) || defined(OP_LOG1P) || \
    defined(OP_EXPM1)
#include "divmod.glsl"
#endif

// The deferred error of this launch (the host's Context::expect_valid): the first to raise one
// names its slot, passed as scalar[3].
void raise_flag() {
#if defined(FLAG)
  atomicCompSwap(flag[0], 0u, p.scalar[3]);
#endif
}

// One element converted to the output's dtype, as the CPU's convert_element: a float an integer
// type cannot hold (NaN, inf, out of range) becomes the type's lowest value.
TO convert(TA x) {
#if DTO == 0 && DTA == 0
  return x;
#elif DTO == 0
  return x != TA(0);
#elif DTA == 0
  return x ? TO(1) : TO(0);
#elif DTO <= 2 && (DTA == 3 || DTA == 4)
#if DTO == 1
  const TA lo = TA(-2147483648.0);
  const TO lowest = int(0x80000000u);
#else
  const TA lo = TA(-9223372036854775808.0);
  const TO lowest = int64_t(0x8000000000000000ul);
#endif
  return x >= lo && x < -lo ? TO(x) : lowest;
#else
  return TO(x);
#endif
}

TO compute(int ia, int ib, int ic) {
#if NIN >= 1
  const TA x = XCAT(LOAD_, DTA)(a, ia);
#endif
#if NIN >= 2
  const TB y = XCAT(LOAD_, DTB)(b, ib);
#endif
#if NIN >= 3
  const TC z = XCAT(LOAD_, DTC)(c, ic);
#endif
#if defined(OP_FILL)
  return scalar_at(0);
#elif defined(OP_COPY)
  return convert(x);
#elif defined(OP_ADD)
#if DTA == 0
  return x || y;
#else
  return x + y;
#endif
#elif defined(OP_SUB)
  return x - y;
#elif defined(OP_MUL)
#if DTA == 0
  return x && y;
#else
  return x * y;
#endif
#elif defined(OP_DIV)  // precise: no driver may turn these into reciprocal estimates
  precise TA q = x / y;
  return q;
#elif defined(OP_NEG)
  return -x;
#elif defined(OP_ABS)
#if IS_FLOAT_A
  return abs(x);
#else
  return x < TA(0) ? -x : x;  // the minimum value stays itself (wraps), as on the CPU
#endif
#elif defined(OP_SIGN)  // -1, 0 or 1; NaN and -0 give 0, as the CPU's (ordered comparisons)
  return TA(TA(0) < x) - TA(x < TA(0));
#elif defined(OP_RELU)  // NaN stays NaN, -0 stays -0
  return x < TA(0) ? TA(0) : x;
#elif defined(OP_FLOOR) && IS_FLOAT_A
  return floor(x);
#elif defined(OP_CEIL) && IS_FLOAT_A
  return ceil(x);
#elif defined(OP_TRUNC) && IS_FLOAT_A
  return x < TA(0) ? ceil(x) : floor(x);  // as the composite it replaces (GLSL trunc untested)
#elif defined(OP_FRAC)  // exact; +-inf give NaN (inf - inf), as torch
  return x - (x < TA(0) ? ceil(x) : floor(x));
#elif defined(OP_ROUND) && IS_FLOAT_A
  // Halves to the even neighbour, as nearbyint, and the sign kept (-0.5 gives -0). Not
  // roundEven: lavapipe's rounds float64 halves away from zero and loses -0's sign.
  const TA below = floor(x), frac = x - below;
  const bool odd = below - TA(2) * floor(below * TA(0.5)) != TA(0);
  const TA r = frac > TA(0.5) || (frac == TA(0.5) && odd) ? below + TA(1) : below;
  return isnan(x) || isinf(x) ? x : (x < TA(0) || (x == TA(0) && TA(1) / x < TA(0)) ? -abs(r) : abs(r));
#elif defined(OP_FLOOR) || defined(OP_CEIL) || defined(OP_ROUND) || defined(OP_TRUNC)
  return x;
#elif defined(OP_SQRT)
  return sqrt(x);
#elif defined(OP_RSQRT)
  precise TA root = sqrt(x);  // as the CPU: two correctly rounded steps, not an estimate
  precise TA r = TA(1) / root;
  return r;
#elif defined(OP_RECIPROCAL)
  precise TA r = TA(1) / x;
  return r;
#elif defined(OP_SIN)
  return trig(x, false);
#elif defined(OP_COS)
  return trig(x, true);
#elif defined(OP_EXP)
  return vm_exp(x);
#elif defined(OP_LOG)
  return vm_log(x);
#elif defined(OP_TANH)
  return vm_tanh(x);
#elif defined(OP_SIGMOID)
  return vm_sigmoid(x);
#elif defined(OP_ERF)
  return vm_erf(x);
#elif defined(OP_ERFC)
  return vm_erfc(x);
#elif defined(OP_GELU)
  return vm_gelu(x);
#elif defined(OP_GELU_TANH)
  return vm_gelu_tanh(x);
#elif defined(OP_GELU_BACKWARD)  // x is the incoming gradient, y the input
  return x * vm_gelu_grad(y);
#elif defined(OP_RELU_BACKWARD)  // x is the incoming gradient, y the input (NaN passes x)
  return y <= TA(0) ? TA(0) : x;
#elif defined(OP_TANH_BACKWARD)  // x is the incoming gradient, y tanh's output
  return x * (TA(1) - y * y);
#elif defined(OP_SIGMOID_BACKWARD)  // x is the incoming gradient, y sigmoid's output
  return x * (TA(1) - y) * y;
// The activations with parameters (scalar 0 and 1, in the tensors' dtype), in the CPU kernels'
// order of operations (backend/cpu/elementwise.cpp).
#elif defined(OP_LEAKY_RELU)  // scalar 0: the negative slope
  return x > TA(0) ? x : x * scalar_at(0);
#elif defined(OP_LEAKY_RELU_BACKWARD)  // x the incoming gradient, y the input
  return y > TA(0) ? x : x * scalar_at(0);
#elif defined(OP_HARDTANH_BACKWARD)  // scalar 0 and 1: the bounds
  return y <= scalar_at(0) || y >= scalar_at(1) ? TA(0) : x;
#elif defined(OP_ELU)  // scalar 0: alpha, 1: the input scale
  precise TA neg = vm_expm1(x * scalar_at(1)) * scalar_at(0);
  return x > TA(0) ? x : neg;
#elif defined(OP_ELU_BACKWARD)
  precise TA neg = x * scalar_at(1) * scalar_at(0) * vm_exp(y * scalar_at(1));
  return y <= TA(0) ? neg : x;
#elif defined(OP_SOFTPLUS)  // scalar 0: beta, 1: the threshold
  precise TA z = x * scalar_at(0);
  precise TA r = vm_softplus(z) / scalar_at(0);
  return z > scalar_at(1) ? x : r;
#elif defined(OP_SOFTPLUS_BACKWARD)
  precise TA z = y * scalar_at(0);
  precise TA r = x * vm_sigmoid(z);
  return z > scalar_at(1) ? x : r;
#elif defined(OP_HARDSIGMOID) || defined(OP_HARDSWISH)  // min(max(x + 3, 0), 6), NaN passing
  precise TA v = x + TA(3);
  TA r = v < TA(0) ? TA(0) : v;
  r = r > TA(6) ? TA(6) : r;
  // precise: a division by a constant must not become a product with its reciprocal
#if defined(OP_HARDSIGMOID)
  precise TA q = r / TA(6);
#else
  precise TA q = (x * r) / TA(6);
#endif
  return q;
#elif defined(OP_HARDSIGMOID_BACKWARD)
  precise TA sixth = TA(1) / TA(6);
  precise TA scaled = x * sixth;
  return y > TA(-3) && y < TA(3) ? scaled : TA(0);
#elif defined(OP_HARDSWISH_BACKWARD)
  precise TA inner = x * (y / TA(3) + TA(0.5));
  return y < TA(-3) ? TA(0) : (y <= TA(3) ? inner : x);
#elif defined(OP_SILU)
  precise TA r = x * vm_sigmoid(x);
  return r;
#elif defined(OP_SILU_BACKWARD)  // x the incoming gradient, y the input
  const TA s = vm_sigmoid(y);
  precise TA r = x * s * (TA(1) + y * (TA(1) - s));
  return r;
// The regression losses' pieces of the difference (scalar 0: beta or delta), torch's order.
#elif defined(OP_SMOOTH_L1)
  const TA z = abs(x), w = scalar_at(0);
  precise TA quadratic = TA(0.5) * z * z / w;
  precise TA linear = z - TA(0.5) * w;
  return z < w ? quadratic : linear;
#elif defined(OP_SMOOTH_L1_BACKWARD)
  const TA w = scalar_at(0);
  precise TA inner = y * x / w;
  return y <= -w ? -x : (y >= w ? x : inner);
#elif defined(OP_SQUARED_DIFFERENCE)
  precise TA d = x - y;
  precise TA r = d * d;
  return r;
#elif defined(OP_HUBER)
  const TA z = abs(x), w = scalar_at(0);
  precise TA quadratic = TA(0.5) * z * z;
  precise TA linear = w * (z - TA(0.5) * w);
  return z < w ? quadratic : linear;
#elif defined(OP_HUBER_BACKWARD)
  const TA w = scalar_at(0);
  precise TA outer = x * w;
  precise TA inner = y * x;
  return y <= -w ? -outer : (y >= w ? outer : inner);
#elif defined(OP_LOG1P)
  return TA(dm_log1p(VT(x)));
#elif defined(OP_EXPM1)
  return TA(dm_expm1(VT(x)));
#elif defined(OP_MAXIMUM) || defined(OP_MINIMUM)
#if DTA == 0
#if defined(OP_MAXIMUM)
  return x || y;
#else
  return x && y;
#endif
#else
#if IS_FLOAT_A
  if (isnan(x) || isnan(y)) return x + y;  // NaN from either side, as the CPU
#endif
#if defined(OP_MAXIMUM)
  return x > y ? x : y;
#else
  return x < y ? x : y;
#endif
#endif
#elif defined(OP_WHERE)
  return x ? y : z;
// The pointwise family: the CPU's order of operations; fma rounds once where the device fuses it
// (lavapipe does not: within an ulp of the CPU's then).
#elif defined(OP_LERP)  // start, end, weight
  const bool small = abs(z) < TA(0.5);
  precise TA r = fma(small ? z : z - TA(1), y - x, small ? x : y);
  return r;
#elif defined(OP_ADDCMUL)
  precise TA r = fma(scalar_at(0) * y, z, x);
  return r;
#elif defined(OP_ADDCDIV)
  precise TA r = x + scalar_at(0) * y / z;
  return r;
#elif defined(OP_CLAMP)  // torch.clamp: lo > hi gives hi; a NaN bound gives NaN everywhere
  const TA lo = scalar_at(0), hi = scalar_at(1);
#if IS_FLOAT_A
  if (isnan(lo) || isnan(hi)) return lo + hi;
#endif
  const TA r = x < lo ? lo : x;
  return r > hi ? hi : r;
#elif defined(OP_EQ) || defined(OP_NE) || defined(OP_LT) || defined(OP_LE) || defined(OP_GT) || \
    defined(OP_GE)
#if DTA == 0
  const uint u = uint(x), v = uint(y);  // false < true, as the CPU's bools
#else
  const TA u = x, v = y;
#endif
#if defined(OP_EQ)
  return u == v;
#elif defined(OP_NE)
  return u != v;
#elif defined(OP_LT)
  return u < v;
#elif defined(OP_LE)
  return u <= v;
#elif defined(OP_GT)
  return u > v;
#else
  return u >= v;
#endif
#elif defined(OP_BITWISE_AND) || defined(OP_BITWISE_OR) || defined(OP_BITWISE_XOR)
#if DTA == 0 && defined(OP_BITWISE_AND)
  return x && y;
#elif DTA == 0 && defined(OP_BITWISE_OR)
  return x || y;
#elif DTA == 0
  return x != y;
#elif defined(OP_BITWISE_AND)
  return x & y;
#elif defined(OP_BITWISE_OR)
  return x | y;
#else
  return x ^ y;
#endif
#elif defined(OP_FLOOR_DIVIDE) || defined(OP_REMAINDER)
#if !IS_FLOAT_A
  if (y == TA(0)) {
    raise_flag();
    return TA(0);
  }
#endif
#if defined(OP_FLOOR_DIVIDE)
  return dm_floor_divide(x, y);
#else
  return dm_remainder(x, y);
#endif
#elif defined(OP_POW)
#if IS_FLOAT_A
  // One exponent for every element (scalar[0] set: a broadcast scalar): the CPU's products and
  // roots for the usual powers, which round as those, not as pow.
  if (p.scalar[0] != 0u) {
    if (y == TA(2)) return x * x;
    if (y == TA(3)) return x * x * x;
    if (y == TA(1)) return x;
    if (y == TA(0.5)) return sqrt(x);
    if (y == TA(-1)) return TA(1) / x;
  }
#if DTA == 4
  return dm_pow_f64(x, y);
#else
  return dm_pow_f32(x, y);
#endif
#else
  if (y < TA(0))  // 1 / x^-y truncated, as the CPU's (and torch's)
    return x == TA(1) ? TA(1) : x == TA(-1) ? ((y & TA(1)) != TA(0) ? TA(-1) : TA(1)) : TA(0);
  return dm_int_pow(x, y);
#endif
#endif
}

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  uint n = 1u;
  for (int d = 0; d < 6; ++d) n *= p.shape[d];
  if (i >= n) return;
#if NIN >= 3
  const int io = p.offset[0] + int(i);
  int at[3] = int[](p.offset[1], p.offset[2], p.offset[3]);
#else
  int at[3] = int[](p.offset[0], p.offset[1], p.offset[2]);
#endif
  uint r = i;
  for (int d = 5; d >= 0 && r != 0u; --d) {  // the coordinates left are all 0 once r is
    const uint coord = r % p.shape[d];
    r /= p.shape[d];
    for (int k = 0; k < 3; ++k) at[k] += int(coord) * p.stride[6 * k + d];
  }
#if NIN >= 3
  o[io] = XCAT(STORE_, DTO)(compute(at[0], at[1], at[2]));
#else
  o[at[0]] = XCAT(STORE_, DTO)(compute(at[1], at[2], 0));
#endif
}
