// Double-double arithmetic (a value as hi + lo) for the float64 routines of divmod.glsl and
// trig.glsl: each step exact or rounded once below 2^-100, every operation `precise` so that no
// driver regroups it.
#ifndef VKML_DD_GLSL
#define VKML_DD_GLSL
void dd_two_sum(double a, double b, out double s, out double e) {
  precise double ss = a + b;
  precise double bv = ss - a;
  precise double err = (a - (ss - bv)) + (b - bv);
  s = ss;
  e = err;
}

void dd_two_prod(double a, double b, out double p, out double e) {
  precise double pp = a * b;
  precise double ca = 134217729.0lf * a, cb = 134217729.0lf * b;  // Dekker's split
  precise double ah = ca - (ca - a), bh = cb - (cb - b);
  precise double al = a - ah, bl = b - bh;
  precise double err = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
  p = pp;
  e = isinf(pp) || isinf(ca) || isinf(cb) ? 0.0lf : err;
}

// (ah + al) + (bh + bl), normalised.
void dd_add(double ah, double al, double bh, double bl, out double h, out double l) {
  double s, e;
  dd_two_sum(ah, bh, s, e);
  precise double rest = e + (al + bl);
  precise double hh = s + rest;
  precise double ll = rest - (hh - s);
  h = hh;
  l = ll;
}
#endif
