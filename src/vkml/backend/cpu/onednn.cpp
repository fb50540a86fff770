// bfloat16 GEMM through oneDNN (onednn.h). Why oneDNN: measured on an AMD EPYC Zen 4 (AVX512-BF16),
// one thread, its matmul primitive ran bfloat16 products at 205-220 GFLOP/s from 256 x 512 x 784
// to 2048^3 (132 at 64^3), against 42-101 for widening to float32 and calling OpenBLAS's sgemm and
// 116-216 for PyTorch 2.13's own bfloat16 matmul (oneDNN 3.x inside); Debian's and the wheel's
// OpenBLAS are built without sbgemm, and Debian's BLIS has no bfloat16 product.
#include "vkml/backend/cpu/onednn.h"

#include <string>

#include "vkml/core/error.h"

#if defined(VKML_HAVE_ONEDNN)
#include <omp.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "vkml/backend/cpu/capability.h"
#include "vkml/backend/cpu/parallel.h"

namespace vk::cpu {
namespace {

const char* isa_name(dnnl_cpu_isa_t isa) {
  if ((isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx) return "AMX";
  if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16) return "AVX512-BF16";
  return nullptr;
}

struct Support {
  bool native = false;  // bfloat16 GEMM hardware
  bool avx512 = false;  // oneDNN's AVX-512 convolutions
  std::string name;
};

const Support& support() {
  static const Support s = [] {
    // The capability variable describes a machine without AVX-512: oneDNN must not use it either
    // (before any other oneDNN call; the setting is read once).
    const char* env = std::getenv("VKML_CPU_CAPABILITY");
    if (env != nullptr && *env != '\0') {
      const auto asked = parse_cpu_capability(env, CpuCapability::Avx512);
      if (asked && *asked != CpuCapability::Avx512) dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2);
    }
    const dnnl_version_t* v = dnnl_version();
    const std::string lib = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
                            "." + std::to_string(v->patch);
    const char* isa = isa_name(dnnl_get_effective_cpu_isa());
    Support r;
    r.native = isa != nullptr;
    r.avx512 =
        (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
    r.name =
        isa ? lib + " " + isa : lib + " (no AVX512-BF16 or AMX here: bfloat16 widens to sgemm)";
    return r;
  }();
  return s;
}

// One primitive per distinct product: creating one costs 10-100 us, running a small one less.
struct Key {
  int64_t M, N, K, lda, ldb, ldc;
  bool ta, tb, accumulate, c_bf16;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    for (int64_t v :
         {k.M, k.N, k.K, k.lda, k.ldb, k.ldc,
          int64_t{k.ta} | int64_t{k.tb} << 1 | int64_t{k.accumulate} << 2 | int64_t{k.c_bf16} << 3})
      h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};
struct Product {
  dnnl::memory::desc a, b, c, scratch;
  dnnl::matmul run;
};

const dnnl::engine& engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

std::shared_ptr<const Product> make_product(const Key& k) {
  using dt = dnnl::memory::data_type;
  using dims = dnnl::memory::dims;
  auto p = std::make_shared<Product>();
  p->a = dnnl::memory::desc({k.M, k.K}, dt::bf16, k.ta ? dims{1, k.lda} : dims{k.lda, 1});
  p->b = dnnl::memory::desc({k.K, k.N}, dt::bf16, k.tb ? dims{1, k.ldb} : dims{k.ldb, 1});
  p->c = dnnl::memory::desc({k.M, k.N}, k.c_bf16 ? dt::bf16 : dt::f32, dims{k.ldc, 1});
  dnnl::primitive_attr attr;
  // The caller's thread owns the scratch memory: no allocation per call, none shared.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (k.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->a, p->b, p->c), attr, engine());
  p->scratch = pd.scratchpad_desc();
  p->run = dnnl::matmul(pd);
  return p;
}

// oneDNN threads with OpenMP; vkml's pool already gave this thread its share of the work, so
// oneDNN runs on it alone. The setting is the calling thread's OpenMP state, which every library
// on the same libgomp shares (torch's, when torch was imported first: its get_num_threads() read
// 1 after a vkml bfloat16 matmul while this was set once per thread), so it is put back after.
class OneOpenMPThread {
 public:
  OneOpenMPThread() : saved_(omp_get_max_threads()) {
    if (saved_ != 1) omp_set_num_threads(1);
  }
  ~OneOpenMPThread() {
    if (saved_ != 1) omp_set_num_threads(saved_);
  }
  OneOpenMPThread(const OneOpenMPThread&) = delete;
  OneOpenMPThread& operator=(const OneOpenMPThread&) = delete;

 private:
  int saved_;
};

std::shared_ptr<const Product> find_product(const Key& k) {
  // Programs use a few dozen shapes; a program whose shapes never repeat (a growing sequence)
  // must not grow this without bound.
  constexpr size_t kMaxProducts = 1024;
  static std::mutex mu;
  static std::unordered_map<Key, std::shared_ptr<const Product>, KeyHash> products;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = products.find(k); it != products.end()) return it->second;
  }
  auto p = make_product(k);  // outside the lock: two threads may both build one, the first kept
  std::lock_guard<std::mutex> lock(mu);
  if (products.size() >= kMaxProducts) products.clear();
  return products.try_emplace(k, std::move(p)).first->second;
}

}  // namespace

bool has_onednn() { return true; }
bool has_bf16_gemm() { return support().native; }
const char* bf16_gemm_name() { return support().name.c_str(); }

namespace {

template <class C_t>
void run_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const BFloat16* A, int64_t lda,
              const BFloat16* B, int64_t ldb, bool accumulate, C_t* C, int64_t ldc) {
  VK_CHECK(has_bf16_gemm(), RuntimeError, "matmul: bfloat16 GEMM called without ",
           "AVX512-BF16/AMX (", bf16_gemm_name(), ")");
  if (M == 0 || N == 0 || K == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = C_t(0.0f);
    return;
  }
  const OneOpenMPThread one_thread;
  thread_local std::vector<uint8_t> scratch;
  thread_local dnnl::stream stream(engine());
  try {
    const auto p =
        find_product({M, N, K, lda, ldb, ldc, ta, tb, accumulate, std::is_same_v<C_t, BFloat16>});
    if (scratch.size() < p->scratch.get_size()) scratch.resize(p->scratch.get_size());
    // const_cast: oneDNN's memory objects take void*; the inputs are only read.
    dnnl::memory a(p->a, engine(), const_cast<BFloat16*>(A));
    dnnl::memory b(p->b, engine(), const_cast<BFloat16*>(B));
    dnnl::memory c(p->c, engine(), C);
    dnnl::memory s(p->scratch, engine(), scratch.data());
    p->run.execute(
        stream,
        {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, s}});
    stream.wait();
  } catch (const dnnl::error& e) {
    throw RuntimeError(std::string("matmul: oneDNN's bfloat16 product (") + std::to_string(M) +
                       " x " + std::to_string(K) + " @ " + std::to_string(K) + " x " +
                       std::to_string(N) + ") failed: " + e.what());
  }
}

}  // namespace

void bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const BFloat16* A, int64_t lda,
               const BFloat16* B, int64_t ldb, bool accumulate, float* C, int64_t ldc) {
  run_gemm(ta, tb, M, N, K, A, lda, B, ldb, accumulate, C, ldc);
}
void bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const BFloat16* A, int64_t lda,
               const BFloat16* B, int64_t ldb, bool accumulate, BFloat16* C, int64_t ldc) {
  run_gemm(ta, tb, M, N, K, A, lda, B, ldb, accumulate, C, ldc);
}

namespace {

// One image's convolution in oneDNN's own layouts, and the reorders into and out of them.
struct Conv {
  dnnl::memory::desc x, w, y, bias;        // plain: nchw / oihw / nchw / (O)
  dnnl::memory::desc xb, wb, yb, scratch;  // the primitive's (blocked) layouts
  dnnl::reorder x_in, w_in, y_out;         // empty where the layouts are equal
  dnnl::convolution_forward run;
};

std::shared_ptr<const Conv> make_conv(const ConvShape& s, bool has_bias) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t OH = (s.H + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  const int64_t OW = (s.W + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  auto c = std::make_shared<Conv>();
  c->x = dnnl::memory::desc({1, s.C, s.H, s.W}, dt::f32, tag::nchw);
  c->w = dnnl::memory::desc({s.O, s.C, s.kh, s.kw}, dt::f32, tag::oihw);
  c->y = dnnl::memory::desc({1, s.O, OH, OW}, dt::f32, tag::nchw);
  c->bias = dnnl::memory::desc({s.O}, dt::f32, tag::x);
  const auto any = [](const dnnl::memory::desc& d) {
    return dnnl::memory::desc(d.dims(), dt::f32, tag::any);
  };
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::memory::dims stride{s.sh, s.sw}, dil{s.dh - 1, s.dw - 1}, pad{s.ph, s.pw};
  const auto desc =
      has_bias ? dnnl::convolution_forward::desc(
                     dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                     any(c->x), any(c->w), c->bias, any(c->y), stride, dil, pad, pad)
               : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::convolution_direct, any(c->x),
                                                 any(c->w), any(c->y), stride, dil, pad, pad);
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine());
  c->xb = pd.src_desc();
  c->wb = pd.weights_desc();
  c->yb = pd.dst_desc();
  c->scratch = pd.scratchpad_desc();
  c->run = dnnl::convolution_forward(pd);
  const auto reorder = [](const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
    return from == to ? dnnl::reorder()
                      : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
  };
  c->x_in = reorder(c->x, c->xb);
  c->w_in = reorder(c->w, c->wb);
  c->y_out = reorder(c->yb, c->y);
  return c;
}

std::shared_ptr<const Conv> find_conv(const ConvShape& s, bool has_bias) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, bool>;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const Conv>> convs;
  const Key k{s.C, s.H, s.W, s.O, s.kh, s.kw, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, has_bias};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = convs.find(k); it != convs.end()) return it->second;
  }
  auto c = make_conv(s, has_bias);
  std::lock_guard<std::mutex> lock(mu);
  if (convs.size() >= 256) convs.clear();  // a program uses a few dozen
  return convs.try_emplace(k, std::move(c)).first->second;
}

// Runs `r` (when it is one) from `from` to `to`.
void reorder_into(const dnnl::reorder& r, dnnl::memory& from, dnnl::memory& to,
                  dnnl::stream& stream) {
  r.execute(stream, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

}  // namespace

bool use_onednn_conv(const ConvShape& s) {
  // Images are the unit of parallel work here (within one, oneDNN would split by the thread
  // count, and results must not depend on it): a batch below 8 stays with im2col + GEMM, which
  // splits each image's positions over the pool.
  constexpr int64_t kMinBatch = 8;
  return support().avx512 && s.N >= kMinBatch && s.C >= 32 && s.O >= 32 && s.kh * s.kw > 1;
}

void conv2d_f32(const ConvShape& s, const float* x, const float* w, const float* bias, float* y) {
  try {
    // oneDNN fixes a primitive's thread count when it is created: created here under one
    // OpenMP thread, each per-image call runs on its caller alone (created with the default, each
    // call ran on every core: vk.set_num_threads(1) used two).
    const auto c = [&] {
      const OneOpenMPThread one_thread;
      return find_conv(s, bias != nullptr);
    }();
    const size_t x_image = c->x.get_size() / sizeof(float),
                 y_image = c->y.get_size() / sizeof(float);
    // The weights in the primitive's layout, once per call, shared read-only by every image.
    std::vector<uint8_t> wbuf;
    const void* wb = w;
    if (c->w_in) {
      const OneOpenMPThread one_thread;
      dnnl::stream stream(engine());
      wbuf.resize(c->wb.get_size());
      dnnl::memory from(c->w, engine(), const_cast<float*>(w)), to(c->wb, engine(), wbuf.data());
      reorder_into(c->w_in, from, to, stream);
      stream.wait();
      wb = wbuf.data();
    }
    std::exception_ptr failed;
    std::mutex failed_mu;
    parallel_for(s.N, 1, [&](int64_t begin, int64_t end) {
      try {
        const OneOpenMPThread one_thread;
        thread_local dnnl::stream stream(engine());
        thread_local std::vector<uint8_t> xbuf, ybuf, scratch;
        if (xbuf.size() < c->xb.get_size()) xbuf.resize(c->xb.get_size());
        if (ybuf.size() < c->yb.get_size()) ybuf.resize(c->yb.get_size());
        if (scratch.size() < c->scratch.get_size()) scratch.resize(c->scratch.get_size());
        dnnl::memory wm(c->wb, engine(), const_cast<void*>(wb));
        dnnl::memory sm(c->scratch, engine(), scratch.data());
        dnnl::memory bm(c->bias, engine(), const_cast<float*>(bias));
        for (int64_t n = begin; n < end; ++n) {
          dnnl::memory xu(c->x, engine(), const_cast<float*>(x + n * x_image));
          dnnl::memory yu(c->y, engine(), y + n * y_image);
          dnnl::memory xm = c->x_in ? dnnl::memory(c->xb, engine(), xbuf.data()) : xu;
          dnnl::memory ym = c->y_out ? dnnl::memory(c->yb, engine(), ybuf.data()) : yu;
          if (c->x_in) reorder_into(c->x_in, xu, xm, stream);
          std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, xm},
                                                     {DNNL_ARG_WEIGHTS, wm},
                                                     {DNNL_ARG_DST, ym},
                                                     {DNNL_ARG_SCRATCHPAD, sm}};
          if (bias) args.insert({DNNL_ARG_BIAS, bm});
          c->run.execute(stream, args);
          if (c->y_out) reorder_into(c->y_out, ym, yu, stream);
        }
        stream.wait();
      } catch (...) {
        std::lock_guard<std::mutex> lock(failed_mu);
        if (!failed) failed = std::current_exception();
      }
    });
    if (failed) std::rethrow_exception(failed);
  } catch (const dnnl::error& e) {
    throw RuntimeError("conv2d: oneDNN's convolution (" + std::to_string(s.N) + " x " +
                       std::to_string(s.C) + " x " + std::to_string(s.H) + " x " +
                       std::to_string(s.W) + ", " + std::to_string(s.O) + " filters " +
                       std::to_string(s.kh) + " x " + std::to_string(s.kw) +
                       ") failed: " + e.what());
  }
}

}  // namespace vk::cpu

#else  // no oneDNN in this build: bfloat16 products widen to float32 (sgemm)

namespace vk::cpu {

bool has_onednn() { return false; }
bool has_bf16_gemm() { return false; }
const char* bf16_gemm_name() { return "no oneDNN in this build: bfloat16 widens to sgemm"; }
namespace {
[[noreturn]] void no_onednn(int64_t M, int64_t N, int64_t K) {
  throw RuntimeError("matmul: bfloat16 GEMM (" + std::to_string(M) + " x " + std::to_string(K) +
                     " @ " + std::to_string(K) + " x " + std::to_string(N) +
                     ") called in a build without oneDNN");
}
}  // namespace
void bf16_gemm(bool, bool, int64_t M, int64_t N, int64_t K, const BFloat16*, int64_t,
               const BFloat16*, int64_t, bool, float*, int64_t) {
  no_onednn(M, N, K);
}
void bf16_gemm(bool, bool, int64_t M, int64_t N, int64_t K, const BFloat16*, int64_t,
               const BFloat16*, int64_t, bool, BFloat16*, int64_t) {
  no_onednn(M, N, K);
}
bool use_onednn_conv(const ConvShape&) { return false; }
void conv2d_f32(const ConvShape& s, const float*, const float*, const float*, float*) {
  throw RuntimeError("conv2d: oneDNN's convolution (" + std::to_string(s.N) +
                     " images) called in a build without oneDNN");
}

}  // namespace vk::cpu

#endif
