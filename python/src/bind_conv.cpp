// Bindings: the convolution family's op-level extras. conv2d, max_pool2d, avg_pool2d, unfold and
// fold have one binding each, torch.nn.functional's (nn.cpp, vkml._C._nn: 3-D and 4-D inputs);
// vkml's top-level conv2d, max_pool2d, avg_pool2d, im2col and col2im are those same functions
// (vkml/__init__.py), as torch.conv2d and torch.max_pool2d are torch.nn.functional's.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_conv(nb::module_& m) {
  m.def(
      "max_pool2d_backward",
      [](const Tensor& g, const Tensor& indices, nb::handle input_shape) {
        return vk::max_pool2d_backward(g, indices, to_shape(input_shape));
      },
      "grad"_a, "indices"_a, "input_shape"_a);
}

}  // namespace vkpy
