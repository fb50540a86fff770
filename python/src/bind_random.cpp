// Bindings: random sampling (issue 15 item 3). vk.Generator as torch.Generator, the default
// generator's functions (manual_seed, seed, initial_seed, get_rng_state, set_rng_state), and
// randperm, multinomial, bernoulli, normal, poisson, _standard_gamma with torch's signatures
// (generator= keyword).
// A generator's state is an int64 tensor [seed, offset] (the seed's 64 bits as int64): vkml has no
// uint8 dtype for torch's byte state, and the two numbers are all a counter-based stream needs.
#include <cmath>

#include "bind_ops.h"
#include "vkml/core/default_dtype.h"
#include "vkml/ops/math.h"

namespace vkpy {

using namespace bindings;

vk::Generator* generator_arg(nb::handle h, const char* op) {
  if (h.is_none()) return nullptr;
  if (!nb::isinstance<vk::Generator>(h))
    throw nb::type_error((std::string(op) + "(): generator must be a vkml.Generator, got " +
                          nb::cast<std::string>(nb::str(nb::handle(h.type()).attr("__name__"))))
                             .c_str());
  return nb::cast<vk::Generator*>(h);
}

namespace {

// A seed as torch reads one: any int in [-2^63, 2^64); a negative one is its 64 bits.
uint64_t seed_arg(nb::handle h) {
  PyObject* p = h.ptr();
  if (PyFloat_Check(p) || !PyIndex_Check(p))
    throw nb::type_error("manual_seed(): the seed must be an int");
  nb::object i = nb::steal(PyNumber_Index(p));
  if (!i.is_valid()) throw nb::python_error();
  const unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
  if (!PyErr_Occurred()) return u;
  PyErr_Clear();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    throw nb::value_error(
        "manual_seed(): the seed must lie in [-2^63, 2^64) (Overflow when "
        "unpacking long long)");
  }
  return static_cast<uint64_t>(v);
}

Tensor state_tensor(vk::RngState s) {
  const int64_t v[2] = {static_cast<int64_t>(s.seed), static_cast<int64_t>(s.offset)};
  return vk::from_data(v, {2}, DType::Int64);
}

// A state as get_state returns it (an int64 tensor [seed, offset]) or a sequence of two ints
// (what older vkml returned, and what tuple(state) gives).
vk::RngState state_arg(nb::handle h) {
  if (nb::isinstance<Tensor>(h)) {
    const Tensor& t = nb::cast<const Tensor&>(h);
    VK_CHECK(t.dtype() == DType::Int64 && t.numel() == 2, RuntimeError,
             "set_state: expected an int64 tensor of 2 elements [seed, offset] (from get_state), "
             "got ",
             t.describe());
    Tensor c = vk::contiguous(vk::to_cpu(t));
    const int64_t* p = c.data<int64_t>();
    return {static_cast<uint64_t>(p[0]), static_cast<uint64_t>(p[1])};
  }
  if (!PySequence_Check(h.ptr()) || PySequence_Size(h.ptr()) != 2)
    throw nb::type_error("set_state: expected the int64 tensor get_state returns ([seed, offset])");
  auto part = [&](Py_ssize_t i) -> uint64_t {
    nb::object x = nb::steal(PySequence_GetItem(h.ptr(), i));
    if (!x.is_valid()) throw nb::python_error();
    if (nb::isinstance<Tensor>(x))  // tuple(state) of a state tensor: 0-d int64 tensors
      return static_cast<uint64_t>(vk::item_scalar(nb::cast<const Tensor&>(x)).to_int64());
    return seed_arg(x);
  };
  return {part(0), part(1)};
}

void bind_generator(nb::module_& m) {
  nb::class_<vk::Generator>(m, "Generator",
                            "A random-number generator, as torch.Generator: a seed and a position "
                            "in its counter-based (Philox) stream.")
      .def(
          "__init__",
          [](vk::Generator* g, nb::handle device) {
            new (g) vk::Generator(to_device_arg(device, vk::kCPU));
          },
          "device"_a = "cpu")
      .def(
          "manual_seed",
          [](nb::handle self, nb::handle seed) {
            nb::cast<vk::Generator&>(self).manual_seed(seed_arg(seed));
            return nb::borrow(self);
          },
          "seed"_a, "Seeds the generator (its stream restarts); returns the generator.")
      .def("seed", &vk::Generator::seed, "Seeds from a nondeterministic source; returns the seed.")
      .def("initial_seed", &vk::Generator::initial_seed, "The seed last given.")
      .def(
          "get_state", [](const vk::Generator& g) { return state_tensor(g.state()); },
          "The state as an int64 tensor [seed, offset].")
      .def(
          "set_state",
          [](nb::handle self, nb::handle state) {
            nb::cast<vk::Generator&>(self).set_state(state_arg(state));
            return nb::borrow(self);
          },
          "new_state"_a, "Restores a state get_state returned; returns the generator.")
      .def_prop_ro("device", &vk::Generator::device)
      .def("__repr__", [](const vk::Generator& g) {
        return "<vkml.Generator device=" + vk::device_name(g.device()) + ">";
      });
  m.attr("default_generator") = nb::cast(&vk::default_generator(), nb::rv_policy::reference);
  m.def(
      "manual_seed",
      [](nb::handle seed) {
        vk::manual_seed(seed_arg(seed));
        return nb::cast(&vk::default_generator(), nb::rv_policy::reference);
      },
      "seed"_a, "Seeds the default generator (every device's); returns it.");
  m.def("seed", []() { return vk::default_generator().seed(); });
  m.def("initial_seed", []() { return vk::default_generator().initial_seed(); });
  m.def(
      "get_rng_state", []() { return state_tensor(vk::get_rng_state()); },
      "The default generator's state as an int64 tensor [seed, offset].");
  m.def(
      "set_rng_state", [](nb::handle state) { vk::set_rng_state(state_arg(state)); },
      "new_state"_a);
}

// normal's four overloads, told apart as torch does: a tensor mean and/or std, or two numbers
// and a size.
Tensor normal_any(nb::handle mean, nb::handle std, nb::handle size, vk::Generator* gen,
                  nb::handle dtype, nb::handle device) {
  const bool tm = nb::isinstance<Tensor>(mean), ts = nb::isinstance<Tensor>(std);
  if (tm && ts) return vk::normal(nb::cast<const Tensor&>(mean), nb::cast<const Tensor&>(std), gen);
  if (tm) return vk::normal(nb::cast<const Tensor&>(mean), scalar_value(std), gen);
  if (ts) return vk::normal(scalar_value(mean), nb::cast<const Tensor&>(std), gen);
  if (size.is_none())
    throw nb::type_error(
        "normal(): received (float mean, float std) without a size; expected (Tensor mean, "
        "Tensor std), (Tensor mean, float std), (float mean, Tensor std) or (float mean, float "
        "std, tuple of ints size)");
  return vk::normal(scalar_value(mean), scalar_value(std), to_shape(size),
                    creation_dtype(dtype, vk::default_float_dtype()),
                    to_device_arg(device, default_device()), gen);
}

// ---- random in-place fills (issue #15: randint part): random_, exponential_, geometric_,
// log_normal_, cauchy_, and randint_like. Each is composed of rand / randn / randint (whose
// counters every device draws alike) and elementwise ops, so a seed gives the same numbers on
// every device and at any thread count.

// The dtype the continuous draws of a fill of x are made in.
DType draw_dtype(const Tensor& x) {
  return vk::is_floating(x.dtype()) ? x.dtype() : DType::Float32;
}

// torch's message for a continuous distribution asked of an integer tensor.
void require_floating(const Tensor& x, const char* what) {
  VK_CHECK(vk::is_floating(x.dtype()), RuntimeError, what,
           " distribution is a continuous probability distribution. dtype must be a floating "
           "point but you specified ",
           vk::dtype_name(x.dtype()));
}

// U[0, 1) draws shaped as x, from `gen`.
Tensor uniform_like(const Tensor& x, vk::Generator* gen) {
  return vk::rand(x.shape(), draw_dtype(x), x.device(), gen);
}

// Writes `v` (no graph) into x and returns x. As torch, a tensor that requires grad is refused
// while grad mode is on (copy_'s check); nn.init's fills run under no_grad.
nb::object fill_with(nb::handle self, const Tensor& v) {
  return rebind(self, vk::copy_(nb::cast<const Tensor&>(self), v));
}

// The largest value random_ draws by default in x's dtype, as torch: [0, 2^digits] for floating
// point, [0, max] for integers. int64's 2^63 - 1 is left out: randint's exclusive bound is an
// int64.
int64_t random_default_high(DType t) {
  switch (t) {
    case DType::Bool:
      return 2;
    case DType::Int32:
      return int64_t{1} << 31;
    case DType::Float32:
      return (int64_t{1} << 24) + 1;
    case DType::Float64:
      return (int64_t{1} << 53) + 1;
    case DType::UInt8:
      return 256;
    case DType::Int8:
      return 128;
    case DType::Int16:
      return 32768;
    case DType::Float16:
      return (int64_t{1} << 11) + 1;
    case DType::BFloat16:
      return (int64_t{1} << 8) + 1;
    case DType::Int64:
      break;
  }
  return std::numeric_limits<int64_t>::max();
}

// random_'s [from, to) checked as torch: from < to, both ends in the dtype's range.
void check_random_range(DType t, int64_t from, int64_t to) {
  VK_CHECK(from < to, RuntimeError,
           "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", to);
  if (vk::is_floating(t)) return;
  const int64_t lo = t == DType::Bool    ? 0
                     : t == DType::Int32 ? std::numeric_limits<int32_t>::min()
                                         : std::numeric_limits<int64_t>::min();
  const int64_t hi = t == DType::Bool    ? 1
                     : t == DType::Int32 ? std::numeric_limits<int32_t>::max()
                                         : std::numeric_limits<int64_t>::max();
  const std::string name(t == DType::Bool ? "bool" : vk::dtype_name(t));
  VK_CHECK(from >= lo && from <= hi, RuntimeError, "random_: from is out of bounds for ", name,
           " (from=", from, ")");
  VK_CHECK(to - 1 <= hi, RuntimeError, "random_: to - 1 is out of bounds for ", name, " (to=", to,
           ")");
}

// random_(), random_(to), random_(from, to) and random_(from, to=None), read as torch's
// overloads: one positional number is `to`.
std::pair<int64_t, int64_t> random_bounds(DType t, nb::args args, nb::handle from_kw,
                                          nb::handle to_kw) {
  nb::handle from = from_kw, to = to_kw;
  const size_t n = args.size();
  if (n > 2) throw nb::type_error("random_(): takes at most 2 positional arguments");
  if (n > 0 && !from_kw.is_none()) throw nb::type_error("random_(): got multiple values for from");
  if (n == 1 && to_kw.is_none()) to = args[0];  // random_(to)
  if (n == 1 && !to_kw.is_none()) from = args[0];
  if (n == 2) {
    if (!to_kw.is_none()) throw nb::type_error("random_(): got multiple values for to");
    from = args[0];
    to = args[1];
  }
  const int64_t lo = from.is_none() ? 0 : randint_bound(from, "random_'s from");
  const int64_t hi = to.is_none() ? random_default_high(t) : randint_bound(to, "random_'s to");
  return {lo, hi};
}

}  // namespace

void bind_random(nb::module_& m) {
  bind_generator(m);
  m.def(
      "randperm",
      [](int64_t n, nb::handle generator, nb::handle dtype, nb::handle device, bool requires_grad) {
        return with_grad(vk::randperm(n, creation_dtype(dtype, DType::Int64),
                                      to_device_arg(device, default_device()),
                                      generator_arg(generator, "randperm")),
                         requires_grad);
      },
      "n"_a, nb::kw_only(), "generator"_a = nb::none(), "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false, "A random permutation of 0 .. n - 1.");
  auto multinomial = [](const Tensor& input, int64_t num_samples, bool replacement,
                        nb::handle generator) {
    return vk::multinomial(input, num_samples, replacement,
                           generator_arg(generator, "multinomial"));
  };
  m.def("multinomial", multinomial, "input"_a, "num_samples"_a, "replacement"_a = false,
        nb::kw_only(), "generator"_a = nb::none(),
        "num_samples category indices per row of input's weights (1-d or 2-d).");
  m.def(
      "bernoulli",
      [](const Tensor& input, nb::handle p, nb::handle generator) {
        vk::Generator* gen = generator_arg(generator, "bernoulli");
        if (p.is_none()) return vk::bernoulli(input, gen);
        return vk::bernoulli(vk::full_like(input, scalar_value(p)), gen);
      },
      "input"_a, "p"_a = nb::none(), nb::kw_only(), "generator"_a = nb::none(),
      "1 with probability input (or p), else 0, in input's dtype.");
  m.def(
      "normal",
      [](nb::handle mean, nb::handle std, nb::handle size, nb::handle generator, nb::handle dtype,
         nb::handle device, bool requires_grad) {
        return with_grad(
            normal_any(mean, std, size, generator_arg(generator, "normal"), dtype, device),
            requires_grad);
      },
      "mean"_a, "std"_a = 1.0, "size"_a = nb::none(), nb::kw_only(), "generator"_a = nb::none(),
      "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "Samples of N(mean, std^2): tensor/tensor, tensor/float, float/tensor or float/float with "
      "a size.");
  m.def(
      "poisson",
      [](const Tensor& input, nb::handle generator) {
        return vk::poisson(input, generator_arg(generator, "poisson"));
      },
      "input"_a, "generator"_a = nb::none(), "Poisson samples with rates input.");
  m.def(
      "_standard_gamma",
      [](const Tensor& input, nb::handle generator) {
        return vk::standard_gamma(input, generator_arg(generator, "_standard_gamma"));
      },
      "input"_a, "generator"_a = nb::none(),
      "Gamma(input, 1) samples, differentiable in input (torch._standard_gamma).");

  // Tensor methods (torch's in-place fills and the method forms); uniform_ and normal_ are in
  // tensor.cpp.
  nb::handle cls = nb::type<Tensor>();
  cls.attr("multinomial") = nb::cpp_function(
      multinomial, nb::scope(cls), nb::name("multinomial"), nb::is_method(), "num_samples"_a,
      "replacement"_a = false, nb::kw_only(), "generator"_a = nb::none());
  cls.attr("bernoulli") = nb::cpp_function(
      [](const Tensor& self, nb::handle p, nb::handle generator) {
        vk::Generator* gen = generator_arg(generator, "bernoulli");
        if (p.is_none()) return vk::bernoulli(self, gen);
        return vk::bernoulli(vk::full_like(self, scalar_value(p)), gen);
      },
      nb::scope(cls), nb::name("bernoulli"), nb::is_method(), "p"_a = nb::none(), nb::kw_only(),
      "generator"_a = nb::none());
  cls.attr("bernoulli_") = nb::cpp_function(
      [](nb::handle self, nb::handle p, nb::handle generator) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        vk::Generator* gen = generator_arg(generator, "bernoulli_");
        const DType f = vk::is_floating(x.dtype()) ? x.dtype() : DType::Float32;
        Tensor prob = nb::isinstance<Tensor>(p)
                          ? vk::cast(nb::cast<const Tensor&>(p), f)
                          : vk::full(x.shape(), scalar_value(p), f, x.device());
        return rebind(self, vk::inplace(x, {}, "bernoulli_", [&] {
                        return vk::bernoulli(vk::expand(prob, x.shape()), gen);
                      }));
      },
      nb::scope(cls), nb::name("bernoulli_"), nb::is_method(), "p"_a = 0.5, nb::kw_only(),
      "generator"_a = nb::none());

  // ---- random in-place fills (issue #15: randint part) ----
  cls.attr("random_") = nb::cpp_function(
      [](nb::handle self, nb::args args, nb::handle from, nb::handle to, nb::handle generator) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        const auto [lo, hi] = random_bounds(x.dtype(), args, from, to);
        check_random_range(x.dtype(), lo, hi);
        vk::Generator* gen = generator_arg(generator, "random_");
        // bool draws as int32 {0, 1}: randint has no bool output.
        const DType t = x.dtype() == DType::Bool ? DType::Int32 : x.dtype();
        return fill_with(self, vk::randint(lo, hi, x.shape(), t, x.device(), gen));
      },
      nb::scope(cls), nb::name("random_"), nb::is_method(), "args"_a, "from"_a = nb::none(),
      "to"_a = nb::none(), "generator"_a = nb::none(),
      "Fills with integers of [from, to): random_(), random_(to), random_(from, to) (no graph).");
  cls.attr("exponential_") = nb::cpp_function(
      [](nb::handle self, double lambd, nb::handle generator) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        VK_CHECK(lambd > 0.0, RuntimeError,
                 "exponential_ expects lambda > 0.0, but found lambda=", lambd);
        require_floating(x, "Exponential");
        // -log(1 - u) / lambda: 1 - u lies in (0, 1], so no draw is infinite.
        const Tensor u = uniform_like(x, generator_arg(generator, "exponential_"));
        return fill_with(self, vk::log1p(vk::neg(u)) * (-1.0 / lambd));
      },
      nb::scope(cls), nb::name("exponential_"), nb::is_method(), "lambd"_a = 1.0, nb::kw_only(),
      "generator"_a = nb::none(), "Fills with samples of Exp(lambd) (no graph).");
  cls.attr("geometric_") = nb::cpp_function(
      [](nb::handle self, double p, nb::handle generator) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        VK_CHECK(p > 0.0 && p < 1.0, RuntimeError,
                 "geometric_ expects p to be in (0, 1), but got p=", p);
        VK_CHECK(x.dtype() != DType::Bool, NotImplementedError,
                 "geometric_: not implemented for dtype bool");
        // The number of trials to the first success: ceil(log(1 - u) / log(1 - p)), at least 1
        // (u = 0 gives 0).
        const Tensor u = uniform_like(x, generator_arg(generator, "geometric_"));
        const Tensor k = vk::ceil(vk::log1p(vk::neg(u)) * (1.0 / std::log1p(-p)));
        return fill_with(self, vk::clamp(k, vk::Scalar(1.0), std::nullopt));
      },
      nb::scope(cls), nb::name("geometric_"), nb::is_method(), "p"_a, nb::kw_only(),
      "generator"_a = nb::none(), "Fills with samples of Geometric(p) on {1, 2, ...} (no graph).");
  cls.attr("log_normal_") = nb::cpp_function(
      [](nb::handle self, double mean, double std, nb::handle generator) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        VK_CHECK(std > 0.0, RuntimeError, "log_normal_ expects std > 0.0, but found std=", std);
        VK_CHECK(vk::is_floating(x.dtype()), NotImplementedError,
                 "log_normal_: not implemented for dtype ", vk::dtype_name(x.dtype()));
        const Tensor z =
            vk::randn(x.shape(), x.dtype(), x.device(), generator_arg(generator, "log_normal_"));
        return fill_with(self, vk::exp(z * std + mean));
      },
      nb::scope(cls), nb::name("log_normal_"), nb::is_method(), "mean"_a = 1.0, "std"_a = 2.0,
      nb::kw_only(), "generator"_a = nb::none(),
      "Fills with exp(N(mean, std^2)) samples (no graph).");
  cls.attr("cauchy_") = nb::cpp_function(
      [](nb::handle self, double median, double sigma, nb::handle generator) {
        const Tensor& x = nb::cast<const Tensor&>(self);
        VK_CHECK(sigma > 0.0, RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
        require_floating(x, "Cauchy");
        // The inverse CDF: median + sigma * tan(pi * (u - 1/2)).
        const Tensor u = uniform_like(x, generator_arg(generator, "cauchy_"));
        return fill_with(self, vk::tan((u - 0.5) * M_PI) * sigma + median);
      },
      nb::scope(cls), nb::name("cauchy_"), nb::is_method(), "median"_a = 0.0, "sigma"_a = 1.0,
      nb::kw_only(), "generator"_a = nb::none(),
      "Fills with Cauchy(median, sigma) samples (no graph).");
  m.def(
      "randint_like",
      [](const Tensor& input, nb::args args, nb::handle low, nb::handle high, nb::handle generator,
         nb::handle dtype, nb::handle device, bool requires_grad) {
        // torch's overloads: (input, high), (input, low, high), or keywords.
        const size_t n = args.size();
        if (n > 2) throw nb::type_error("randint_like(): takes at most 3 positional arguments");
        if (n == 1 && high.is_none()) {
          high = args[0];
        } else if (n == 1) {
          if (!low.is_none()) throw nb::type_error("randint_like(): got multiple values for low");
          low = args[0];
        }
        if (n == 2) {
          low = args[0];
          high = args[1];
        }
        if (high.is_none()) throw nb::type_error("randint_like(): missing the argument high");
        const int64_t lo = low.is_none() ? 0 : randint_bound(low, "low");
        const int64_t hi = randint_bound(high, "high");
        return with_grad(vk::randint(lo, hi, input.shape(), creation_dtype(dtype, input.dtype()),
                                     to_device_arg(device, input.device()),
                                     generator_arg(generator, "randint_like")),
                         requires_grad);
      },
      "input"_a, "args"_a, "low"_a = nb::none(), "high"_a = nb::none(), "generator"_a = nb::none(),
      "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "Integers of [low, high) shaped as input, in its dtype (or dtype) on its device.");
}

}  // namespace vkpy
