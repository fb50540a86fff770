// Autocast (#19): inside an autocast region, ops whose speed lives in matrix products run in a
// lower precision (float16 or bfloat16) and ops whose accuracy needs range run in float32,
// whatever the dtype of their inputs. The state is per thread and per device type, like grad
// mode, and changed only through guards. The policy of each op is data: ops/autocast.cpp.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "vkml/core/device.h"
#include "vkml/core/dtype.h"

namespace vk {

// What dispatch does with an op's floating inputs inside an autocast region of its device.
enum class AutocastPolicy : uint8_t {
  Keep,          // runs in the dtype of its inputs (and their promotion)
  LowPrecision,  // float32 inputs cast to the region's dtype (matmul, addmm, conv2d, lstm_cell)
  Float32,       // 16-bit inputs cast to float32 (softmax, norms, sums, exp/log/pow)
};
// The name used in docs/ops.md and errors.
const char* autocast_policy_name(AutocastPolicy p);

// This thread's whole autocast state: the device types in a region, and each one's dtype.
struct AutocastState {
  uint32_t enabled_mask = 0;  // bit t: device type t is in a region
  std::array<DType, kMaxDeviceTypes> dtype{};
  AutocastState();  // no region; bfloat16 on the CPU, float16 on GPUs (PyTorch's defaults)
};

struct Autocast {
  static bool is_enabled(DeviceType type);
  static DType dtype(DeviceType type);  // float16 or bfloat16
  static bool any_enabled();            // on any device type (one load: checked per op)
  // For bindings that cannot hold a guard across calls (a Python context manager saves the
  // state on entry and sets it back on exit); C++ uses AutocastGuard.
  static void set(DeviceType type, bool enabled, DType dtype);
  static const AutocastState& state();

  // The cast cache (PyTorch's): inside a region, a float32 leaf that requires grad (a weight)
  // is cast to the low precision once and the cast reused by every op of the region that casts
  // it again (an LSTM's weights at every step), until the outermost region ends. A cast is
  // reused only while the weight's version is the one it was cast at (an in-place update inside
  // the region casts again) and its graph has not been freed by a backward; casts made without
  // grad mode are not cached (their reuse would cut the weight's gradient).
  static bool cache_enabled();
  static void set_cache_enabled(bool enabled);
  static void clear_cache();
  static size_t cache_size();  // the casts cached now (for tests)
  // Region nesting (the guards and the Python context manager count it): leaving the outermost
  // region clears the cache. Both return the depth after the change.
  static int enter_region();
  static int exit_region();
};

// Enters (or, with enabled=false, leaves) an autocast region of `type` on this thread; the
// previous state comes back at the end of the scope (and the cast cache is cleared when it was
// the outermost region). dtype must be float16 or bfloat16.
class AutocastGuard {
 public:
  AutocastGuard(DeviceType type, bool enabled, DType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType type_;
  bool saved_enabled_;
  DType saved_dtype_;
};

// Runs its scope under a saved state, then restores the one before (checkpoint's recompute runs
// in the autocast state its forward ran in, as PyTorch's, wherever backward is called from).
class AutocastStateGuard {
 public:
  explicit AutocastStateGuard(const AutocastState& state);
  ~AutocastStateGuard();
  AutocastStateGuard(const AutocastStateGuard&) = delete;
  AutocastStateGuard& operator=(const AutocastStateGuard&) = delete;

 private:
  AutocastState saved_;
};

// No autocast on any device type while it lives: backward runs each gradient rule in the dtypes
// its forward used (as PyTorch), whatever region backward is called from.
class NoAutocastGuard {
 public:
  NoAutocastGuard();
  ~NoAutocastGuard();
  NoAutocastGuard(const NoAutocastGuard&) = delete;
  NoAutocastGuard& operator=(const NoAutocastGuard&) = delete;

 private:
  uint32_t saved_mask_;
};

}  // namespace vk
