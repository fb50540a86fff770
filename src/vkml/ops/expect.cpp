#include "vkml/ops/expect.h"

#include "vkml/core/deferred.h"
#include "vkml/core/error.h"
#include "vkml/core/grad_mode.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/reduction.h"

namespace vk {

void expect_all(const Tensor& ok, bool index_error, const std::string& op,
                const std::string& message) {
  if (ok.numel() == 0) return;
  NoGradGuard no_grad;
  const Tensor flags = cast(ok, DType::Int32);
  if (!values_on_host(flags)) {
    if (DeferredCheck check = find_deferred_check(flags.device().type)) {
      check(flags, index_error, op, message);
      return;
    }
  }
  const Tensor failed = sum(cast(eq(flags, zeros({}, DType::Int32, flags.device())), DType::Int64));
  if (host_read(failed).item() == 0) return;
  if (index_error) throw IndexError(detail::cat(op, ": ", message));
  throw RuntimeError(detail::cat(op, ": ", message));
}

}  // namespace vk
