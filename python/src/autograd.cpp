// Autograd from Python: grad mode and anomaly mode flags, backward/grad over several roots,
// custom ops (from_op) with Python VJPs, checkpointing, gradient checks, and the op table.
#include <functional>

#include "common.h"
#include "vkml/ops/profile.h"
// after Python.h (included by nanobind)
#include <frameobject.h>

namespace vk {
extern std::function<std::string()> g_anomaly_context;  // ops/table.cpp
}

namespace vkpy {

namespace {

std::string g_package_dir;  // frames from files under it are vkml's own, not the user's

std::string str_attr(PyObject* o, const char* name) {
  PyObject* a = PyObject_GetAttrString(o, name);
  if (!a) {
    PyErr_Clear();
    return "?";
  }
  const char* s = PyUnicode_Check(a) ? PyUnicode_AsUTF8(a) : nullptr;
  std::string r = s ? s : "?";
  Py_DECREF(a);
  return r;
}

// "file:line in function" of the innermost Python frame outside the vkml package: where the
// user's forward code ran. Called by the dispatcher for every recorded op in anomaly mode.
std::string python_site() {
  nb::gil_scoped_acquire gil;
  if (!gil.is_valid()) return "";
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  std::string first;
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    std::string file = str_attr((PyObject*)code, "co_filename");
    std::string func = str_attr((PyObject*)code, "co_name");
    Py_DECREF(code);
    std::string site = file + ":" + std::to_string(PyFrame_GetLineNumber(f)) + " in " + func;
    if (first.empty()) first = site;
    bool own = !g_package_dir.empty() && file.rfind(g_package_dir, 0) == 0;
    if (!own) {
      Py_DECREF(f);
      return site;
    }
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference
    Py_DECREF(f);
    f = back;
  }
  return first;
}

std::vector<Tensor> tensors_of(nb::handle h) {
  std::vector<Tensor> out;
  if (h.is_none()) return out;
  if (nb::isinstance<Tensor>(h)) {
    out.push_back(nb::cast<Tensor>(h));
    return out;
  }
  for (nb::handle x : h) out.push_back(as_tensor(x));
  return out;
}

// Gradients for roots: None entries stay undefined (one-element roots are seeded with one).
std::vector<Tensor> grads_for(nb::handle h, const std::vector<Tensor>& roots) {
  std::vector<Tensor> out;
  if (h.is_none()) return out;
  if (nb::isinstance<Tensor>(h) ||
      (roots.size() == 1 && !PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr()))) {
    out.push_back(as_tensor(h, roots[0].dtype()));
    return out;
  }
  size_t i = 0;
  for (nb::handle g : h) {
    VK_CHECK(i < roots.size(), RuntimeError, "got more gradients than outputs");
    out.push_back(g.is_none() ? Tensor() : as_tensor(g, roots[i].dtype()));
    ++i;
  }
  VK_CHECK(out.size() == roots.size(), RuntimeError, "got ", out.size(), " gradients for ",
           roots.size(), " outputs");
  return out;
}

// fn(*xs) -> one tensor (a tuple of tensors is flattened and concatenated).
Tensor call_tensor_fn(const PyRef& fn, const std::vector<Tensor>& xs) {
  nb::gil_scoped_acquire gil;
  nb::list args;
  for (const auto& x : xs) args.append(nb::cast(x));
  nb::object r = fn.get()(*nb::tuple(args));
  if (nb::isinstance<Tensor>(r)) return nb::cast<Tensor>(r);
  if (PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) {
    std::vector<Tensor> parts;
    for (nb::handle h : r) parts.push_back(vk::reshape(nb::cast<Tensor>(h), {-1}));
    return vk::cat(parts, 0);
  }
  throw vk::RuntimeError("the function must return a tensor (or a tuple of tensors)");
}

}  // namespace

void bind_autograd(nb::module_& m) {
  vk::g_anomaly_context = python_site;
  m.def("_set_package_dir", [](const std::string& d) { g_package_dir = d; });

  m.def(
      "is_grad_enabled", []() { return vk::GradMode::is_enabled(); },
      "Whether ops record graph on this thread.");
  m.def("_set_grad_enabled", [](bool b) { vk::GradMode::set_enabled(b); });
  // The op-level profiler (vk.profiler, ops/profile.h): events come back as tuples (name, start
  // ns, end ns, thread, is a range, input shapes).
  m.def("_profiler_start", [](bool record_shapes) { vk::profile::start(record_shapes); });
  m.def("_profiler_stop", [] {
    nb::list out;
    for (vk::profile::Event& e : vk::profile::stop()) {
      nb::list shapes;
      for (const vk::Shape& s : e.shapes) shapes.append(nb::cast(s));
      out.append(nb::make_tuple(e.name, e.start_ns, e.end_ns, e.thread, e.range, shapes));
    }
    return out;
  });
  m.def("_profiler_on", [] { return vk::profile::on(); });
  m.def("_profiler_now", [] { return vk::profile::now_ns(); });
  m.def("_profiler_add_range",
        [](const std::string& name, int64_t start_ns) { vk::profile::add(name, start_ns, true); });
  // Autocast (#19): the state of one device type on this thread; vkml.amp.autocast saves it on
  // entry and puts it back on exit, as a guard does in C++.
  m.def("_autocast_state", [](const std::string& device_type) {
    const vk::DeviceType t = vk::parse_device(device_type).type;
    return std::make_pair(vk::Autocast::is_enabled(t), vk::Autocast::dtype(t));
  });
  m.def("_set_autocast_state", [](const std::string& device_type, bool enabled, DType dtype) {
    vk::Autocast::set(vk::parse_device(device_type).type, enabled, dtype);
  });
  m.def("_autocast_cache_enabled", [] { return vk::Autocast::cache_enabled(); });
  m.def("_set_autocast_cache_enabled", [](bool b) { vk::Autocast::set_cache_enabled(b); });
  m.def("_clear_autocast_cache", [] { vk::Autocast::clear_cache(); });
  m.def("_autocast_cache_size", [] { return vk::Autocast::cache_size(); });
  m.def("_autocast_enter_region", [] { return vk::Autocast::enter_region(); });
  m.def("_autocast_exit_region", [] { return vk::Autocast::exit_region(); });
  m.def("is_anomaly_enabled", []() { return vk::AnomalyMode::is_enabled(); });
  m.def("_set_anomaly_enabled", [](bool b) { vk::AnomalyMode::set_enabled(b); });

  m.def(
      "backward",
      [](nb::handle tensors, nb::handle grad_tensors, std::optional<bool> retain_graph,
         bool create_graph) {
        std::vector<Tensor> roots = tensors_of(tensors);
        std::vector<Tensor> grads = grads_for(grad_tensors, roots);
        without_gil(true,
                    [&] { vk::autograd::backward(roots, grads, retain_graph, create_graph); });
      },
      "tensors"_a, "grad_tensors"_a = nb::none(), "retain_graph"_a = nb::none(),
      "create_graph"_a = false);

  m.def(
      "grad",
      [](nb::handle outputs, nb::handle inputs, nb::handle grad_outputs,
         std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
        std::vector<Tensor> outs = tensors_of(outputs);
        std::vector<Tensor> ins = tensors_of(inputs);
        std::vector<Tensor> gos = grads_for(grad_outputs, outs);
        std::vector<Tensor> res = without_gil(true, [&] {
          return vk::autograd::grad(outs, ins, gos, retain_graph, create_graph, allow_unused);
        });
        nb::list l;
        for (const auto& g : res) l.append(g.defined() ? nb::cast(g) : nb::none());
        return nb::tuple(l);
      },
      "outputs"_a, "inputs"_a, "grad_outputs"_a = nb::none(), "retain_graph"_a = nb::none(),
      "create_graph"_a = false, "allow_unused"_a = false);

  m.def(
      "from_op",
      [](nb::handle data, nb::handle parents, nb::handle vjp, const std::string& op,
         bool pass_output) {
        std::vector<Tensor> ps = tensors_of(parents);
        std::optional<DType> dt;
        for (const auto& p : ps)
          if (vk::is_floating(p.dtype())) {
            dt = p.dtype();
            break;
          }
        Tensor result =
            nb::isinstance<Tensor>(data) ? nb::cast<Tensor>(data) : tensor_from_py(data, dt);
        std::vector<DType> dtypes;
        for (const auto& p : ps) dtypes.push_back(p.dtype());
        std::string name = op.empty() ? "custom" : op;
        PyRef f(vjp);
        if (!pass_output) {
          vk::autograd::Vjp cvjp = [f, dtypes, name](const Tensor& g) {
            nb::gil_scoped_acquire gil;
            nb::object r = f.get()(g);
            return grads_from_py(r, dtypes, name.c_str());
          };
          return vk::autograd::from_op(result, ps, std::move(cvjp), name);
        }
        // vjp(grad, out): `out` is the recorded output itself, handed over only while the rule runs
        // (holding it in the closure would make the node own itself). A rule that uses it stays
        // connected to the inputs, so it can be differentiated again (autograd.Function's saved
        // outputs).
        bool record = false;
        for (const auto& p : ps) record = record || p.requires_grad();
        if (!record || !vk::GradMode::is_enabled() || !vk::is_floating(result.dtype()))
          return result.detach();
        auto custom = std::make_shared<vk::CustomOp>();
        custom->name = name;
        custom->result = result.detach().impl_ptr();
        custom->checks_own_reads = true;  // FunctionCtx.saved_tensors checks their versions
        custom->grad = [f, dtypes, name](const vk::GradCtx& c) {
          nb::gil_scoped_acquire gil;
          nb::object r = f.get()(c.grad, c.out);
          return grads_from_py(r, dtypes, name.c_str());
        };
        vk::Attrs a;
        a.custom = std::move(custom);
        return vk::dispatch(vk::OpKind::Custom, ps, a);
      },
      "data"_a, "parents"_a, "vjp"_a, "op"_a = "", "pass_output"_a = false,
      "The lowest-level custom op: `data` (computed by the caller) becomes the output of an op "
      "named `op` with inputs `parents`; vjp(grad) returns one gradient per parent (None for "
      "none). Written with vkml ops, the vjp is differentiable again. With pass_output, the rule "
      "is called as vjp(grad, out) with the recorded output, and checks the versions of what it "
      "reads itself (autograd.Function's saved tensors), so backward checks none for it.");

  m.def(
      "checkpoint",
      [](nb::handle fn, nb::handle inputs) {
        PyRef f(fn);
        std::vector<Tensor> ins = tensors_of(inputs);
        return vk::autograd::checkpoint(
            [f](const std::vector<Tensor>& xs) { return call_tensor_fn(f, xs); }, ins);
      },
      "fn"_a, "inputs"_a);

  m.def(
      "gradcheck",
      [](nb::handle fn, nb::handle inputs, double eps, double atol, double rtol) {
        PyRef f(fn);
        return vk::autograd::gradcheck(
            [f](const std::vector<Tensor>& xs) { return call_tensor_fn(f, xs); },
            tensors_of(inputs), eps, atol, rtol);
      },
      "fn"_a, "inputs"_a, "eps"_a = 1e-6, "atol"_a = 1e-5, "rtol"_a = 1e-3,
      "Compares the analytic Jacobian with central differences; returns what disagreed ('' if "
      "nothing).");
  m.def(
      "gradgradcheck",
      [](nb::handle fn, nb::handle inputs, double eps, double atol, double rtol) {
        PyRef f(fn);
        return vk::autograd::gradgradcheck(
            [f](const std::vector<Tensor>& xs) { return call_tensor_fn(f, xs); },
            tensors_of(inputs), eps, atol, rtol);
      },
      "fn"_a, "inputs"_a, "eps"_a = 1e-6, "atol"_a = 1e-5, "rtol"_a = 1e-3);

  // ---- the op table ----
  m.def(
      "op_names",
      []() {
        std::vector<std::string> names;
        for (const auto& def : vk::all_ops()) names.emplace_back(def.name);
        return names;
      },
      "The name of every op in the C++ op table.");
  m.def(
      "op_info",
      [](const std::string& name) {
        for (const auto& def : vk::all_ops()) {
          if (def.name != name) continue;
          nb::dict d;
          d["name"] = std::string(def.name);
          d["arity"] = def.arity;
          d["signature"] = std::string(def.signature);
          d["summary"] = std::string(def.summary);
          d["has_grad"] = def.grad != nullptr;
          d["grad_doc"] = std::string(def.grad_doc);
          d["bitwise_deterministic"] = def.determinism == vk::Determinism::Bitwise;
          return d;
        }
        throw nb::key_error(("no op named '" + name + "'").c_str());
      },
      "name"_a, "The op table's entry for `name`.");
}

}  // namespace vkpy
