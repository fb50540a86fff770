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
#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "vkml/backend/cpu/capability.h"

namespace vk::cpu {
namespace {

const char* isa_name(dnnl_cpu_isa_t isa) {
  if ((isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx) return "AMX";
  if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16) return "AVX512-BF16";
  return nullptr;
}

struct Support {
  bool native = false;
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

}  // namespace vk::cpu

#endif
