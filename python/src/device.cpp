// vkml.device and the device arguments of the Python API: `device=` on creation functions and
// layers, Tensor.device / .to(device) / .cpu().
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "common.h"
#include "vkml/backend/cpu/elementwise.h"
#include "vkml/backend/cpu/optim.h"
#include "vkml/ops/expect.h"  // hostwait
#if defined(VKML_HAS_VULKAN)
#include "vkml/backend/vulkan/register.h"
#endif

namespace vkpy {
namespace {

// ---- a second device for tests, on machines without a GPU ----
// vkml._C._host_test_device() registers it: its memory is the host's and its kernels are the
// CPU's (results placed on it), so Python tests can run programs across two devices -- moves,
// mixed-device errors, Module.to, optimizer state -- and compare with the CPU bit for bit.

class HostTestMemory final : public vk::DeviceMemory {
 public:
  void* allocate(size_t nbytes, int) override {
    void* p = std::aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    if (!p) throw vk::MemoryError("host test device: out of memory");
    return p;
  }
  void release(void* data, size_t, int) noexcept override { std::free(data); }
  void copy_from_host(void* dst, size_t dst_offset, const void* src, size_t n, int) override {
    std::memcpy(static_cast<char*>(dst) + dst_offset, src, n);
  }
  void copy_to_host(void* dst, const void* src, size_t src_offset, size_t n, int) override {
    std::memcpy(dst, static_cast<const char*>(src) + src_offset, n);
  }
  void copy_on_device(void* dst, size_t dst_offset, const void* src, size_t src_offset, size_t n,
                      int) override {
    std::memcpy(static_cast<char*>(dst) + dst_offset, static_cast<const char*>(src) + src_offset,
                n);
  }
  bool host_addressable() const override { return true; }
};

template <size_t K>
VK_KERNEL(host_test_kernel) {
  vk::Meta on_cpu = m;
  on_cpu.device = vk::kCPU;
  vk::Outputs r = vk::find_kernel(vk::DeviceType::CPU, static_cast<vk::OpKind>(K))(in, a, on_cpu);
  for (size_t i = 0; i < r.size(); ++i) {
    if (!r[i].defined() || r[i].device() == m.device) continue;  // a view of an input
    Tensor moved = Tensor::empty(r[i].shape(), r[i].dtype(), m.device);
    vk::cpu::copy_into(moved, r[i]);
    r[i] = moved;
  }
  return r;
}

template <size_t... K>
void register_host_test_kernels(vk::DeviceType type, std::index_sequence<K...>) {
  ((vk::find_kernel(vk::DeviceType::CPU, static_cast<vk::OpKind>(K))
        ? vk::register_kernel(type, static_cast<vk::OpKind>(K), host_test_kernel<K>,
                              vk::kernel_dtypes(vk::DeviceType::CPU, static_cast<vk::OpKind>(K)))
        : void()),
   ...);
}

vk::Device host_test_device() {
  static const vk::Device device = [] {
    vk::register_builtin_backends();
    const vk::DeviceType type =
        vk::register_device_type("host_test", std::make_unique<HostTestMemory>());
    register_host_test_kernels(type, std::make_index_sequence<vk::kNumOps>());
    vk::register_services(type, {.copy_into = vk::cpu::copy_into,
                                 .add_into = vk::cpu::add_into,
                                 .sgd_update = vk::cpu::sgd_update,
                                 .adam_update = vk::cpu::adam_update});
    return vk::Device{type, 0};
  }();
  return device;
}

}  // namespace

vk::Device to_device_arg(nb::handle h, vk::Device if_none) {
  if (h.is_none()) return if_none;
  if (nb::isinstance<vk::Device>(h)) return nb::cast<vk::Device>(h);
  if (nb::isinstance<nb::str>(h)) return vk::parse_device(nb::cast<std::string>(h));
  if (nb::hasattr(h, "type") && nb::hasattr(h, "index"))  // torch.device in ported code
    return vk::parse_device(nb::cast<std::string>(nb::str(h)));
  throw vk::DeviceError(
      "expected a device (a vkml.device or a string such as 'cpu' or 'vulkan:0'), got " +
      nb::cast<std::string>(nb::str(h.type().attr("__name__"))));
}

std::optional<vk::Device> to_device_opt(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_device_arg(h, vk::kCPU);
}

bool is_device_like(nb::handle h) {
  if (nb::isinstance<vk::Device>(h)) return true;
  if (nb::hasattr(h, "type") && nb::hasattr(h, "index") && !nb::isinstance<DType>(h)) return true;
  if (!nb::isinstance<nb::str>(h)) return false;
  try {
    vk::parse_device(nb::cast<std::string>(h));
    return true;
  } catch (const vk::DeviceError&) {
    return false;
  }
}

namespace {
vk::Device g_default_device = vk::kCPU;  // guarded by the GIL
}  // namespace

vk::Device default_device() { return g_default_device; }

Tensor on_device(Tensor t, std::optional<vk::Device> device) {
  if (!device) return t;
  return without_gil(heavy(t), [&] { return vk::to_device(t, *device); });
}

void bind_devices(nb::module_& m) {
  nb::class_<vk::Device>(m, "device", "Where a tensor's memory lives: 'cpu' or 'vulkan:<index>'.")
      .def(
          "__init__",
          [](vk::Device* self, nb::handle spec, std::optional<int64_t> index) {
            vk::Device d = to_device_arg(spec, vk::kCPU);
            if (index) {
              VK_CHECK(nb::isinstance<nb::str>(spec) &&
                           nb::cast<std::string>(spec).find(':') == std::string::npos,
                       DeviceError, "device(): the index is given twice");
              d = vk::parse_device(vk::device_type_name(d.type) + ":" + std::to_string(*index));
            }
            new (self) vk::Device(d);
          },
          "type"_a, "index"_a = nb::none())
      .def_prop_ro("type", [](const vk::Device& d) { return vk::device_type_name(d.type); })
      .def_prop_ro("index",
                   [](const vk::Device& d) -> nb::object {
                     if (d.is_cpu()) return nb::none();
                     return nb::int_(d.index);
                   })
      .def("__str__", [](const vk::Device& d) { return vk::device_name(d); })
      .def("__repr__",
           [](const vk::Device& d) {
             std::string r = "device(type='" + vk::device_type_name(d.type) + "'";
             if (!d.is_cpu()) r += ", index=" + std::to_string(d.index);
             return r + ")";
           })
      .def("__eq__", [](const vk::Device& a, const vk::Device& b) { return a == b; })
      .def("__eq__", [](const vk::Device&, nb::handle) { return false; })
      .def("__hash__",
           [](const vk::Device& d) { return static_cast<int64_t>(d.type) * 65536 + d.index; });
  m.def("_host_test_device", &host_test_device,
        "Registers (once) and returns 'host_test', a device for tests: host memory, the CPU's "
        "kernels.");
  // ---- hostwait (issue #14): checks of device values without a host wait ----
  m.def(
      "_expect_all",
      [](const vk::Tensor& ok, bool index_error, const std::string& op,
         const std::string& message) { vk::expect_all(ok, index_error, op, message); },
      "ok"_a, "index_error"_a, "op"_a, "message"_a,
      "Raises IndexError (index_error) or RuntimeError '<op>: <message>' unless every element of "
      "the bool tensor ok is true: at once on the CPU, at the next host read on the Vulkan device "
      "(the composites' index checks, which would otherwise wait for the device).");
  // ---- end of hostwait ----
  m.def(
      "is_device_available",
      [](nb::handle device) {
        const vk::Device d = to_device_arg(device, vk::kCPU);
        if (!vk::device_available(d.type)) return false;
        return d.is_cpu() || d.index < vk::device_memory(d.type).device_count();
      },
      "device"_a, "True when tensors can be made on `device` in this build, on this machine.");
  m.def(
      "set_default_device",
      [](nb::handle device) { g_default_device = to_device_arg(device, vk::kCPU); },
      "device"_a.none(),
      "Where creation functions (tensor, zeros, ones, full, arange, rand, ...) put tensors when "
      "no device= is given, as torch.set_default_device; None means the CPU. *_like functions "
      "keep their input's device.");
  m.def(
      "get_default_device", [] { return g_default_device; },
      "The device creation functions use when no device= is given.");
  m.def(
      "_vulkan_device_name",
      []() -> std::string {
#if defined(VKML_HAS_VULKAN)
        return vk::vulkan::device_name();
#else
        throw vk::DeviceError(
            "the vulkan device is not available: this build of vkml has no "
            "Vulkan backend");
#endif
      },
      "The Vulkan device in use (vkml.vulkan.device_name()).");
#if defined(VKML_HAS_VULKAN)
  m.def(
      "_vulkan_synchronize",
      [] {
        nb::gil_scoped_release unlocked;  // waits for the device; touches no Python object
        vk::vulkan::synchronize();
      },
      "Waits until the Vulkan device has finished the work recorded so far.");
  m.def(
      "_vulkan_empty_cache",
      [] {
        nb::gil_scoped_release unlocked;
        vk::vulkan::empty_cache();
      },
      "Hands the Vulkan memory no tensor uses back to the driver.");
  m.def(
      "_vulkan_stats",
      [] {
        vk::vulkan::Stats s;
        {
          nb::gil_scoped_release unlocked;
          s = vk::vulkan::stats();
        }
        nb::dict d;
        d["allocated_bytes"] = s.allocated;
        d["reserved_bytes"] = s.reserved;
        d["submissions"] = s.submissions;
        d["dispatches"] = s.dispatches;
        d["barriers"] = s.barriers;
        d["host_to_device_copies"] = s.host_to_device;
        d["device_to_host_copies"] = s.device_to_host;
        d["host_to_device_bytes"] = s.host_to_device_bytes;
        d["device_to_host_bytes"] = s.device_to_host_bytes;
        d["staged_copies"] = s.staged;
        d["host_waits"] = s.host_waits;  // vkfix: times the host blocked on the device
        return d;
      },
      "The Vulkan device's memory and work so far (vkml.vulkan.memory_stats()).");
  // vkgaps: the device's features, for the tests that run float64 cases on it
  m.def(
      "_vulkan_features",
      [] {
        const vk::vulkan::Features f = vk::vulkan::features();
        nb::dict d;
        d["float64"] = f.float64;
        d["int64"] = f.int64;
        d["int8_storage"] = f.int8_storage;
        d["int16_storage"] = f.int16_storage;
        return d;
      },
      "What the Vulkan device computes beyond float32: float64 (shaderFloat64), int64 "
      "(shaderInt64), int8_storage (bool, uint8, int8 tensors), int16_storage (float16, bfloat16, "
      "int16 tensors).");
#endif
}

}  // namespace vkpy
