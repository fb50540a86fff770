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
  bool native = false;       // bfloat16 GEMM hardware
  bool direct_conv = false;  // oneDNN's AVX2/AVX-512 direct convolutions
  bool avx512 = false;       // oneDNN's kernels are its AVX-512 ones (else AVX2 or narrower)
  std::string name;
};

const Support& support() {
  static const Support s = [] {
    // The capability variable describes a machine without AVX-512 (or without AVX2): oneDNN must
    // not use it either (before any other oneDNN call; the setting is read once).
    const char* env = std::getenv("VKML_CPU_CAPABILITY");
    if (env != nullptr && *env != '\0') {
      const auto asked = parse_cpu_capability(env, CpuCapability::Avx512);
      if (asked && *asked == CpuCapability::Avx2) dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2);
      if (asked && *asked == CpuCapability::Default) dnnl_set_max_cpu_isa(dnnl_cpu_isa_sse41);
    }
    const dnnl_version_t* v = dnnl_version();
    const std::string lib = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
                            "." + std::to_string(v->patch);
    const char* isa = isa_name(dnnl_get_effective_cpu_isa());
    Support r;
    r.native = isa != nullptr;
    r.direct_conv = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2;
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

SgemmChoice sgemm_choice() {
  static const SgemmChoice choice = [] {
    const char* env = std::getenv("VKML_SGEMM");
    const std::string asked = env != nullptr ? env : "";
    if (asked == "openblas" || !support().direct_conv) return SgemmChoice::Blas;
    return asked == "onednn" ? SgemmChoice::Onednn : SgemmChoice::ByShape;
  }();
  return choice;
}

bool use_onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
  switch (sgemm_choice()) {
    case SgemmChoice::Blas:
      return false;
    case SgemmChoice::Onednn:
      return true;
    case SgemmChoice::ByShape:
      break;
  }
  constexpr double kMinMacs = 1 << 18;
  const double macs = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (support().avx512) {
    // Below a few microseconds of work oneDNN's call costs more (0.25 us on Zen 4).
    if (macs < kMinMacs) return false;
    // Measured on Zen 4, one thread (oneDNN 2.6.3 against OpenBLAS, GFLOP/s): oneDNN ahead from
    // 128 columns of C on (16 x 128 x 512: 114 against 77; 32 x 4096 x 9: 82 against 37; 1024^3:
    // 109 against 100), behind on narrow C (64 x 72 x 512 with B transposed: 48 against 86; 64 x
    // 10 x 1024: 49 against 69).
    return N >= 128;
  }
  // oneDNN's AVX2 sgemm, measured on Zen 3 over 112 products (transformer, nanoGPT, MLP and square
  // shapes, the four layouts; one thread, GFLOP/s, OpenBLAS 0.3.34 Haswell kernels beside it):
  // 5-15% ahead of OpenBLAS on most (768 x 64 x 256: 96 against 85; 2048 x 128 x 128: 92 against
  // 88), narrow C included, but far behind with A stored transposed (weight gradients, g^T x)
  // unless C is narrow and A small (2048 x 128 x 128: 42 against 82; 384 x 128 x 2048: 76 against
  // 90; 192 x 64 x 768 ahead, 89 against 83), and with B untransposed 512+ columns wide (2048 x
  // 512 x 128: 70 against 87; 512^3: 63 against 86). Over the set, 196 ms against OpenBLAS's 197
  // and 231 for the AVX-512 rule here.
  // Small products too (attention's per-head 64 x 64 x 32 and 64 x 32 x 64, in every layout): over
  // 380 shapes from 8 to 128 a side, oneDNN ran those of 2^15 to 2^18 multiply-adds 12-18% faster
  // (206 of 208 ahead; 64 x 64 x 32 with B transposed 4.6 against 5.4 us a call: OpenBLAS packs
  // both operands and, for beta = 0, clears C a row at a time), below 2^15 20% slower.
  constexpr double kMinMacsAvx2 = 1 << 15;
  if (macs < kMinMacsAvx2) return false;
  if (ta && (N > 192 || static_cast<double>(M) * static_cast<double>(K) >= kMinMacs)) return false;
  if (!tb && N >= 512 && M >= 128 && K >= 128) return false;
  return true;
}

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const OneOpenMPThread one_thread;
  const dnnl_status_t st =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  VK_CHECK(st == dnnl_success, RuntimeError, "matmul: oneDNN's sgemm (", M, " x ", K, " @ ", K,
           " x ", N, ") failed with status ", static_cast<int>(st));
}

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

// One oneDNN convolution pass (forward, backward data or backward weights) over a fixed number of
// images, in the primitive's own (blocked) layouts: it reads `a` and `b` and writes `c`, each
// reordered from or to vkml's plain layout (nchw / oihw) where the primitive wants another.
struct ConvPass {
  dnnl::memory::desc a, b, c, bias;        // plain
  dnnl::memory::desc ab, bb, cb, scratch;  // the primitive's
  dnnl::reorder a_in, b_in, c_out;         // empty where the layouts are equal
  int arg_a, arg_b, arg_c;
  dnnl::primitive run;
};

enum class PassKind { Forward, BackwardData, BackwardWeights };

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::memory::desc any_layout(const dnnl::memory::desc& d) {
  return dnnl::memory::desc(d.dims(), dt::f32, tag::any);
}

dnnl::reorder reorder_between(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  return from == to ? dnnl::reorder()
                    : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
}

// What one pass covers: `images` images, and of the channels the pass splits (the output's for
// the forward and the weight gradient, the input's for the input gradient) `slice` of the full
// count (the full count: no split). A sliced tensor keeps the full tensor's strides.
struct PassGeometry {
  int64_t images, slice;
  PassKind kind;
  bool has_bias;
  auto key() const { return std::tuple(images, slice, static_cast<int>(kind), has_bias); }
};

// A pass of geometry g over convolutions of shape s. Created under one OpenMP thread: oneDNN
// fixes a primitive's thread count when it is created (created with the default, each call
// vkml's pool made ran on every core: vk.set_num_threads(1) used two).
std::shared_ptr<const ConvPass> make_pass(const ConvShape& s, const PassGeometry& g) {
  const int64_t OH = (s.H + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  const int64_t OW = (s.W + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  const bool split_input = g.kind == PassKind::BackwardData;
  const int64_t C = split_input ? g.slice : s.C, O = split_input ? s.O : g.slice;
  const int64_t kk = s.kh * s.kw;
  using dims = dnnl::memory::dims;
  // Plain layouts with the full tensors' strides (a slice of channels is a strided view).
  const dnnl::memory::desc x({g.images, C, s.H, s.W}, dt::f32,
                             dims{s.C * s.H * s.W, s.H * s.W, s.W, 1});
  const dnnl::memory::desc w({O, C, s.kh, s.kw}, dt::f32, dims{s.C * kk, kk, s.kw, 1});
  const dnnl::memory::desc y({g.images, O, OH, OW}, dt::f32, dims{s.O * OH * OW, OH * OW, OW, 1});
  const dnnl::memory::dims stride{s.sh, s.sw}, dil{s.dh - 1, s.dw - 1}, pad{s.ph, s.pw};
  const auto direct = dnnl::algorithm::convolution_direct;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto p = std::make_shared<ConvPass>();
  p->bias = dnnl::memory::desc({O}, dt::f32, tag::x);
  const auto prop = g.kind == PassKind::Forward ? dnnl::prop_kind::forward_inference
                                                : dnnl::prop_kind::forward_training;
  const auto fwd_desc =
      g.has_bias ? dnnl::convolution_forward::desc(prop, direct, any_layout(x), any_layout(w),
                                                   p->bias, any_layout(y), stride, dil, pad, pad)
                 : dnnl::convolution_forward::desc(prop, direct, any_layout(x), any_layout(w),
                                                   any_layout(y), stride, dil, pad, pad);
  const dnnl::convolution_forward::primitive_desc fwd(fwd_desc, attr, engine());
  // Which tensor each pass reads (a, b) and writes (c), as oneDNN names its argument.
  const auto set_args = [&](const dnnl::memory::desc& a, int arg_a, const dnnl::memory::desc& b,
                            int arg_b, const dnnl::memory::desc& c, int arg_c) {
    p->a = a, p->b = b, p->c = c;
    p->arg_a = arg_a, p->arg_b = arg_b, p->arg_c = arg_c;
  };
  // The primitive, its layouts of a, b and c, and its scratch memory.
  const auto finish = [&]<class Primitive>(const typename Primitive::primitive_desc& pd) {
    p->ab = pd.query_md(dnnl::query::exec_arg_md, p->arg_a);
    p->bb = pd.query_md(dnnl::query::exec_arg_md, p->arg_b);
    p->cb = pd.query_md(dnnl::query::exec_arg_md, p->arg_c);
    p->scratch = pd.scratchpad_desc();
    p->run = Primitive(pd);
  };
  switch (g.kind) {
    case PassKind::Forward:
      set_args(x, DNNL_ARG_SRC, w, DNNL_ARG_WEIGHTS, y, DNNL_ARG_DST);
      finish.operator()<dnnl::convolution_forward>(fwd);
      break;
    case PassKind::BackwardData:
      set_args(y, DNNL_ARG_DIFF_DST, w, DNNL_ARG_WEIGHTS, x, DNNL_ARG_DIFF_SRC);
      finish.operator()<dnnl::convolution_backward_data>(
          {dnnl::convolution_backward_data::desc(direct, any_layout(x), any_layout(w),
                                                 any_layout(y), stride, dil, pad, pad),
           attr, engine(), fwd});
      break;
    case PassKind::BackwardWeights:
      set_args(x, DNNL_ARG_SRC, y, DNNL_ARG_DIFF_DST, w, DNNL_ARG_DIFF_WEIGHTS);
      finish.operator()<dnnl::convolution_backward_weights>(
          {dnnl::convolution_backward_weights::desc(direct, any_layout(x), any_layout(w),
                                                    any_layout(y), stride, dil, pad, pad),
           attr, engine(), fwd});
      break;
  }
  p->a_in = reorder_between(p->a, p->ab);
  p->b_in = reorder_between(p->b, p->bb);
  p->c_out = reorder_between(p->cb, p->c);
  return p;
}

std::shared_ptr<const ConvPass> find_pass(const ConvShape& s, const PassGeometry& g) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, decltype(g.key())>;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const ConvPass>> passes;
  const Key k{s.C, s.H, s.W, s.O, s.kh, s.kw, s.sh, s.sw, s.ph, s.pw, s.dh, s.dw, g.key()};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = passes.find(k); it != passes.end()) return it->second;
  }
  std::shared_ptr<const ConvPass> p;
  {
    const OneOpenMPThread one_thread;
    p = make_pass(s, g);
  }
  std::lock_guard<std::mutex> lock(mu);
  if (passes.size() >= 512) passes.clear();  // a program uses a few dozen
  return passes.try_emplace(k, std::move(p)).first->second;
}

// `data` (plain) in the layout `blocked`, in `buf` when a reorder is needed (else `data` itself).
dnnl::memory in_layout(const dnnl::reorder& r, const dnnl::memory::desc& plain,
                       const dnnl::memory::desc& blocked, const void* data,
                       std::vector<uint8_t>& buf, dnnl::stream& stream) {
  dnnl::memory from(plain, engine(), const_cast<void*>(data));
  if (!r) return from;
  if (buf.size() < blocked.get_size()) buf.resize(blocked.get_size());
  dnnl::memory to(blocked, engine(), buf.data());
  r.execute(stream, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  return to;
}

// One call of a pass: its geometry and where it reads and writes in vkml's plain tensors.
struct PassItem {
  PassGeometry geometry;
  const float *a, *b;
  float* c;
  const float* bias;  // null: none
};

// Which operand every item of a run reads in full (the same pointer): reordered once, before the
// items, rather than once per item.
enum class Shared { None, A, B };

// Runs each item in vkml's pool, each on its caller's thread alone. The items depend only on the
// shapes, so results do not depend on the thread count.
void run_passes(const ConvShape& s, const std::vector<PassItem>& items, Shared shared) {
  // Each item's primitive, found (or made) here rather than under the cache's lock in the pool.
  std::vector<std::shared_ptr<const ConvPass>> passes;
  for (const PassItem& it : items) passes.push_back(find_pass(s, it.geometry));
  // Shared only where every item's primitive wants the operand in one layout (a last, narrower
  // slice of channels may have a primitive of its own, and with it another layout).
  for (const auto& p : passes)
    if ((shared == Shared::A && p->ab != passes.front()->ab) ||
        (shared == Shared::B && p->bb != passes.front()->bb))
      shared = Shared::None;
  std::vector<uint8_t> shared_buf;
  const void* shared_data = nullptr;
  if (shared != Shared::None) {
    const ConvPass& p = *passes.front();
    const PassItem& first = items.front();
    const OneOpenMPThread one_thread;
    dnnl::stream stream(engine());
    const dnnl::memory m = shared == Shared::A
                               ? in_layout(p.a_in, p.a, p.ab, first.a, shared_buf, stream)
                               : in_layout(p.b_in, p.b, p.bb, first.b, shared_buf, stream);
    shared_data = m.get_data_handle();
    stream.wait();
  }
  std::exception_ptr failed;
  std::mutex failed_mu;
  parallel_for(static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    try {
      const OneOpenMPThread one_thread;
      thread_local dnnl::stream stream(engine());
      thread_local std::vector<uint8_t> abuf, bbuf, cbuf, scratch;
      for (int64_t i = begin; i < end; ++i) {
        const PassItem& it = items[static_cast<size_t>(i)];
        const ConvPass* p = passes[static_cast<size_t>(i)].get();
        if (scratch.size() < p->scratch.get_size()) scratch.resize(p->scratch.get_size());
        dnnl::memory am = shared == Shared::A
                              ? dnnl::memory(p->ab, engine(), const_cast<void*>(shared_data))
                              : in_layout(p->a_in, p->a, p->ab, it.a, abuf, stream);
        dnnl::memory bm = shared == Shared::B
                              ? dnnl::memory(p->bb, engine(), const_cast<void*>(shared_data))
                              : in_layout(p->b_in, p->b, p->bb, it.b, bbuf, stream);
        dnnl::memory cu(p->c, engine(), it.c);
        if (p->c_out && cbuf.size() < p->cb.get_size()) cbuf.resize(p->cb.get_size());
        dnnl::memory cm = p->c_out ? dnnl::memory(p->cb, engine(), cbuf.data()) : cu;
        std::unordered_map<int, dnnl::memory> args{
            {p->arg_a, am},
            {p->arg_b, bm},
            {p->arg_c, cm},
            {DNNL_ARG_SCRATCHPAD, dnnl::memory(p->scratch, engine(), scratch.data())}};
        if (it.bias)
          args.insert(
              {DNNL_ARG_BIAS, dnnl::memory(p->bias, engine(), const_cast<float*>(it.bias))});
        p->run.execute(stream, args);
        if (p->c_out) p->c_out.execute(stream, {{DNNL_ARG_FROM, cm}, {DNNL_ARG_TO, cu}});
      }
      stream.wait();
    } catch (...) {
      std::lock_guard<std::mutex> lock(failed_mu);
      if (!failed) failed = std::current_exception();
    }
  });
  if (failed) std::rethrow_exception(failed);
}

std::string shape_text(const ConvShape& s) {
  return std::to_string(s.N) + " x " + std::to_string(s.C) + " x " + std::to_string(s.H) + " x " +
         std::to_string(s.W) + ", " + std::to_string(s.O) + " filters " + std::to_string(s.kh) +
         " x " + std::to_string(s.kw);
}

// Runs f, naming the op and the shape in the error oneDNN may throw.
template <class F>
void named(const char* op, const char* what, const ConvShape& s, F&& f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    throw RuntimeError(std::string(op) + ": oneDNN's " + what + " (" + shape_text(s) +
                       ") failed: " + e.what());
  }
}

int64_t out_positions(const ConvShape& s) {
  return ((s.H + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1) *
         ((s.W + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1);
}

// Below this many output positions per image, a pass covers the whole batch and a slice of the
// channels instead of one image: per image, each call would read the whole weight for a few
// positions, and two threads ran slower than one (ResNet-18's 512-channel 2x2 layer: 4.1 ms at
// one thread, 7.8 at two).
constexpr int64_t kFewPositions = 64;

// [0, n) in slices of at most 8, each a multiple of 16 channels (oneDNN's AVX-512 block) but the
// last; fixed by n alone.
std::vector<std::pair<int64_t, int64_t>> channel_slices(int64_t n) {
  const int64_t size = std::max<int64_t>(16, ((n + 7) / 8 + 15) / 16 * 16);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t c0 = 0; c0 < n; c0 += size) out.push_back({c0, std::min(n, c0 + size) - c0});
  return out;
}

}  // namespace

namespace {

// What all three passes need: images (or, over few positions, slices of channels) are the unit of
// parallel work here (within one call oneDNN would split by the thread count, and results must
// not depend on it), so a batch below 8 stays with im2col + GEMM, which splits each image's
// positions over the pool; and 1x1 kernels are plain GEMMs there.
bool onednn_conv_shape(const ConvShape& s) {
  constexpr int64_t kMinBatch = 8;
  return support().direct_conv && s.N >= kMinBatch && s.O >= 32 && s.kh * s.kw > 1;
}

// oneDNN's AVX2 kernels lose all three passes of a strided convolution to im2col + GEMM (Zen 3,
// forward + both gradients; the rules below were measured on Zen 4's AVX-512 kernels). ResNet-18's
// 64 -> 128 from 16x16 to 8x8: 7.0-7.3 -> 6.1-6.3 ms at one thread, 5.3-7.3 -> 3.9 at two; its
// 128 -> 256 from 8x8 and 256 -> 512 from 4x4: 6.9 -> 6.4 and 7.5-7.8 -> 6.9-7.2; the weight
// gradient alone 15-40% faster from 64 to 1024 positions. Not a stem's few channels, where
// oneDNN's first-layer kernels win, nor kernels wider than 3x3, whose columns cost more: 5x5 and
// 7x7 from 32x32 to 16x16 (64 channels) ran 8-15% slower through im2col + GEMM.
bool avx2_strided(const ConvShape& s) {
  return !support().avx512 && s.sh * s.sw > 1 && s.C >= 32 && s.kh * s.kw <= 9;
}

}  // namespace

bool use_onednn_conv(const ConvShape& s) {
  // Few input channels (a first layer): only 7x7 stems, where oneDNN's first-layer kernel beat
  // im2col + GEMM (ResNet-18's 16 x 3 x 64 x 64: 3.05 against 4.14 ms; at 8 x 3 x 224 x 224: 19.5
  // against 22.5); 3x3 and 5x5 kernels over 3 to 8 channels ran 12-35% slower there.
  return onednn_conv_shape(s) && !avx2_strided(s) && (s.C >= 32 || (s.C >= 3 && s.kh * s.kw >= 49));
}

bool use_onednn_conv_backward_data(const ConvShape& s) {
  // Not for strided convolutions onto few positions: ResNet-18's 256 -> 512 at 4x4 -> 2x2 ran
  // 2.5 ms through oneDNN, 1.9 through im2col + GEMM. Not below 32 channels: the stem's input
  // gradient (never needed in training) ran 14 ms against 3.8.
  return onednn_conv_shape(s) && s.C >= 32 && !avx2_strided(s) &&
         (s.sh * s.sw == 1 || out_positions(s) >= kFewPositions);
}

bool use_onednn_conv_backward_weights(const ConvShape& s) {
  // Only where each image has many output positions: below 256, oneDNN's weight gradient ran
  // slower than im2col + GEMM (ResNet-18's 8x8 layers: 62-71 against 71-87 GFLOP/s, by parts of
  // the batch; its 2x2 layer 5.4 against 4.0 ms, by slices of channels). From 3 input channels:
  // im2col + GEMM's product is narrow there (C x kh x kw columns) and oneDNN won at every first
  // layer measured (the 7x7 stem 3.6 against 6.4 ms, 3 -> 64 3x3 at 32 x 32 1.5 against 2.3,
  // 16 -> 32 1.9 against 3.4); a single channel (MNIST's first layer) ran 30% slower. Strided
  // layers from 64 positions: ResNet-18's 64 -> 128 from 16x16 to 8x8, 1.9 against 2.4 ms at one
  // thread (equal at two).
  const int64_t positions = out_positions(s);
  return onednn_conv_shape(s) && s.C >= 3 && !avx2_strided(s) &&
         (positions >= 256 || (positions >= 64 && s.sh * s.sw > 1));
}

void conv2d_f32(const ConvShape& s, const float* x, const float* w, const float* bias, float* y) {
  named("conv2d", "convolution", s, [&] {
    const int64_t L = out_positions(s), x_image = s.C * s.H * s.W, y_image = s.O * L;
    std::vector<PassItem> items;
    if (L < kFewPositions) {
      for (auto [o0, n] : channel_slices(s.O))
        items.push_back({{s.N, n, PassKind::Forward, bias != nullptr},
                         x,
                         w + o0 * s.C * s.kh * s.kw,
                         y + o0 * L,
                         bias ? bias + o0 : nullptr});
      run_passes(s, items, Shared::None);
      return;
    }
    for (int64_t n = 0; n < s.N; ++n)
      items.push_back({{1, s.O, PassKind::Forward, bias != nullptr},
                       x + n * x_image,
                       w,
                       y + n * y_image,
                       bias});
    run_passes(s, items, Shared::B);
  });
}

void conv2d_backward_data_f32(const ConvShape& s, const float* g, const float* w, float* dx) {
  named("conv2d_backward_input", "backward-data convolution", s, [&] {
    const int64_t L = out_positions(s), x_image = s.C * s.H * s.W, g_image = s.O * L;
    std::vector<PassItem> items;
    if (L < kFewPositions) {
      for (auto [c0, n] : channel_slices(s.C))
        items.push_back({{s.N, n, PassKind::BackwardData, false},
                         g,
                         w + c0 * s.kh * s.kw,
                         dx + c0 * s.H * s.W,
                         nullptr});
      run_passes(s, items, Shared::None);
      return;
    }
    for (int64_t n = 0; n < s.N; ++n)
      items.push_back(
          {{1, s.C, PassKind::BackwardData, false}, g + n * g_image, w, dx + n * x_image, nullptr});
    run_passes(s, items, Shared::B);
  });
}

namespace {

// The weight gradient's work items: where the batch's parts (kParts of them, fixed by N alone)
// cover 1024+ output positions each, one partial gradient per part, added in part order; below
// that, slices of the output channels over the whole batch, which keep the sum over the images
// inside oneDNN's kernel (x reordered once for all slices). Zen 4, one thread, 16 images unless
// named: ResNet-18's 64 -> 128 from 16x16 to 8x8 (2 images and 128 positions a part) 2.4 -> 1.7-2.0
// ms by slices, at 8 images (one a part) 6.5-7.1 -> 3.6; 64 -> 128 from 32x32 to 16x16 (512 a
// part) 7.1 -> 6.6-6.8; but the 7x7 stem (2048 a part) 3.5-4.1 -> 4.1-4.4 and a 5x5 32 -> 64 at
// 32x32 (2048 a part) 19.3-19.5 -> 19.8-20.4.
constexpr int64_t kParts = 8;
constexpr int64_t kPartPositions = 1024;

void backward_weights_by_parts(const ConvShape& s, const float* x, const float* g, float* dw) {
  const int64_t x_image = s.C * s.H * s.W, g_image = s.O * out_positions(s);
  const int64_t wsize = s.O * s.C * s.kh * s.kw;
  const int64_t parts = std::min(s.N, kParts);
  std::vector<PassItem> items;
  std::vector<float> partial(static_cast<size_t>(parts * wsize));
  for (int64_t i = 0, n0 = 0; i < parts; ++i) {
    const int64_t images = s.N / parts + (i < s.N % parts ? 1 : 0);
    items.push_back({{images, s.O, PassKind::BackwardWeights, false},
                     x + n0 * x_image,
                     g + n0 * g_image,
                     partial.data() + i * wsize,
                     nullptr});
    n0 += images;
  }
  run_passes(s, items, Shared::None);
  parallel_for(wsize, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      float acc = partial[static_cast<size_t>(k)];
      for (int64_t i = 1; i < parts; ++i) acc += partial[static_cast<size_t>(i * wsize + k)];
      dw[k] = acc;
    }
  });
}

void backward_weights_by_slices(const ConvShape& s, const float* x, const float* g, float* dw) {
  const int64_t L = out_positions(s), kk = s.kh * s.kw;
  std::vector<PassItem> items;
  for (auto [o0, n] : channel_slices(s.O))
    items.push_back(
        {{s.N, n, PassKind::BackwardWeights, false}, x, g + o0 * L, dw + o0 * s.C * kk, nullptr});
  run_passes(s, items, Shared::A);
}

}  // namespace

void conv2d_backward_weights_f32(const ConvShape& s, const float* x, const float* g, float* dw) {
  named("conv2d_backward_weight", "backward-weights convolution", s, [&] {
    const int64_t per_part = s.N / std::min(s.N, kParts) * out_positions(s);
    if (per_part >= kPartPositions)
      backward_weights_by_parts(s, x, g, dw);
    else
      backward_weights_by_slices(s, x, g, dw);
  });
}

}  // namespace vk::cpu

#else  // no oneDNN in this build: bfloat16 products widen to float32 (sgemm)

namespace vk::cpu {

bool has_onednn() { return false; }
bool has_bf16_gemm() { return false; }
const char* bf16_gemm_name() { return "no oneDNN in this build: bfloat16 widens to sgemm"; }
SgemmChoice sgemm_choice() { return SgemmChoice::Blas; }
bool use_onednn_sgemm(bool, bool, int64_t, int64_t, int64_t) { return false; }
void sgemm(bool, bool, int64_t M, int64_t N, int64_t K, const float*, int64_t, const float*,
           int64_t, float, float*, int64_t) {
  throw RuntimeError("matmul: oneDNN's sgemm (" + std::to_string(M) + " x " + std::to_string(K) +
                     " @ " + std::to_string(K) + " x " + std::to_string(N) +
                     ") called in a build without oneDNN");
}
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
bool use_onednn_conv_backward_data(const ConvShape&) { return false; }
bool use_onednn_conv_backward_weights(const ConvShape&) { return false; }
void conv2d_f32(const ConvShape& s, const float*, const float*, const float*, float*) {
  throw RuntimeError("conv2d: oneDNN's convolution (" + std::to_string(s.N) +
                     " images) called in a build without oneDNN");
}
void conv2d_backward_data_f32(const ConvShape& s, const float*, const float*, float*) {
  throw RuntimeError("conv2d_backward_input: oneDNN's convolution (" + std::to_string(s.N) +
                     " images) called in a build without oneDNN");
}
void conv2d_backward_weights_f32(const ConvShape& s, const float*, const float*, float*) {
  throw RuntimeError("conv2d_backward_weight: oneDNN's convolution (" + std::to_string(s.N) +
                     " images) called in a build without oneDNN");
}

}  // namespace vk::cpu

#endif
