// The default floating dtype (torch.set_default_dtype): what creation functions and Python floats
// give when no dtype is named, and what integers become in ops that need a float (sqrt of an
// int tensor, true division). This is the one place that holds it; float32 unless changed.
#pragma once
#include "vkml/core/dtype.h"

namespace vk {

DType default_float_dtype();
// DTypeError for anything but float32 and float64 (torch also refuses integer dtypes).
void set_default_float_dtype(DType dtype);

}  // namespace vk
