#include "vkml/backend/vulkan/expect.h"

#include "vkml/backend/vulkan/context.h"
#include "vkml/backend/vulkan/launch.h"
#include "vkml/backend/vulkan/memory.h"
#include "vkml/core/error.h"

namespace vk::vulkan {

// ok // ok in int32 (the floor_divide shader's checked variant): a failed check (a 0) divides by
// zero, which the shader raises in the error word; the quotients are thrown away.
void expect_all(const Tensor& ok, bool index_error, const std::string& op,
                const std::string& message) {
  VK_CHECK(ok.dtype() == DType::Int32, DTypeError, op, ": a device check takes int32 flags, got ",
           dtype_name(ok.dtype()));
  const Tensor scratch = Tensor::empty(ok.shape(), DType::Int32, ok.device());
  Strided s{.shader = "floor_divide", .op = op};
  s.error_slot = context().expect_valid(
      op, message, index_error ? Context::ErrorKind::Index : Context::ErrorKind::Runtime);
  const Tensor* ts[] = {&scratch, &ok, &ok};
  run_strided(s, ts);
}

}  // namespace vk::vulkan
