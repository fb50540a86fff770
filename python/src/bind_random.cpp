// Bindings: random sampling (issue 15 item 3). vk.Generator as torch.Generator, the default
// generator's functions (manual_seed, seed, initial_seed, get_rng_state, set_rng_state), and
// randperm, multinomial, bernoulli, normal, poisson with torch's signatures (generator= keyword).
// A generator's state is an int64 tensor [seed, offset] (the seed's 64 bits as int64): vkml has no
// uint8 dtype for torch's byte state, and the two numbers are all a counter-based stream needs.
#include <cmath>

#include "bind_ops.h"
#include "vkml/core/default_dtype.h"

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
        vk::NoGradGuard ng;
        vk::copy_(x, vk::bernoulli(vk::expand(prob, x.shape()), gen));
        return nb::borrow(self);
      },
      nb::scope(cls), nb::name("bernoulli_"), nb::is_method(), "p"_a = 0.5, nb::kw_only(),
      "generator"_a = nb::none());
}

}  // namespace vkpy
