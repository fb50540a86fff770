// Where a tensor's memory lives and where its kernels run.
//
// A Device is a type (the CPU, Vulkan, or a type a backend registers at run time) and an index
// among that type's devices. Each type other than the CPU brings a DeviceMemory that Storage calls
// to allocate, free and copy; the CPU's memory is built in (core/allocator.h), so the CPU path
// costs one comparison. Kernels are registered per device type in core/kernel.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace vk {

// The types every build knows by name. A backend may register further types (a test device, a
// new accelerator) with register_device_type; their values follow these.
enum class DeviceType : uint8_t { CPU = 0, Vulkan = 1 };
inline constexpr size_t kMaxDeviceTypes = 8;

struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = 0;

  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool operator==(const Device&) const = default;
};
inline constexpr Device kCPU{};

// One device type's memory. Calls name the device by index; sizes are in bytes.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* allocate(size_t nbytes, int index) = 0;  // MemoryError when the device is full
  virtual void release(void* data, size_t nbytes, int index) noexcept = 0;
  // Copies between a block this memory allocated (at a byte offset into it) and the host, or
  // between two of its blocks. A block is what allocate returned: a pointer or a handle.
  virtual void copy_from_host(void* dst_block, size_t dst_offset, const void* src, size_t nbytes,
                              int index) = 0;
  virtual void copy_to_host(void* dst, const void* src_block, size_t src_offset, size_t nbytes,
                            int index) = 0;
  virtual void copy_on_device(void* dst_block, size_t dst_offset, const void* src_block,
                              size_t src_offset, size_t nbytes, int index) = 0;
  // True when kernels and data<T>() may read the memory through plain host pointers: the CPU's,
  // or a device that keeps its memory on the host. A GPU's is not.
  virtual bool host_addressable() const = 0;
  virtual int device_count() const { return 1; }
};

// Makes a device type usable: `name` is how users spell it ("vulkan", or a new name, which gets
// the next free type). A type registers once; RuntimeError when the name is taken or no type is
// left. Registration happens before the type's first tensor (a backend's static initialiser).
DeviceType register_device_type(std::string_view name, std::unique_ptr<DeviceMemory> memory);

// The memory of a registered type; DeviceError naming the type when its backend is not in this
// build or found no device on this machine.
DeviceMemory& device_memory(DeviceType type);
bool device_available(DeviceType type);
// The memory of device `d`, checked as above and for an index past the type's devices.
DeviceMemory& require_device(Device d);

std::string device_type_name(DeviceType type);  // "cpu", "vulkan", a registered name
std::string device_name(Device d);              // "cpu", "vulkan:0"
// "cpu", "vulkan", "vulkan:1", "cpu:0", or a registered name. DeviceError for an unknown type or a
// malformed index. It does not check that the device exists: tensors made on it do.
Device parse_device(std::string_view spec);

// Copies nbytes between blocks of any two devices (each block with a byte offset; on the CPU a
// block is a plain pointer), through the host when neither is the CPU and the devices differ.
void copy_bytes(Device dst_device, void* dst_block, size_t dst_offset, Device src_device,
                const void* src_block, size_t src_offset, size_t nbytes);

}  // namespace vk
