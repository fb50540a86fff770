// An op-level profiler (vk.profiler: torch.profiler's API over it). While it is on, dispatch
// times every op from its checks to its outputs, backward times each node's rule as a range, and
// user code names spans of its own (record_function). Events from every thread go to one list;
// off, the cost is one relaxed load per op. Ops on the Vulkan device are timed as they are
// recorded into a batch, not as the device runs them.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vkml/core/shape.h"

namespace vk::profile {

struct Event {
  std::string name;      // the op's name, or the range's
  int64_t start_ns = 0;  // steady clock
  int64_t end_ns = 0;
  uint32_t thread = 0;        // a small id per thread, in order of first use
  bool range = false;         // a range (record_function, a backward rule), not an op
  std::vector<Shape> shapes;  // the inputs' shapes, when shapes are recorded (ops only)
};

inline std::atomic<bool> g_on{false};
inline bool on() { return g_on.load(std::memory_order_relaxed); }

// Starts collecting (RuntimeError when already on); record_shapes: ops keep their inputs' shapes.
void start(bool record_shapes);
// Stops and returns what was collected since start, in the order events ended.
std::vector<Event> stop();
int64_t now_ns();
// Adds an event that ran over [start_ns, now) on this thread; nothing when the profiler is off.
void add(std::string_view name, int64_t start_ns, bool range, std::vector<Shape> shapes = {});
bool records_shapes();

}  // namespace vk::profile
