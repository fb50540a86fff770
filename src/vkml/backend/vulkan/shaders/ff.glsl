// Float-float arithmetic (a value as hi + lo, two float32s, about 48 bits) for the float32 routines
// of devices without shaderFloat64 (divmod.glsl's pow, trig.glsl's reduction): dd.glsl's steps in
// float32. Dekker's split, not fma: GLSL's fma need not be fused.
#ifndef VKML_FF_GLSL
#define VKML_FF_GLSL
void ff_two_sum(float a, float b, out float s, out float e) {
  precise float ss = a + b;
  precise float bv = ss - a;
  precise float err = (a - (ss - bv)) + (b - bv);
  s = ss;
  e = err;
}

void ff_two_prod(float a, float b, out float p, out float e) {
  precise float pp = a * b;
  precise float ca = 4097.0 * a, cb = 4097.0 * b;  // 2^12 + 1
  precise float ah = ca - (ca - a), bh = cb - (cb - b);
  precise float al = a - ah, bl = b - bh;
  precise float err = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
  p = pp;
  e = isinf(pp) || isinf(ca) || isinf(cb) ? 0.0 : err;
}

// (ah + al) + (bh + bl), normalised.
void ff_add(float ah, float al, float bh, float bl, out float h, out float l) {
  float s, e;
  ff_two_sum(ah, bh, s, e);
  precise float rest = e + (al + bl);
  precise float hh = s + rest;
  precise float ll = rest - (hh - s);
  h = hh;
  l = ll;
}
#endif
