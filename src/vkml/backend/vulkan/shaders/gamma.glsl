// lgamma and digamma for positive arguments in the shaders' real type MR (math.comp's lgamma and
// digamma, special.comp's incomplete gamma and gamma sample derivative): double where the device has float64, float alone
// elsewhere. Needs vmath.glsl's vm_log and divmod.glsl's dm_log1p.

// lgamma(2 + z) = (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1) / k z^k for |z| <= 1/2: the terms
// fall as (z/2)^k (to z^31 here), and none cancels another.
MR mt_lgamma2p(MR z) {
  precise MR s = MR(-1.5021384080754142e-11lf);
  s = MR(3.1044247747322276e-11lf) + z * s;
  s = MR(-6.4229645638381e-11lf) + z * s;
  s = MR(1.330476437424449e-10lf) + z * s;
  s = MR(-2.7595228851242334e-10lf) + z * s;
  s = MR(5.731367241678862e-10lf) + z * s;
  s = MR(-1.1921401405860912e-09lf) + z * s;
  s = MR(2.4836745438024785e-09lf) + z * s;
  s = MR(-5.183475041970047e-09lf) + z * s;
  s = MR(1.0838659214896955e-08lf) + z * s;
  s = MR(-2.2711094608943164e-08lf) + z * s;
  s = MR(4.7698101693639804e-08lf) + z * s;
  s = MR(-1.0043224823968099e-07lf) + z * s;
  s = MR(2.1207184805554665e-07lf) + z * s;
  s = MR(-4.492469198764566e-07lf) + z * s;
  s = MR(9.55141213040742e-07lf) + z * s;
  s = MR(-2.039215753801366e-06lf) + z * s;
  s = MR(4.374866789907488e-06lf) + z * s;
  s = MR(-9.439488275268397e-06lf) + z * s;
  s = MR(2.050721277567069e-05lf) + z * s;
  s = MR(-4.492623673813314e-05lf) + z * s;
  s = MR(9.945751278180853e-05lf) + z * s;
  s = MR(-0.00022315475845357939lf) + z * s;
  s = MR(0.0005096695247430425lf) + z * s;
  s = MR(-0.001192753911703261lf) + z * s;
  s = MR(0.0028905103307415234lf) + z * s;
  s = MR(-0.007385551028673986lf) + z * s;
  s = MR(0.020580808427784546lf) + z * s;
  s = MR(-0.0673523010531981lf) + z * s;
  s = MR(0.3224670334241132lf) + z * s;
  precise MR r = z * (MR(0.42278433509846713lf) + z * s);
  return r;
}

// lgamma for x > 0, finite: near [1.5, 2.5] by the series above (below 1.5 by lgamma(x) =
// lgamma(x + 1) - log(x), with x - 1 exact; above 2.5 by lgamma(x) = lgamma(x - 1) + log(x - 1),
// at most 8 steps, none cancelling); from 10 on, Stirling's series.
MR mt_lgamma_pos(MR x) {
  if (x >= MR(10.0lf)) {
    precise MR z = MR(1.0lf) / (x * x);
    precise MR series =
        (MR(0.08333333333333333lf) +
         z * (MR(-0.002777777777777778lf) +
              z * (MR(0.0007936507936507937lf) +
                   z * (MR(-0.0005952380952380953lf) +
                        z * (MR(0.0008417508417508417lf) +
                             z * (MR(-0.0019175269175269176lf) + z * MR(0.00641025641025641lf))))))) / x;
    precise MR r = (x - MR(0.5lf)) * vm_log(x) - x + MR(0.9189385332046728lf) + series;
    return r;
  }
  if (x < MR(0.5lf)) {
    precise MR z = (x + MR(2.0lf)) - MR(2.0lf);
    precise MR r = mt_lgamma2p(z) - vm_log(x * (x + MR(1.0lf)));
    return r;
  }
  if (x < MR(1.5lf)) {
    precise MR z = x - MR(1.0lf);  // exact
    precise MR r = mt_lgamma2p(z) - dm_log1p(z);
    return r;
  }
  precise MR y = x;
  precise MR up = MR(1.0lf);
  for (int k = 0; k < 10 && y > MR(2.5lf); ++k) {
    y -= MR(1.0lf);
    up *= y;
  }
  precise MR r = mt_lgamma2p(y - MR(2.0lf)) + vm_log(up);
  return r;
}

// backend/cpu/math.cpp's digamma for x > 0: up to 10 steps psi(x) = psi(x + 1) - 1/x, then the
// asymptotic series (math.comp's mt_digamma reflects the rest).
MR mt_digamma_pos(MR x) {
  precise MR result = MR(0.0lf);
  precise MR y = x;
  for (int k = 0; k < 12 && y < MR(10.0lf); ++k) {
    result -= MR(1.0lf) / y;
    y += MR(1.0lf);
  }
  precise MR z = MR(1.0lf) / (y * y);
  precise MR tail =
      z * (MR(1.0lf) / MR(12.0lf) -
           z * (MR(1.0lf) / MR(120.0lf) -
                z * (MR(1.0lf) / MR(252.0lf) -
                     z * (MR(1.0lf) / MR(240.0lf) -
                          z * (MR(1.0lf) / MR(132.0lf) - z * (MR(691.0lf) / MR(32760.0lf) - z / MR(12.0lf)))))));
  precise MR r = result + vm_log(y) - MR(0.5lf) / y - tail;
  return r;
}
