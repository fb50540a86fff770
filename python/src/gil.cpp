// The GIL policy of common.h: counted sections without the GIL, and metadata writes that wait
// for the other threads' sections to end.
#include <atomic>
#include <chrono>
#include <thread>

#include "common.h"

namespace vkpy {
namespace {

std::atomic<int> g_open{0};            // sections open in all threads
std::atomic<int> g_waiting{0};         // metadata writes waiting for them to close
std::atomic<int> g_waiting_inside{0};  // of those, the ones made from inside a section
// Sections open in this thread: a hook or custom backward called from inside one of them runs
// Python with the GIL taken back, and its own thread's section is not reading concurrently.
thread_local int t_open = 0;

bool others_open() { return g_open.load() != t_open; }

}  // namespace

GilFreeSection::GilFreeSection(bool release) {
  if (!release || g_waiting.load() > 0) return;
  g_open.fetch_add(1);
  ++t_open;
  released_.emplace();
}

GilFreeSection::~GilFreeSection() {
  if (!released_) return;
  released_.reset();
  --t_open;
  g_open.fetch_sub(1);
}

void exclusive(const std::function<void()>& write) {
  if (others_open()) {
    // Two threads that each wait here from inside their own section (a hook of a backward
    // that rewrites a tensor) would wait for each other forever: the second one raises instead.
    const bool inside = t_open > 0;
    if (inside && g_waiting_inside.fetch_add(1) > 0) {
      g_waiting_inside.fetch_sub(1);
      throw vk::RuntimeError(
          "cannot change a tensor's data, detach it or set requires_grad from a hook while "
          "another thread's backward does the same; do it after backward returns");
    }
    g_waiting.fetch_add(1);
    // Sections start only with the GIL held, so once this thread holds it and none is open
    // elsewhere, none can open until `write` is done.
    while (others_open()) {
      nb::gil_scoped_release release;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    g_waiting.fetch_sub(1);
    if (inside) g_waiting_inside.fetch_sub(1);
  }
  write();
}

namespace {

// `held` (the Tensor inside a Python object) takes `now`, and the object becomes now's handle
// when it has none.
void take(Tensor& held, const Tensor& now) {
  exclusive([&] { held = now; });
  Tensor* none = nullptr;
  now.impl()->handle.compare_exchange_strong(none, &held, std::memory_order_relaxed);
}

}  // namespace

nb::object rebind(nb::handle self, const Tensor& now) {
  Tensor& t = nb::cast<Tensor&>(self);
  if (!t.same(now)) take(t, now);
  const auto [before, after] = vk::base_rebinding(now);
  if (after.defined()) {
    Tensor* base = before.impl()->handle.load(std::memory_order_relaxed);
    // The base's object, held while exclusive() may wait without the GIL (another thread could
    // drop it meanwhile).
    nb::object holder = base ? nb::find(*base) : nb::object();
    if (holder.is_valid() && base->same(before)) take(*base, after);
  }
  return nb::borrow(self);
}

Tensor& refreshed(nb::handle self) {
  Tensor& t = nb::cast<Tensor&>(self);
  if (t.stale()) {
    Tensor now;
    {
      vk::EnableGradGuard recording;  // its history, whatever the caller's mode
      now = vk::regenerated(t);
    }
    if (now.defined()) take(t, now);
  }
  return t;
}

}  // namespace vkpy
