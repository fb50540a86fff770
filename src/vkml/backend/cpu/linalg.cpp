#include "vkml/backend/cpu/linalg.h"

#include <cblas.h>

// The scipy-openblas32 wheel (cmake/vkml_blas.cmake) exports OpenBLAS with every symbol
// prefixed `scipy_`, so two OpenBLAS copies can live in one process without clashing.
#ifdef VKML_BLAS_SCIPY_PREFIX
#define cblas_sgemm scipy_cblas_sgemm
#define cblas_dgemm scipy_cblas_dgemm
#define openblas_set_num_threads scipy_openblas_set_num_threads
#endif

#include <algorithm>
#include <bit>
#include <climits>
#include <type_traits>
#include <vector>

#include "vkml/backend/cpu/onednn.h"
#include "vkml/backend/cpu/parallel.h"

namespace vk::cpu {
inline namespace VKML_CPU_ISA {
namespace {

// vkml owns the threads: OpenBLAS runs every call on the calling thread.
void blas_single_threaded() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

struct Layout {
  bool ok;
  bool trans;  // the matrix is stored column-major: pass it to row-major BLAS as a transpose
  int64_t ld;
};

// How a rows x cols matrix with element strides (rs, cs) is described to row-major BLAS, if it can
// be without a copy. A dim of extent 1 may have any stride.
Layout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  Layout l{false, false, 0};
  if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= std::max<int64_t>(cols, 1)))
    l = {true, false, rows <= 1 ? std::max<int64_t>(cols, 1) : rs};
  else if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= std::max<int64_t>(rows, 1)))
    l = {true, true, cols <= 1 ? std::max<int64_t>(rows, 1) : cs};
  if (l.ld > INT_MAX) l.ok = false;
  return l;
}

// Packs a strided rows x cols matrix into `buf` row-major.
template <class T>
const T* pack(MatRef<T> m, int64_t rows, int64_t cols, std::vector<T>& buf) {
  buf.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) buf[i * cols + j] = m.data[i * m.rs + j * m.cs];
  return buf.data();
}

void blas_call(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc) {
  if (use_onednn_sgemm(ta, tb, m, n, k))
    return sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
void blas_call(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b,
               int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0, a, lda, b, ldb, beta, c, ldc);
}
template <class CT>  // float or bfloat16
void blas_call(bool ta, bool tb, int m, int n, int k, const BFloat16* a, int lda, const BFloat16* b,
               int ldb, float beta, CT* c, int ldc) {
  bf16_gemm(ta, tb, m, n, k, a, lda, b, ldb, beta != 0.0f, c, ldc);
}

// Integer product (no BLAS): rows of C in i-k-j order, wrapping on overflow like PyTorch.
template <class T>
void int_gemm(int64_t M, int64_t N, int64_t K, MatRef<T> A, MatRef<T> B, T* C, int64_t ldc) {
  using U = std::make_unsigned_t<T>;
  for (int64_t i = 0; i < M; ++i) {
    U* c = reinterpret_cast<U*>(C + i * ldc);
    std::fill(c, c + N, U(0));
    for (int64_t k = 0; k < K; ++k) {
      U av = static_cast<U>(A.data[i * A.rs + k * A.cs]);
      const T* b = B.data + k * B.rs;
      if (B.cs == 1)
        for (int64_t j = 0; j < N; ++j) c[j] += av * static_cast<U>(b[j]);
      else
        for (int64_t j = 0; j < N; ++j) c[j] += av * static_cast<U>(b[j * B.cs]);
    }
  }
}

}  // namespace

template <class T, class CT>
void gemm(int64_t M, int64_t N, int64_t K, MatRef<T> A, MatRef<T> B, GemmAcc<T> beta, CT* C,
          int64_t ldc) {
  using Acc = GemmAcc<T>;
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        C[i * ldc + j] = beta == Acc(0) ? CT(Acc(0)) : CT(beta * static_cast<Acc>(C[i * ldc + j]));
    return;
  }
  if constexpr (std::is_same_v<T, BFloat16>)
    VK_CHECK(beta == 0.0f || beta == 1.0f, RuntimeError, "matmul: bfloat16 GEMM takes beta 0 or 1");
  VK_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && ldc <= INT_MAX, ShapeError,
           "matmul: a matrix extent above 2^31 - 1 (", M, " x ", K, " @ ", K, " x ", N,
           ") is not supported by BLAS");
  blas_single_threaded();
  std::vector<T> abuf, bbuf;
  Layout la = blas_layout(M, K, A.rs, A.cs);
  const T* ap = A.data;
  if (!la.ok) {
    ap = pack(A, M, K, abuf);
    la = {true, false, K};
  }
  Layout lb = blas_layout(K, N, B.rs, B.cs);
  const T* bp = B.data;
  if (!lb.ok) {
    bp = pack(B, K, N, bbuf);
    lb = {true, false, N};
  }
  blas_call(la.trans, lb.trans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), ap,
            static_cast<int>(la.ld), bp, static_cast<int>(lb.ld), beta, C,
            static_cast<int>(std::max<int64_t>(ldc, 1)));
}

template void gemm<float>(int64_t, int64_t, int64_t, MatRef<float>, MatRef<float>, float, float*,
                          int64_t);
template void gemm<double>(int64_t, int64_t, int64_t, MatRef<double>, MatRef<double>, double,
                           double*, int64_t);
template void gemm<BFloat16>(int64_t, int64_t, int64_t, MatRef<BFloat16>, MatRef<BFloat16>, float,
                             float*, int64_t);
template void gemm<BFloat16, BFloat16>(int64_t, int64_t, int64_t, MatRef<BFloat16>,
                                       MatRef<BFloat16>, float, BFloat16*, int64_t);

GemmTiles gemm_tiles(int64_t M, int64_t N, int64_t K, bool split_k) {
  // Each extra tile re-packs an operand panel inside BLAS and streams the other one through the
  // cache again: cut only big products, into few large tiles, along the longer side of C
  // (cutting rows re-packs B, cutting columns re-packs A). A power of two of them, so that 2, 4,
  // 8 ... threads get equal shares. Tiles of 512 rows rather than 128 from 1024 on: 1024 and
  // 2048 square at one thread run 16-20% faster (OpenBLAS's own blocks are a few hundred rows).
  constexpr double kTileMacs = 1 << 21;  // at least this much work per tile
  // ... or this much for a lone product (split_k: no batch to share out), cut on a side of
  // 64 from 128 on: a recurrent step's 16 x 512 x 128 and 16 x 128 x 512 then take two threads
  // (train.lstm at 2 threads: 5.45 -> 4.2 ms on a 2-core EPYC), ones twice that size four.
  constexpr double kLoneTileMacs = 1 << 19;
  constexpr int64_t kMinK = 512;            // and at least this much of K per slice
  constexpr int64_t kLongKSlice = 1024;     // K per slice when K is the long side
  constexpr int64_t kMaxPartial = 1 << 22;  // elements of all the slices' partials together
  constexpr int64_t kMaxTiles = 64;
  const double macs = static_cast<double>(M) * static_cast<double>(N) *
                      static_cast<double>(std::max<int64_t>(K, 1));
  const int64_t side = std::max(M, N);
  // rows (or columns) per tile, at least
  const int64_t min_side = side >= 1024 ? 512 : side >= 256 || !split_k ? 128 : 64;
  const int64_t by_work = static_cast<int64_t>(std::min<double>(kMaxTiles, macs / kTileMacs));
  const int64_t tiles_by_work =
      split_k ? static_cast<int64_t>(std::min<double>(kMaxTiles, macs / kLoneTileMacs)) : by_work;
  auto pow2_floor = [](int64_t v) {
    return v < 1 ? int64_t{1} : std::bit_floor(static_cast<uint64_t>(v));
  };
  // K much longer than both sides of C (a weight gradient: 512 x 128 over 2048 rows of a
  // batch): slices of K rather than tiles of C. Tiles would each re-pack the whole of the other
  // operand (B packing was 16% of a 512 x 128 x 2048 product cut in 4 row tiles); slices pack
  // every element once, at the price of a C-sized partial per slice, so only while those stay
  // small (a big C is cut into tiles, whose re-packing its size amortises).
  if (split_k && K >= 2 * side) {
    const double max_slices =
        std::min<double>(by_work, static_cast<double>(kMaxPartial) / (static_cast<double>(M) * N));
    const int64_t slices = pow2_floor(std::min(static_cast<int64_t>(max_slices), K / kLongKSlice));
    if (slices >= 2) return {M, N, slices};
  }
  const int64_t tiles = pow2_floor(std::min(tiles_by_work, side / min_side));
  if (tiles <= 1) {
    const int64_t ksplit = split_k ? pow2_floor(std::min(by_work, K / kMinK)) : 1;
    return {M, N, ksplit};
  }
  const int64_t len = (side + tiles - 1) / tiles;
  const int64_t block = std::min(side, (len + 15) / 16 * 16);
  return M >= N ? GemmTiles{block, N} : GemmTiles{M, block};
}

namespace {

// The product of A (B..., M, K) and B (B..., K, N) into `out` (B..., M, N), plus `bias` (N) on
// every row or (M, N) when given (2-D products of floating dtypes only). A bfloat16 product
// accumulates in float32 and is rounded into `out` once.
template <class T>
void product_into(const Tensor& A, const Tensor& B, const Tensor* bias, Tensor& out) {
  using Acc = GemmAcc<T>;
  constexpr bool kFloating = is_float_type<T>;
  const int64_t nd = A.ndim();
  const int64_t M = A.shape()[nd - 2], K = A.shape()[nd - 1], N = B.shape()[nd - 1];
  int64_t batch = 1;
  for (int64_t d = 0; d < nd - 2; ++d) batch *= A.shape()[d];
  const int64_t ars = A.strides()[nd - 2], acs = A.strides()[nd - 1];
  const int64_t brs = B.strides()[nd - 2], bcs = B.strides()[nd - 1];
  // K slices only for one floating product (a batch is parallel already; its partial sums would
  // cost a C per slice each)
  const GemmTiles tile = gemm_tiles(M, N, K, kFloating && batch == 1);
  const int64_t nr = (M + tile.rows - 1) / tile.rows, nc = (N + tile.cols - 1) / tile.cols;
  const int64_t nk = tile.ksplit;
  const int64_t klen = (K + nk - 1) / nk;
  const int64_t ntile = nr * nc * nk;
  const int64_t task_macs =
      std::max<int64_t>(tile.rows * tile.cols * std::max<int64_t>(klen, 1), 1);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / task_macs);
  const T* pa = A.data<T>();
  const T* pb = B.data<T>();
  // A bfloat16 product goes straight into the output (oneDNN rounds on store) unless K is
  // sliced: the slices are summed in a float32 C, rounded at the end.
  constexpr bool kNarrow = !std::is_same_v<Acc, T>;
  const bool wide_c = kNarrow && nk > 1;
  std::vector<Acc> wide(wide_c ? static_cast<size_t>(out.numel()) : 0);
  Acc* po = nullptr;
  if constexpr (kNarrow)
    po = wide.data();
  else
    po = out.data<T>();
  const T* pbias = bias ? bias->data<T>() : nullptr;
  const int64_t bias_cs = bias ? bias->strides().back() : 0;
  const int64_t bias_rs = bias && bias->ndim() == 2 ? bias->strides()[0] : 0;
  // K slice s > 0 writes its product to partial[s - 1] (M x N each).
  std::vector<Acc> partial(static_cast<size_t>((nk - 1) * M * N));
  parallel_for(batch * ntile, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / ntile, ti = t % ntile;
      const int64_t ks = ti % nk, tc = ti / nk;
      const int64_t r0 = tc / nc * tile.rows, r1 = std::min(M, r0 + tile.rows);
      const int64_t c0 = tc % nc * tile.cols, c1 = std::min(N, c0 + tile.cols);
      const int64_t k0 = ks * klen, k1 = std::min(K, k0 + klen);
      int64_t ao = 0, bo = 0, rest = bi;
      for (int64_t d = nd - 3; d >= 0; --d) {
        const int64_t idx = rest % A.shape()[d];
        rest /= A.shape()[d];
        ao += idx * A.strides()[d];
        bo += idx * B.strides()[d];
      }
      MatRef<T> am{pa + ao + r0 * ars + k0 * acs, ars, acs},
          bm{pb + bo + c0 * bcs + k0 * brs, brs, bcs};
      const int64_t at = bi * M * N + r0 * N + c0;
      if constexpr (kFloating) {
        const bool add_bias = pbias && ks == 0;
        // C's type: Acc, or the output's bfloat16 when it takes the product directly
        auto tile_product = [&](auto* cc) {
          using CT = std::remove_pointer_t<decltype(cc)>;
          // A float or double product takes the bias after its product, in cache: a C that
          // starts as the bias has the GEMM read it back (beta = 1), which cost oneDNN's sgemm
          // 7% of a 2048 x 128 x 384 layer (Zen 3). A bfloat16 one takes it before, rounded once.
          constexpr bool kAfter = !kNarrow;
          auto bias_row = [&](int64_t r) { return pbias + r * bias_rs + c0 * bias_cs; };
          if constexpr (kAfter) {
            gemm<T, CT>(r1 - r0, c1 - c0, k1 - k0, am, bm, Acc(0), cc, N);
            if (add_bias)
              for (int64_t r = r0; r < r1; ++r) {
                const T* b = bias_row(r);
                CT* c = cc + (r - r0) * N;
                if (bias_cs == 1)  // the common case, through a unit-stride pointer: vectorised
                  for (int64_t j = 0; j < c1 - c0; ++j) c[j] += b[j];
                else
                  for (int64_t j = 0; j < c1 - c0; ++j) c[j] += b[j * bias_cs];
              }
          } else {
            if (add_bias)
              for (int64_t r = r0; r < r1; ++r) {
                const T* b = bias_row(r);
                CT* c = cc + (r - r0) * N;
                for (int64_t j = 0; j < c1 - c0; ++j)
                  c[j] = static_cast<CT>(static_cast<Acc>(b[j * bias_cs]));
              }
            gemm<T, CT>(r1 - r0, c1 - c0, k1 - k0, am, bm, add_bias ? Acc(1) : Acc(0), cc, N);
          }
        };
        if (kNarrow && !wide_c)
          tile_product(out.data<T>() + at);
        else if (ks == 0)
          tile_product(po + at);
        else
          tile_product(partial.data() + ((ks - 1) * M + r0) * N + c0);
      } else {
        int_gemm<T>(r1 - r0, c1 - c0, K, am, bm, po + at, N);  // never sliced
      }
    }
  });
  if (nk > 1) {  // C += the other slices' products, in slice order
    parallel_for(M * N, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t s = 1; s < nk; ++s) {
        const Acc* p = partial.data() + (s - 1) * M * N;
        for (int64_t i = begin; i < end; ++i) po[i] += p[i];
      }
    });
  }
  if (wide_c) {
    T* dst = out.data<T>();
    parallel_for(out.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) dst[i] = T(wide[i]);
    });
  }
}

Tensor product(const Tensor& A, const Tensor& B, const Tensor* bias, const Meta& m) {
  Tensor out = Tensor::empty(m.shape, m.dtype);
  if (out.numel() == 0) return out;
  if (out.dtype() == DType::BFloat16)
    product_into<BFloat16>(A, B, bias, out);
  else
    VK_DISPATCH_NUMERIC(out.dtype(), "matmul", { product_into<T>(A, B, bias, out); });
  return out;
}

}  // namespace

VK_KERNEL(matmul) {
  (void)a;
  return product(in[0], in[1], nullptr, m);
}

VK_KERNEL(addmm) {
  (void)a;
  return product(in[1], in[2], &in[0], m);
}

}  // namespace VKML_CPU_ISA
}  // namespace vk::cpu
