// The profiler's one list of events (ops/profile.h), behind a mutex: only while it is on.
#include "vkml/ops/profile.h"

#include <chrono>
#include <mutex>
#include <utility>

#include "vkml/core/error.h"

namespace vk::profile {
namespace {

std::mutex g_mutex;
std::vector<Event> g_events;  // guarded by g_mutex
std::atomic<bool> g_shapes{false};
std::atomic<uint32_t> g_threads{0};

uint32_t thread_id() {
  thread_local const uint32_t id = g_threads.fetch_add(1, std::memory_order_relaxed);
  return id;
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void start(bool record_shapes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  VK_CHECK(!on(), RuntimeError, "profiler: the profiler is already on (profiles do not nest)");
  g_events.clear();
  g_shapes.store(record_shapes, std::memory_order_relaxed);
  g_on.store(true, std::memory_order_relaxed);
}

std::vector<Event> stop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_on.store(false, std::memory_order_relaxed);
  return std::exchange(g_events, {});
}

bool records_shapes() { return g_shapes.load(std::memory_order_relaxed); }

void add(std::string_view name, int64_t start_ns, bool range, std::vector<Shape> shapes) {
  Event e{std::string(name), start_ns, now_ns(), thread_id(), range, std::move(shapes)};
  std::lock_guard<std::mutex> lock(g_mutex);
  if (on()) g_events.push_back(std::move(e));  // it may have stopped while this one ran
}

}  // namespace vk::profile
