// Bindings: vk::distributed (the _C._distributed submodule, arranged by vkml/distributed with
// torch.distributed's names). Built without MPI the submodule only says so (available = False).
// Waiting (for a collective, for MPI to start or stop) releases the GIL: the communication thread
// and the waits touch C++ tensors only.
#include "common.h"

#ifdef VKML_HAS_MPI
#include <nanobind/stl/shared_ptr.h>

#include "vkml/distributed/distributed.h"
#endif

namespace vkpy {

#ifdef VKML_HAS_MPI
namespace {

namespace dist = vk::distributed;

dist::ReduceOp reduce_op(const std::string& name) {
  if (name == "sum") return dist::ReduceOp::Sum;
  if (name == "avg") return dist::ReduceOp::Avg;
  if (name == "product") return dist::ReduceOp::Product;
  if (name == "min") return dist::ReduceOp::Min;
  if (name == "max") return dist::ReduceOp::Max;
  throw vk::RuntimeError("vk.distributed: unknown ReduceOp '" + name +
                         "' (SUM, AVG, PRODUCT, MIN, MAX)");
}

// The handle of an async_op=True call, or the call waited for (None).
nb::object finish(dist::WorkPtr work, bool async_op) {
  if (async_op) return nb::cast(std::move(work));
  without_gil(true, [&] { work->wait(); });
  return nb::none();
}

}  // namespace

void bind_distributed(nb::module_& m) {
  nb::module_ d = m.def_submodule("_distributed", "vk::distributed: collectives over MPI");
  d.attr("available") = true;
  nb::class_<dist::Work>(d, "Work", "The handle of a collective started with async_op=True.")
      .def(
          "wait",
          [](dist::Work& w) {
            without_gil(true, [&] { w.wait(); });
            return true;
          },
          "Blocks until the collective is done (and raises what it raised).")
      .def("is_completed", &dist::Work::completed)
      .def("__repr__",
           [](const dist::Work& w) { return "<vkml.distributed.Work " + w.what() + ">"; });
  d.def(
      "init", [](double timeout) { without_gil(true, [&] { dist::init(timeout); }); },
      "timeout"_a = 1800.0);
  d.def("initialized", &dist::initialized);
  d.def("rank", &dist::rank);
  d.def("world_size", &dist::world_size);
  d.def("timeout", &dist::timeout_seconds);
  d.def("finalize", [] { without_gil(true, [] { dist::finalize(); }); });
  d.def(
      "abort", [](int code) { without_gil(true, [&] { dist::abort(code); }); }, "code"_a = 1);
  d.def(
      "all_reduce",
      [](const Tensor& t, const std::string& op, bool async_op, bool checked) {
        return finish(dist::all_reduce(t, reduce_op(op), checked), async_op);
      },
      "tensor"_a, "op"_a = "sum", "async_op"_a = false, "checked"_a = true);
  d.def(
      "broadcast",
      [](const Tensor& t, int src, bool async_op) {
        return finish(dist::broadcast(t, src), async_op);
      },
      "tensor"_a, "src"_a, "async_op"_a = false);
  d.def(
      "all_gather",
      [](const Tensor& out, const Tensor& in, bool async_op) {
        return finish(dist::all_gather(out, in), async_op);
      },
      "output"_a, "input"_a, "async_op"_a = false);
  d.def(
      "reduce_scatter",
      [](const Tensor& out, const Tensor& in, const std::string& op, bool async_op) {
        return finish(dist::reduce_scatter(out, in, reduce_op(op)), async_op);
      },
      "output"_a, "input"_a, "op"_a = "sum", "async_op"_a = false);
  d.def(
      "barrier", [](bool async_op) { return finish(dist::barrier(), async_op); },
      "async_op"_a = false);
}

#else

void bind_distributed(nb::module_& m) {
  nb::module_ d = m.def_submodule("_distributed", "vk::distributed: not in this build (no MPI)");
  d.attr("available") = false;
}

#endif

}  // namespace vkpy
