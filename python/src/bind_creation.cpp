// Bindings: Creation functions (ops/creation.cpp) with device= and dtype=, the random generator's
// state, the thread count.
#include "bind_ops.h"
#include "vkml/backend/cpu/cache.h"
#include "vkml/core/default_dtype.h"

namespace vkpy {

using namespace bindings;

void bind_creation(nb::module_& m) {
  // ---- shape/index breadth (#15): the default floating dtype, held by the core ----
  m.def("_set_default_dtype", [](nb::handle d) { vk::set_default_float_dtype(to_dtype(d)); });
  m.def("_get_default_dtype", [] { return vk::default_float_dtype(); });
  // ---- creation ----
  // device=: where the result is made (None: the CPU; the *_like functions: the input's device).
  for (const char* name : {"zeros", "empty"})
    m.def(
        name,
        [](nb::args size, nb::handle dtype, nb::handle device, bool requires_grad) {
          return with_grad(
              vk::zeros(shape_from_args(size), creation_dtype(dtype, vk::default_float_dtype()),
                        to_device_arg(device, default_device())),
              requires_grad);
        },
        "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "ones",
      [](nb::args size, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(
            vk::ones(shape_from_args(size), creation_dtype(dtype, vk::default_float_dtype()),
                     to_device_arg(device, default_device())),
            requires_grad);
      },
      "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "full",
      [](nb::handle size, nb::handle value, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        vk::Scalar v = number_arg(value, "full");
        DType dt = creation_dtype(
            dtype, v.is_floating() ? vk::default_float_dtype() : v.promotion_dtype());
        return with_grad(vk::full(to_shape(size), v, dt, to_device_arg(device, default_device())),
                         requires_grad);
      },
      "size"_a, "fill_value"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "arange",
      [](nb::handle start, nb::handle end, nb::handle step, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        if (end.is_none()) {
          end = start;
          start = nb::int_(0);
        }
        vk::Scalar a = number_arg(start, "arange"), b = number_arg(end, "arange"),
                   s = number_arg(step, "arange");
        bool ints = !a.is_floating() && !b.is_floating() && !s.is_floating();
        DType dt = creation_dtype(dtype, ints ? DType::Int64 : vk::default_float_dtype());
        return with_grad(vk::arange(a, b, s, dt, to_device_arg(device, default_device())),
                         requires_grad);
      },
      "start"_a, "end"_a = nb::none(), "step"_a = 1, "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "linspace",
      [](double start, double end, int64_t steps, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        Tensor t =
            vk::linspace(start, end, steps, creation_dtype(dtype, vk::default_float_dtype()));
        return with_grad(on_device(t, to_device_arg(device, default_device())), requires_grad);
      },
      "start"_a, "end"_a, "steps"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "eye",
      [](int64_t n, std::optional<int64_t> mcols, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        DType dt = creation_dtype(dtype, vk::default_float_dtype());
        Tensor t = vk::eye(n, mcols ? *mcols : n, dt);
        return with_grad(on_device(t, to_device_arg(device, default_device())), requires_grad);
      },
      "n"_a, "m"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "rand",
      [](nb::args size, nb::handle generator, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        return with_grad(
            vk::rand(shape_from_args(size), creation_dtype(dtype, vk::default_float_dtype()),
                     to_device_arg(device, default_device()), generator_arg(generator, "rand")),
            requires_grad);
      },
      "size"_a, "generator"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "randn",
      [](nb::args size, nb::handle generator, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        return with_grad(
            vk::randn(shape_from_args(size), creation_dtype(dtype, vk::default_float_dtype()),
                      to_device_arg(device, default_device()), generator_arg(generator, "randn")),
            requires_grad);
      },
      "size"_a, "generator"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "randint",
      [](nb::args args, nb::handle size, nb::handle generator, nb::handle dtype, nb::handle device,
         bool requires_grad) {
        int64_t low = 0, high;
        nb::handle sz = size;
        size_t n = args.size();
        if (sz.is_none()) {
          VK_CHECK(n == 2 || n == 3, RuntimeError, "randint(low=0, high, size): got ", n,
                   " positional arguments");
          sz = args[n - 1];
          n -= 1;
        }
        VK_CHECK(n == 1 || n == 2, RuntimeError, "randint(low=0, high, size): bad arguments");
        if (n == 2) low = randint_bound(args[0], "low");
        high = randint_bound(args[n - 1], "high");
        return with_grad(vk::randint(low, high, to_shape(sz), creation_dtype(dtype, DType::Int64),
                                     to_device_arg(device, default_device()),
                                     generator_arg(generator, "randint")),
                         requires_grad);
      },
      "args"_a, "size"_a = nb::none(), "generator"_a = nb::none(), "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false);
  auto like_dtype = [](const Tensor& t, nb::handle dtype) {
    return creation_dtype(dtype, t.dtype());
  };
  for (const char* name : {"zeros_like", "empty_like"})
    m.def(
        name,
        [like_dtype](const Tensor& t, nb::handle dtype, nb::handle device, bool requires_grad) {
          return with_grad(
              vk::zeros(t.shape(), like_dtype(t, dtype), to_device_arg(device, t.device())),
              requires_grad);
        },
        "input"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "ones_like",
      [like_dtype](const Tensor& t, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(
            vk::ones(t.shape(), like_dtype(t, dtype), to_device_arg(device, t.device())),
            requires_grad);
      },
      "input"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "full_like",
      [like_dtype](const Tensor& t, nb::handle value, nb::handle dtype, nb::handle device,
                   bool requires_grad) {
        return with_grad(vk::full(t.shape(), number_arg(value, "full_like"), like_dtype(t, dtype),
                                  to_device_arg(device, t.device())),
                         requires_grad);
      },
      "input"_a, "fill_value"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "rand_like",
      [like_dtype](const Tensor& t, nb::handle generator, nb::handle dtype, nb::handle device,
                   bool requires_grad) {
        return with_grad(
            vk::rand(t.shape(), like_dtype(t, dtype), to_device_arg(device, t.device()),
                     generator_arg(generator, "rand_like")),
            requires_grad);
      },
      "input"_a, nb::kw_only(), "generator"_a = nb::none(), "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "randn_like",
      [like_dtype](const Tensor& t, nb::handle generator, nb::handle dtype, nb::handle device,
                   bool requires_grad) {
        return with_grad(
            vk::randn(t.shape(), like_dtype(t, dtype), to_device_arg(device, t.device()),
                      generator_arg(generator, "randn_like")),
            requires_grad);
      },
      "input"_a, nb::kw_only(), "generator"_a = nb::none(), "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "tensor",
      [](nb::handle data, nb::handle dtype, nb::handle device, bool requires_grad) {
        Tensor t = tensor_from_py(data, to_dtype_opt(dtype));
        return with_grad(on_device(t, to_device_arg(device, default_device())), requires_grad);
      },
      "data"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "A new tensor holding a copy of `data`; the dtype is inferred as torch.tensor does.");
  m.def(
      "as_tensor",
      [](nb::handle data, nb::handle dtype, nb::handle device) {
        return on_device(as_tensor(data, to_dtype_opt(dtype)), to_device_opt(device));
      },
      "data"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "`data` itself when it is a tensor of that dtype, else a copy.");
  m.def(
      "from_numpy", [](nb::handle arr) { return from_dlpack(arr); }, "ndarray"_a,
      "A tensor sharing the numpy array's memory (no copy).");
  m.def(
      "from_dlpack", [](nb::handle obj) { return from_dlpack(obj); }, "ext_tensor"_a,
      "A tensor sharing the memory of any DLPack or buffer-protocol array (no copy).");
  bind_random(m);  // vk.Generator and the random functions (issue 15 item 3)
  m.def("get_num_threads", []() { return vk::cpu::num_threads(); });
  m.def(
      "set_num_threads", [](int64_t n) { vk::cpu::set_num_threads(n); }, "n"_a);
  m.def(
      "_get_cpu_capability",
      []() { return vk::cpu::cpu_capability_name(vk::cpu::cpu_capability()); },
      "The copy of the CPU kernels in use: DEFAULT, AVX2 or AVX512 (torch's names).");
  m.def(
      "_has_cpu_dispatch", []() { return vk::cpu::has_cpu_dispatch(); },
      "Whether the build holds the CPU kernels for every capability (else one copy).");
  m.def("_has_onednn", []() { return vk::cpu::has_onednn(); });
  m.def(
      "_has_bf16_gemm", []() { return vk::cpu::has_bf16_gemm(); },
      "Whether bfloat16 products run on the CPU's 16-bit matrix hardware (oneDNN).");
  m.def(
      "_sgemm_choice",
      []() {
        switch (vk::cpu::sgemm_choice()) {
          case vk::cpu::SgemmChoice::Blas:
            return "blas";
          case vk::cpu::SgemmChoice::Onednn:
            return "onednn";
          case vk::cpu::SgemmChoice::ByShape:
            break;
        }
        return "by shape";
      },
      "Who runs float32 products: 'blas', 'onednn' (its sgemm) or 'by shape' (VKML_SGEMM).");
  m.def(
      "_sgemm_by_onednn",
      [](bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
        return vk::cpu::use_onednn_sgemm(ta, tb, M, N, K);
      },
      "Whether an M x N x K float32 product (A / B stored transposed: ta / tb) runs on oneDNN.");
  m.def(
      "_stream_min_bytes", []() { return vk::cpu::stream_min_bytes(); },
      "Outputs of this many bytes or more are written with non-temporal stores (cheap element-wise "
      "maps, layer_norm, softmax's backward): half the last-level cache, or "
      "VKML_STREAM_MIN_BYTES.");
  m.def(
      "_bf16_gemm_name", []() { return std::string(vk::cpu::bf16_gemm_name()); },
      "What runs bfloat16 products: oneDNN and the instruction set, or why they widen to sgemm.");
}

}  // namespace vkpy
