// rand, randint and arange of integers computed on the device as the CPU's kernels compute them
// (backend/cpu/creation.cpp), so that both devices give the same bits: rand and randint from the
// same counter-based Philox4x32-10 stream (element i uses counter offset + i), arange in wrapping
// uint64 arithmetic. Needs shaderInt64 and shaderFloat64 (creation.cpp runs the CPU kernel and
// uploads without them). GEN: RAND, RANDINT or ARANGE; OUT: B8, I32, I64, F32 or F64.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#if defined(B8)
#extension GL_EXT_shader_8bit_storage : require
#define ELEM uint8_t
#define STORE(v) uint8_t((v) != 0 ? 1u : 0u)
#elif defined(I32)
#define ELEM int
#define STORE(v) int(v)
#elif defined(I64)
#define ELEM int64_t
#define STORE(v) int64_t(v)
#elif defined(F32)
#define ELEM float
#define STORE(v) float(v)
#else
#define ELEM double
#define STORE(v) double(v)
#endif

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint n;
  uint unused;
  uint64_t seed;
  uint64_t offset;
  uint64_t start;  // randint: low; arange: start
  uint64_t step;   // randint: high - low; arange: step
} p;

layout(std430, binding = 0) writeonly buffer Out { ELEM o[]; };

uvec4 philox(uint64_t key, uint64_t ctr) {
  uint c0 = uint(ctr), c1 = uint(ctr >> 32), c2 = 0u, c3 = 0u;
  uint k0 = uint(key), k1 = uint(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c0, hi0, lo0);
    umulExtended(0xCD9E8D57u, c2, hi1, lo1);
    const uint n0 = hi1 ^ c1 ^ k0;
    const uint n2 = hi0 ^ c3 ^ k1;
    c1 = lo1;
    c3 = lo0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return uvec4(c0, c1, c2, c3);
}

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
                 gl_LocalInvocationID.x;
  if (i >= p.n) return;
#if defined(RAND)
  const uvec4 w = philox(p.seed, p.offset + uint64_t(i));
#if defined(F32)
  // 24 bits, so that rounding to float32 can never give 1.0 (times 2^-24)
  const double v = double(w.x >> 8) * 5.9604644775390625e-8LF;
#else
  // [0, 1) with 53 bits: (w.x << 21) ^ (w.y >> 11), whose bits do not overlap, as a sum, times
  // 2^-53 (exact: no rounding anywhere)
  const double v = (double(w.x) * 2097152.0LF + double(w.y >> 11)) *
                   1.1102230246251565404236316680908203125e-16LF;
#endif
#elif defined(RANDINT)
  const uvec4 w = philox(p.seed, p.offset + uint64_t(i));
  const uint64_t r = (uint64_t(w.x) << 32) | uint64_t(w.y);
  const int64_t v = int64_t(p.start + r % p.step);
#else
  const int64_t v = int64_t(p.start + uint64_t(i) * p.step);
#endif
  o[i] = STORE(v);
}
