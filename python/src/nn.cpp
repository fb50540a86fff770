// Low-level bindings of the C++ layers above the ops, 1:1 with their headers, for the Python
// packages built on them (vk.nn.functional, vk.optim, vk.save/vk.load):
//   vkml._C._nn     vk::nn::functional (torch.nn.functional's names, argument order, defaults)
//   vkml._C._optim  vk::optim fused per-parameter steps and clip_grad_norm_
//   vkml._C._io     vk::io safetensors save/load/parse
#include <nanobind/stl/map.h>

#include <cmath>

#include "common.h"
#include "vkml/io/safetensors.h"  // (not in vkml.h)

namespace vkpy {

namespace {

namespace F = vk::nn::functional;

F::Size2 size2(nb::handle h, const char* what) {
  if (PyLong_Check(h.ptr())) {
    int64_t v = nb::cast<int64_t>(h);
    return {v, v};
  }
  Shape s = to_shape(h);
  VK_CHECK(s.size() == 1 || s.size() == 2, ShapeError, what, ": expected an int or a pair, got ",
           s.size(), " values");
  return s.size() == 1 ? F::Size2{s[0], s[0]} : F::Size2{s[0], s[1]};
}

std::optional<F::Size2> opt_size2(nb::handle h, const char* what) {
  if (h.is_none()) return std::nullopt;
  if (!PyLong_Check(h.ptr()) && nb::len(h) == 0) return std::nullopt;  // torch's stride=[]
  return size2(h, what);
}

Tensor opt(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

}  // namespace

void bind_nn(nb::module_& m) {
  nb::module_ nn = m.def_submodule("_nn", "vk::nn::functional (torch.nn.functional)");
  nn.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
        return without_gil(true, [&] { return F::linear(x, w, opt(b)); });
      },
      "input"_a, "weight"_a, "bias"_a = nb::none());
  nn.def("relu", &F::relu, "input"_a);
  nn.def(
      "gelu", [](const Tensor& x, const std::string& a) { return F::gelu(x, a); }, "input"_a,
      "approximate"_a = "none");
  nn.def("silu", &F::silu, "input"_a);
  nn.def("sigmoid", &F::sigmoid, "input"_a);
  nn.def("tanh", &F::tanh, "input"_a);
  nn.def("softmax", &F::softmax, "input"_a, "dim"_a);
  nn.def("log_softmax", &F::log_softmax, "input"_a, "dim"_a);
  nn.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& t, std::optional<Tensor> w, int64_t ignore_index,
         const std::string& reduction, double label_smoothing) {
        return without_gil(true, [&] {
          return F::cross_entropy(x, t, opt(w), ignore_index, reduction, label_smoothing);
        });
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "ignore_index"_a = -100,
      "reduction"_a = "mean", "label_smoothing"_a = 0.0);
  nn.def(
      "nll_loss",
      [](const Tensor& x, const Tensor& t, std::optional<Tensor> w, int64_t ignore_index,
         const std::string& reduction) {
        return without_gil(true,
                           [&] { return F::nll_loss(x, t, opt(w), ignore_index, reduction); });
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "ignore_index"_a = -100,
      "reduction"_a = "mean");
  nn.def(
      "mse_loss",
      [](const Tensor& x, const Tensor& t, const std::string& reduction) {
        return F::mse_loss(x, t, reduction);
      },
      "input"_a, "target"_a, "reduction"_a = "mean");
  nn.def(
      "l1_loss",
      [](const Tensor& x, const Tensor& t, const std::string& reduction) {
        return F::l1_loss(x, t, reduction);
      },
      "input"_a, "target"_a, "reduction"_a = "mean");
  nn.def(
      "binary_cross_entropy",
      [](const Tensor& p, const Tensor& t, std::optional<Tensor> w, const std::string& reduction) {
        return F::binary_cross_entropy(p, t, opt(w), reduction);
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "reduction"_a = "mean");
  nn.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& x, const Tensor& t, std::optional<Tensor> w, std::optional<Tensor> pw,
         const std::string& reduction) {
        return F::binary_cross_entropy_with_logits(x, t, opt(w), opt(pw), reduction);
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "pos_weight"_a = nb::none(),
      "reduction"_a = "mean");
  nn.def(
      "layer_norm",
      [](const Tensor& x, nb::handle shape, std::optional<Tensor> w, std::optional<Tensor> b,
         double eps) {
        Shape s = to_shape(shape);
        return without_gil(true, [&] { return F::layer_norm(x, s, opt(w), opt(b), eps); });
      },
      "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "bias"_a = nb::none(),
      "eps"_a = 1e-5);
  nn.def(
      "batch_norm",
      [](const Tensor& x, std::optional<Tensor> rm, std::optional<Tensor> rv,
         std::optional<Tensor> w, std::optional<Tensor> b, bool training, double momentum,
         double eps) {
        return without_gil(true, [&] {
          return F::batch_norm(x, opt(rm), opt(rv), opt(w), opt(b), training, momentum, eps);
        });
      },
      "input"_a, "running_mean"_a.none(), "running_var"_a.none(), "weight"_a = nb::none(),
      "bias"_a = nb::none(), "training"_a = false, "momentum"_a = 0.1, "eps"_a = 1e-5);
  nn.def(
      "dropout",
      [](const Tensor& x, double p, bool training) { return F::dropout(x, p, training); },
      "input"_a, "p"_a = 0.5, "training"_a = true);
  nn.def(
      "embedding",
      [](const Tensor& idx, const Tensor& w, std::optional<int64_t> padding_idx) {
        return F::embedding(idx, w, padding_idx);
      },
      "input"_a, "weight"_a, "padding_idx"_a = nb::none());
  nn.def("one_hot", &F::one_hot, "tensor"_a, "num_classes"_a = -1);
  nn.def(
      "pad",
      [](const Tensor& x, nb::handle pad, const std::string& mode, nb::handle value) {
        return F::pad(x, to_shape(pad), mode, value.is_none() ? 0.0 : scalar_value(value));
      },
      "input"_a, "pad"_a, "mode"_a = "constant", "value"_a = nb::none());
  nn.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> mask,
         double dropout_p, bool is_causal, std::optional<double> scale) {
        return without_gil(true, [&] {
          return F::scaled_dot_product_attention(q, k, v, opt(mask), dropout_p, is_causal, scale);
        });
      },
      "query"_a, "key"_a, "value"_a, "attn_mask"_a = nb::none(), "dropout_p"_a = 0.0,
      "is_causal"_a = false, nb::kw_only(), "scale"_a = nb::none());
  nn.def(
      "unfold",
      [](const Tensor& x, nb::handle k, nb::handle d, nb::handle p, nb::handle s) {
        auto ks = size2(k, "kernel_size"), ds = size2(d, "dilation"), ps = size2(p, "padding"),
             ss = size2(s, "stride");
        return without_gil(true, [&] { return F::unfold(x, ks, ds, ps, ss); });
      },
      "input"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1);
  nn.def(
      "fold",
      [](const Tensor& x, nb::handle o, nb::handle k, nb::handle d, nb::handle p, nb::handle s) {
        auto os = size2(o, "output_size"), ks = size2(k, "kernel_size"), ds = size2(d, "dilation"),
             ps = size2(p, "padding"), ss = size2(s, "stride");
        return without_gil(true, [&] { return F::fold(x, os, ks, ds, ps, ss); });
      },
      "input"_a, "output_size"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0,
      "stride"_a = 1);
  nn.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, nb::handle s, nb::handle p,
         nb::handle d, int64_t groups) {
        auto ss = size2(s, "stride"), ps = size2(p, "padding"), ds = size2(d, "dilation");
        return without_gil(true, [&] { return F::conv2d(x, w, opt(b), ss, ps, ds, groups); });
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0,
      "dilation"_a = 1, "groups"_a = 1);
  nn.def(
      "max_pool2d",
      [](const Tensor& x, nb::handle k, nb::handle s, nb::handle p, nb::handle d, bool ceil_mode,
         bool return_indices) -> nb::object {
        VK_CHECK(!ceil_mode, NotImplementedError, "max_pool2d: ceil_mode=True is not implemented");
        auto ks = size2(k, "kernel_size"), ps = size2(p, "padding"), ds = size2(d, "dilation");
        auto ss = opt_size2(s, "stride");
        F::PoolWithIndices r =
            without_gil(true, [&] { return F::max_pool2d_with_indices(x, ks, ss, ps, ds); });
        if (return_indices) return nb::make_tuple(r.values, r.indices);
        return nb::cast(r.values);
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
      "ceil_mode"_a = false, "return_indices"_a = false);
  nn.def(
      "avg_pool2d",
      [](const Tensor& x, nb::handle k, nb::handle s, nb::handle p, bool ceil_mode,
         bool count_include_pad) {
        VK_CHECK(!ceil_mode, NotImplementedError, "avg_pool2d: ceil_mode=True is not implemented");
        VK_CHECK(
            count_include_pad, NotImplementedError,
            "avg_pool2d: count_include_pad=False is not implemented (padding counts as zeros)");
        auto ks = size2(k, "kernel_size"), ps = size2(p, "padding");
        auto ss = opt_size2(s, "stride");
        return without_gil(true, [&] { return F::avg_pool2d(x, ks, ss, ps); });
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
      "count_include_pad"_a = true);

  nb::module_ op = m.def_submodule("_optim", "vk::optim: fused per-parameter optimizer steps");
  op.def(
      "sgd_step_",
      [](const Tensor& p, const Tensor& g, std::optional<Tensor> buf, double lr, double momentum,
         double dampening, bool nesterov, double weight_decay, bool maximize) -> nb::object {
        Tensor r = without_gil(true, [&] {
          return vk::optim::sgd_step_(p, g, opt(buf), lr, momentum, dampening, nesterov,
                                      weight_decay, maximize);
        });
        if (!r.defined()) return nb::none();
        return nb::cast(r);
      },
      "param"_a, "grad"_a, "momentum_buffer"_a.none(), "lr"_a, "momentum"_a = 0.0,
      "dampening"_a = 0.0, "nesterov"_a = false, "weight_decay"_a = 0.0, "maximize"_a = false,
      "torch.optim.SGD's update of one parameter, in place; returns the momentum buffer to keep.");
  op.def(
      "adam_step_",
      [](const Tensor& p, const Tensor& g, const Tensor& m1, const Tensor& m2, int64_t step,
         double lr, double beta1, double beta2, double eps, double weight_decay, bool decoupled,
         bool amsgrad, std::optional<Tensor> max_sq, bool maximize) {
        without_gil(true, [&] {
          vk::optim::adam_step_(p, g, m1, m2, step, lr, beta1, beta2, eps, weight_decay, decoupled,
                                amsgrad, opt(max_sq), maximize);
        });
      },
      "param"_a, "grad"_a, "exp_avg"_a, "exp_avg_sq"_a, "step"_a, "lr"_a, "beta1"_a = 0.9,
      "beta2"_a = 0.999, "eps"_a = 1e-8, "weight_decay"_a = 0.0, "decoupled"_a = false,
      "amsgrad"_a = false, "max_exp_avg_sq"_a = nb::none(), "maximize"_a = false,
      "torch.optim.Adam's (decoupled: AdamW's) update of one parameter, in place.");
  op.def(
      "clip_grad_norm_",
      [](nb::handle grads, double max_norm, double norm_type) {
        std::vector<Tensor> gs;
        for (nb::handle h : grads) gs.push_back(h.is_none() ? Tensor() : nb::cast<Tensor>(h));
        return without_gil(true,
                           [&] { return vk::optim::clip_grad_norm_(gs, max_norm, norm_type); });
      },
      "grads"_a, "max_norm"_a, "norm_type"_a = 2.0);

  nb::module_ io = m.def_submodule("_io", "vk::io: safetensors");
  io.def(
      "save_safetensors",
      [](const std::string& path, nb::handle tensors,
         const std::map<std::string, std::string>& metadata) {
        vk::io::NamedTensors named;
        for (nb::handle item : tensors) {
          nb::sequence pair = nb::borrow<nb::sequence>(item);
          named.emplace_back(nb::cast<std::string>(pair[0]), nb::cast<Tensor>(pair[1]));
        }
        without_gil(true, [&] { vk::io::save_safetensors(path, named, metadata); });
      },
      "path"_a, "tensors"_a, "metadata"_a = std::map<std::string, std::string>(),
      "Writes [(name, tensor), ...] atomically (temp file, fsync, rename).");
  auto to_py = [](const vk::io::NamedTensors& named,
                  const std::map<std::string, std::string>& meta) {
    nb::list l;
    for (const auto& [name, t] : named) l.append(nb::make_tuple(name, t));
    return nb::make_tuple(l, meta);
  };
  io.def(
      "load_safetensors",
      [to_py](const std::string& path) {
        std::map<std::string, std::string> meta;
        vk::io::NamedTensors named =
            without_gil(true, [&] { return vk::io::load_safetensors(path, &meta); });
        return to_py(named, meta);
      },
      "path"_a, "([(name, tensor), ...] in header order, metadata)");
  io.def(
      "parse_safetensors",
      [to_py](nb::bytes data, const std::string& source) {
        std::map<std::string, std::string> meta;
        vk::io::NamedTensors named = vk::io::parse_safetensors(
            reinterpret_cast<const uint8_t*>(data.c_str()), data.size(), &meta, source);
        return to_py(named, meta);
      },
      "data"_a, "source"_a = "<memory>");
}

}  // namespace vkpy
