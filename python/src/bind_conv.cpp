// Bindings: Convolution and pooling (ops/nn_ops.cpp) at top level, with torch.nn.functional's
// signatures.
#include "bind_ops.h"

namespace vkpy {

using namespace bindings;

void bind_conv(nb::module_& m) {
  // ---- convolution and pooling (torch.nn.functional's signatures) ----
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> bias, nb::handle stride,
         nb::handle padding, nb::handle dilation, int64_t groups) {
        auto [sh, sw] = pair_of(stride, "stride");
        std::pair<int64_t, int64_t> pd{0, 0};
        if (nb::isinstance<nb::str>(padding)) {
          VK_CHECK(nb::cast<std::string>(padding) == "valid", NotImplementedError,
                   "conv2d: padding must be an int, a pair or 'valid'");
        } else {
          pd = pair_of(padding, "padding");
        }
        auto [dh, dw] = pair_of(dilation, "dilation");
        return without_gil(true, [&] {
          return vk::conv2d(x, w, bias ? *bias : Tensor(), sh, sw, pd.first, pd.second, dh, dw,
                            groups);
        });
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0,
      "dilation"_a = 1, "groups"_a = 1);
  m.def(
      "max_pool2d",
      [](const Tensor& x, nb::handle kernel_size, nb::handle stride, nb::handle padding,
         nb::handle dilation, bool ceil_mode, bool return_indices) -> nb::object {
        VK_CHECK(!ceil_mode, NotImplementedError, "max_pool2d: ceil_mode=True is not implemented");
        vk::Window2d w = window(kernel_size, stride, padding, dilation);
        vk::PoolResult p = without_gil(true, [&] { return vk::max_pool2d(x, w); });
        if (return_indices) return nb::make_tuple(p.values, p.indices);
        return nb::cast(p.values);
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
      "ceil_mode"_a = false, "return_indices"_a = false);
  m.def(
      "max_pool2d_backward",
      [](const Tensor& g, const Tensor& indices, nb::handle input_shape) {
        return vk::max_pool2d_backward(g, indices, to_shape(input_shape));
      },
      "grad"_a, "indices"_a, "input_shape"_a);
  m.def(
      "avg_pool2d",
      [](const Tensor& x, nb::handle kernel_size, nb::handle stride, nb::handle padding,
         bool ceil_mode, bool count_include_pad) {
        VK_CHECK(!ceil_mode, NotImplementedError, "avg_pool2d: ceil_mode=True is not implemented");
        VK_CHECK(
            count_include_pad, NotImplementedError,
            "avg_pool2d: count_include_pad=False is not implemented (padding counts as zeros)");
        vk::Window2d w = window(kernel_size, stride, padding, nb::int_(1));
        return without_gil(true, [&] { return vk::avg_pool2d(x, w); });
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
      "count_include_pad"_a = true);
  m.def(
      "im2col",
      [](const Tensor& x, nb::handle kernel_size, nb::handle dilation, nb::handle padding,
         nb::handle stride) {
        vk::Window2d w = window(kernel_size, stride, padding, dilation);
        return without_gil(true, [&] { return vk::im2col(x, w); });
      },
      "input"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1,
      "torch.nn.functional.unfold: (N, C, H, W) -> (N, C*kh*kw, L)");
  m.def(
      "col2im",
      [](const Tensor& cols, nb::handle output_size, nb::handle kernel_size, nb::handle dilation,
         nb::handle padding, nb::handle stride) {
        auto [h, wd] = pair_of(output_size, "output_size");
        vk::Window2d w = window(kernel_size, stride, padding, dilation);
        return without_gil(true, [&] { return vk::col2im(cols, h, wd, w); });
      },
      "input"_a, "output_size"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0,
      "stride"_a = 1, "torch.nn.functional.fold: (N, C*kh*kw, L) -> (N, C, H, W), overlaps summed");
}

}  // namespace vkpy
