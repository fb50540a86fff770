// Grad mode: a per-thread flag that decides whether ops record graph. Changed only through RAII
// guards, so every exit path (exceptions included) restores the previous value and blocks nest.
#pragma once

namespace vk {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : saved_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~GradModeGuard() { GradMode::set_enabled(saved_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool saved_;
};

struct NoGradGuard : GradModeGuard {
  NoGradGuard() : GradModeGuard(false) {}
};
struct EnableGradGuard : GradModeGuard {
  EnableGradGuard() : GradModeGuard(true) {}
};

// Anomaly mode (per thread): backward checks every gradient for NaN/Inf and names the op.
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class AnomalyModeGuard {
 public:
  explicit AnomalyModeGuard(bool enabled) : saved_(AnomalyMode::is_enabled()) {
    AnomalyMode::set_enabled(enabled);
  }
  ~AnomalyModeGuard() { AnomalyMode::set_enabled(saved_); }
  AnomalyModeGuard(const AnomalyModeGuard&) = delete;
  AnomalyModeGuard& operator=(const AnomalyModeGuard&) = delete;

 private:
  bool saved_;
};

}  // namespace vk
