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

// ---- io arguments: typed errors naming the argument, never a bare std::bad_cast ----

std::string short_repr(nb::handle h) {
  std::string r = nb::repr(h).c_str();
  return r.size() <= 80 ? r : r.substr(0, 80) + "...";
}

// A path as open() takes one: str (encoded as os.fsencode does), bytes or os.PathLike. A NUL byte
// is a ValueError, as in open(): the C API would silently read the path only up to it.
std::string fs_path(nb::handle h, const char* op) {
  PyObject* encoded = nullptr;
  if (PyUnicode_FSConverter(h.ptr(), &encoded) == 0) {
    nb::python_error e;
    if (e.matches(PyExc_ValueError))
      throw nb::value_error(
          vk::detail::cat(op, ": embedded null byte in the path ", short_repr(h)).c_str());
    throw e;
  }
  nb::bytes b = nb::steal<nb::bytes>(encoded);
  return std::string(b.c_str(), b.size());
}

// The UTF-8 bytes of a str; TypeError for anything else, ValueError for a str that has none (a
// lone surrogate, as os.fsdecode makes of a file name that is not UTF-8).
std::string utf8_text(nb::handle h, const char* op, const char* what) {
  if (!nb::isinstance<nb::str>(h))
    throw nb::type_error(vk::detail::cat(op, ": ", what, " must be a str, not ",
                                         nb::inst_name(h).c_str(), " (", short_repr(h), ")")
                             .c_str());
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(h.ptr(), &n);
  if (s == nullptr) {
    PyErr_Clear();
    throw nb::value_error(vk::detail::cat(op, ": ", what, " ", short_repr(h),
                                          " is not valid UTF-8 text (it holds a lone surrogate)")
                              .c_str());
  }
  return std::string(s, static_cast<size_t>(n));
}

vk::io::NamedTensors named_tensors(nb::handle items, const char* op) {
  vk::io::NamedTensors named;
  for (nb::handle item : items) {
    if (!PySequence_Check(item.ptr()) || PySequence_Size(item.ptr()) != 2)
      throw nb::type_error(
          vk::detail::cat(op, ": expected (name, tensor) pairs, got ", short_repr(item)).c_str());
    nb::object name = item[0], t = item[1];
    std::string text = utf8_text(name, op, "a tensor name");
    if (!nb::isinstance<Tensor>(t))
      throw nb::type_error(vk::detail::cat(op, ": tensor ", short_repr(name), " is a ",
                                           nb::inst_name(t).c_str(), ", not a Tensor")
                               .c_str());
    named.emplace_back(std::move(text), nb::cast<Tensor>(t));
  }
  return named;
}

std::map<std::string, std::string> str_map(nb::handle h, const char* op) {
  std::map<std::string, std::string> out;
  if (h.is_none()) return out;
  if (!nb::isinstance<nb::dict>(h))
    throw nb::type_error(vk::detail::cat(op, ": metadata must be a dict of str to str, not ",
                                         nb::inst_name(h).c_str())
                             .c_str());
  for (auto [k, v] : nb::borrow<nb::dict>(h))
    out[utf8_text(k, op, "a metadata key")] = utf8_text(v, op, "a metadata value");
  return out;
}

// ---- nn breadth (issue #16): activations, losses and layers beyond the classic ones ----
void bind_nn_breadth_activations(nb::module_& nn) {
  nn.def("mish", &F::mish, "input"_a);
  nn.def("hardswish", &F::hardswish, "input"_a);
  nn.def("hardsigmoid", &F::hardsigmoid, "input"_a);
  nn.def("hardtanh", &F::hardtanh, "input"_a, "min_val"_a = -1.0, "max_val"_a = 1.0);
  nn.def("relu6", &F::relu6, "input"_a);
  nn.def("leaky_relu", &F::leaky_relu, "input"_a, "negative_slope"_a = 0.01);
  nn.def("elu", &F::elu, "input"_a, "alpha"_a = 1.0);
  nn.def("selu", &F::selu, "input"_a);
  nn.def("celu", &F::celu, "input"_a, "alpha"_a = 1.0);
  nn.def("softplus", &F::softplus, "input"_a, "beta"_a = 1.0, "threshold"_a = 20.0);
  nn.def("softsign", &F::softsign, "input"_a);
  nn.def("prelu", &F::prelu, "input"_a, "weight"_a);
  nn.def("tanhshrink", &F::tanhshrink, "input"_a);
  nn.def("threshold", &F::threshold, "input"_a, "threshold"_a, "value"_a);
  nn.def("glu", &F::glu, "input"_a, "dim"_a = -1);
  nn.def("logsigmoid", &F::logsigmoid, "input"_a);
  nn.def("softmin", &F::softmin, "input"_a, "dim"_a);
  nn.def("hardshrink", &F::hardshrink, "input"_a, "lambd"_a = 0.5);
  nn.def("softshrink", &F::softshrink, "input"_a, "lambd"_a = 0.5);
  nn.def("pairwise_distance", &F::pairwise_distance, "x1"_a, "x2"_a, "p"_a = 2.0, "eps"_a = 1e-6,
         "keepdim"_a = false);
  nn.def("cosine_similarity", &F::cosine_similarity, "x1"_a, "x2"_a, "dim"_a = 1, "eps"_a = 1e-8);
  nn.def("normalize", &F::normalize, "input"_a, "p"_a = 2.0, "dim"_a = 1, "eps"_a = 1e-12);
}

void bind_nn_breadth_losses(nb::module_& nn) {
  using S = const std::string&;
  nn.def(
      "kl_div",
      [](const Tensor& x, const Tensor& t, S r, bool lt) { return F::kl_div(x, t, r, lt); },
      "input"_a, "target"_a, "reduction"_a = "mean", "log_target"_a = false);
  nn.def(
      "smooth_l1_loss",
      [](const Tensor& x, const Tensor& t, S r, double beta) {
        return F::smooth_l1_loss(x, t, r, beta);
      },
      "input"_a, "target"_a, "reduction"_a = "mean", "beta"_a = 1.0);
  nn.def(
      "huber_loss",
      [](const Tensor& x, const Tensor& t, S r, double delta) {
        return F::huber_loss(x, t, r, delta);
      },
      "input"_a, "target"_a, "reduction"_a = "mean", "delta"_a = 1.0);
  nn.def(
      "margin_ranking_loss",
      [](const Tensor& a, const Tensor& b, const Tensor& t, double margin, S r) {
        return F::margin_ranking_loss(a, b, t, margin, r);
      },
      "input1"_a, "input2"_a, "target"_a, "margin"_a = 0.0, "reduction"_a = "mean");
  nn.def(
      "hinge_embedding_loss",
      [](const Tensor& x, const Tensor& t, double margin, S r) {
        return F::hinge_embedding_loss(x, t, margin, r);
      },
      "input"_a, "target"_a, "margin"_a = 1.0, "reduction"_a = "mean");
  nn.def(
      "cosine_embedding_loss",
      [](const Tensor& a, const Tensor& b, const Tensor& t, double margin, S r) {
        return F::cosine_embedding_loss(a, b, t, margin, r);
      },
      "input1"_a, "input2"_a, "target"_a, "margin"_a = 0.0, "reduction"_a = "mean");
  nn.def(
      "triplet_margin_loss",
      [](const Tensor& a, const Tensor& p, const Tensor& n, double margin, double norm, double eps,
         bool swap, S r) { return F::triplet_margin_loss(a, p, n, margin, norm, eps, swap, r); },
      "anchor"_a, "positive"_a, "negative"_a, "margin"_a = 1.0, "p"_a = 2.0, "eps"_a = 1e-6,
      "swap"_a = false, "reduction"_a = "mean");
  nn.def(
      "poisson_nll_loss",
      [](const Tensor& x, const Tensor& t, bool log_input, bool full, double eps, S r) {
        return F::poisson_nll_loss(x, t, log_input, full, eps, r);
      },
      "input"_a, "target"_a, "log_input"_a = true, "full"_a = false, "eps"_a = 1e-8,
      "reduction"_a = "mean");
  nn.def(
      "gaussian_nll_loss",
      [](const Tensor& x, const Tensor& t, const Tensor& var, bool full, double eps, S r) {
        return F::gaussian_nll_loss(x, t, var, full, eps, r);
      },
      "input"_a, "target"_a, "var"_a, "full"_a = false, "eps"_a = 1e-6, "reduction"_a = "mean");
  nn.def(
      "multilabel_soft_margin_loss",
      [](const Tensor& x, const Tensor& t, std::optional<Tensor> w, S r) {
        return F::multilabel_soft_margin_loss(x, t, opt(w), r);
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "reduction"_a = "mean");
  nn.def(
      "soft_margin_loss",
      [](const Tensor& x, const Tensor& t, S r) { return F::soft_margin_loss(x, t, r); }, "input"_a,
      "target"_a, "reduction"_a = "mean");
}

void bind_nn_breadth_layers(nb::module_& nn) {
  nn.def(
      "group_norm",
      [](const Tensor& x, int64_t g, std::optional<Tensor> w, std::optional<Tensor> b, double eps) {
        return without_gil(true, [&] { return F::group_norm(x, g, opt(w), opt(b), eps); });
      },
      "input"_a, "num_groups"_a, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5);
  nn.def(
      "rms_norm",
      [](const Tensor& x, nb::handle shape, std::optional<Tensor> w, std::optional<double> eps) {
        Shape s = to_shape(shape);
        return without_gil(true, [&] { return F::rms_norm(x, s, opt(w), eps); });
      },
      "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "eps"_a = nb::none());
  nn.def(
      "instance_norm",
      [](const Tensor& x, std::optional<Tensor> rm, std::optional<Tensor> rv,
         std::optional<Tensor> w, std::optional<Tensor> b, bool use_input_stats, double momentum,
         double eps) {
        return without_gil(true, [&] {
          return F::instance_norm(x, opt(rm), opt(rv), opt(w), opt(b), use_input_stats, momentum,
                                  eps);
        });
      },
      "input"_a, "running_mean"_a = nb::none(), "running_var"_a = nb::none(),
      "weight"_a = nb::none(), "bias"_a = nb::none(), "use_input_stats"_a = true,
      "momentum"_a = 0.1, "eps"_a = 1e-5);
  nn.def("pixel_shuffle", &F::pixel_shuffle, "input"_a, "upscale_factor"_a);
  nn.def("pixel_unshuffle", &F::pixel_unshuffle, "input"_a, "downscale_factor"_a);
  nn.def(
      "adaptive_avg_pool",
      [](const Tensor& x, nb::handle size) {
        Shape s = to_shape(size);
        return without_gil(true, [&] { return F::adaptive_avg_pool(x, s); });
      },
      "input"_a, "output_size"_a);
  nn.def(
      "adaptive_max_pool",
      [](const Tensor& x, nb::handle size) {
        Shape s = to_shape(size);
        return without_gil(true, [&] { return F::adaptive_max_pool(x, s); });
      },
      "input"_a, "output_size"_a);
  nn.def(
      "interpolate",
      [](const Tensor& x, nb::handle size, std::vector<double> scales, const std::string& mode,
         bool align_corners) {
        Shape s = to_shape(size);
        return without_gil(true, [&] { return F::interpolate(x, s, scales, mode, align_corners); });
      },
      "input"_a, "size"_a, "scales"_a, "mode"_a, "align_corners"_a = false);
  nn.def(
      "bilinear",
      [](const Tensor& a, const Tensor& b, const Tensor& w, std::optional<Tensor> bias) {
        return without_gil(true, [&] { return F::bilinear(a, b, w, opt(bias)); });
      },
      "input1"_a, "input2"_a, "weight"_a, "bias"_a = nb::none());
  nn.def("feature_dropout", &F::feature_dropout, "input"_a, "p"_a, "training"_a, "batched_ndim"_a);
  nn.def("alpha_dropout", &F::alpha_dropout, "input"_a, "p"_a = 0.5, "training"_a = false);
  nn.def(
      "conv1d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t stride, int64_t padding,
         int64_t dilation, int64_t groups) {
        return without_gil(
            true, [&] { return F::conv1d(x, w, opt(b), stride, padding, dilation, groups); });
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0,
      "dilation"_a = 1, "groups"_a = 1);
  nn.def(
      "conv_same",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, nb::handle d, int64_t groups,
         int spatial) {
        auto ds = size2(d, "dilation");
        return without_gil(true, [&] { return F::conv_same(x, w, opt(b), ds, groups, spatial); });
      },
      "input"_a, "weight"_a, "bias"_a, "dilation"_a, "groups"_a, "spatial"_a);
  nn.def(
      "max_pool1d",
      [](const Tensor& x, int64_t k, std::optional<int64_t> s, int64_t p, int64_t d,
         bool return_indices) -> nb::object {
        Tensor idx;
        Tensor v = without_gil(true, [&] { return F::max_pool1d(x, k, s, p, d, &idx); });
        if (return_indices) return nb::make_tuple(v, idx);
        return nb::cast(v);
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
      "return_indices"_a = false);
  nn.def(
      "avg_pool1d",
      [](const Tensor& x, int64_t k, std::optional<int64_t> s, int64_t p) {
        return without_gil(true, [&] { return F::avg_pool1d(x, k, s, p); });
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0);
}

void bind_nn_breadth(nb::module_& nn) {
  bind_nn_breadth_activations(nn);
  bind_nn_breadth_losses(nn);
  bind_nn_breadth_layers(nn);
}
// ---- end nn breadth ----

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
  // conv2d's two gradient ops (vk.conv2d_backward_input / _weight; torch.nn.grad's conv2d_input
  // and conv2d_weight, vkml/nn/grad.py, call them): the missing tensor's shape, then the window.
  const auto conv_window = [](const Shape& w, nb::handle s, nb::handle p, nb::handle d,
                              int64_t groups) {
    VK_CHECK(w.size() == 4, ShapeError,
             "conv2d: expected a 4-D (O, C/groups, kh, kw) weight, got shape ", vk::shape_str(w));
    auto ss = size2(s, "stride"), ps = size2(p, "padding"), ds = size2(d, "dilation");
    return vk::Window2d{w[2], w[3], ss[0], ss[1], ps[0], ps[1], ds[0], ds[1], groups};
  };
  m.def(
      "conv2d_backward_input",
      [conv_window](const Tensor& g, const Tensor& w, nb::handle input_shape, nb::handle s,
                    nb::handle p, nb::handle d, int64_t groups) {
        const Shape xs = to_shape(input_shape);
        const vk::Window2d win = conv_window(w.shape(), s, p, d, groups);
        return without_gil(true, [&] { return vk::conv2d_backward_input(g, w, xs, win); });
      },
      "grad"_a, "weight"_a, "input_shape"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
      "groups"_a = 1);
  m.def(
      "conv2d_backward_weight",
      [conv_window](const Tensor& g, const Tensor& x, nb::handle weight_shape, nb::handle s,
                    nb::handle p, nb::handle d, int64_t groups) {
        const Shape ws = to_shape(weight_shape);
        const vk::Window2d win = conv_window(ws, s, p, d, groups);
        return without_gil(true, [&] { return vk::conv2d_backward_weight(g, x, ws, win); });
      },
      "grad"_a, "input"_a, "weight_shape"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
      "groups"_a = 1);
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
  bind_nn_breadth(nn);

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
      "adadelta_step_",
      [](const Tensor& p, const Tensor& g, const Tensor& square_avg, const Tensor& acc_delta,
         double lr, double rho, double eps, double weight_decay, bool maximize) {
        without_gil(true, [&] {
          vk::optim::adadelta_step_(p, g, square_avg, acc_delta, lr, rho, eps, weight_decay,
                                    maximize);
        });
      },
      "param"_a, "grad"_a, "square_avg"_a, "acc_delta"_a, "lr"_a = 1.0, "rho"_a = 0.9,
      "eps"_a = 1e-6, "weight_decay"_a = 0.0, "maximize"_a = false,
      "torch.optim.Adadelta's update of one parameter, in place.");
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
  nb::class_<vk::io::PendingSave>(
      io, "PendingSave",
      "A save whose file is written and fsynced beside its target, not yet renamed over it.")
      .def("commit", &vk::io::PendingSave::commit, "Renames the file over the target.")
      .def("discard", &vk::io::PendingSave::discard,
           "Removes the written file (a no-op after commit).")
      .def_prop_ro("committed", &vk::io::PendingSave::committed);
  io.def(
      "save_safetensors",
      [](nb::handle path, nb::handle tensors, nb::handle metadata, bool commit) -> nb::object {
        const std::string p = fs_path(path, "save_safetensors");
        vk::io::NamedTensors named = named_tensors(tensors, "save_safetensors");
        std::map<std::string, std::string> meta = str_map(metadata, "save_safetensors");
        std::optional<vk::io::PendingSave> pending;
        without_gil(true, [&] {
          pending.emplace(p, named, meta);
          if (commit) pending->commit();
        });
        if (commit) return nb::none();
        return nb::cast(std::move(*pending));
      },
      "path"_a, "tensors"_a, "metadata"_a = nb::none(), "commit"_a = true,
      "Writes [(name, tensor), ...] atomically (temp file, fsync, rename). With commit=False the "
      "file is written and fsynced but not renamed: returns a PendingSave.");
  auto to_py = [](const vk::io::NamedTensors& named,
                  const std::map<std::string, std::string>& meta) {
    nb::list l;
    for (const auto& [name, t] : named) l.append(nb::make_tuple(name, t));
    return nb::make_tuple(l, meta);
  };
  io.def(
      "load_safetensors",
      [to_py](nb::handle path_arg) {
        const std::string path = fs_path(path_arg, "load_safetensors");
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
