#include "kernel/cell_parent.hpp"

#include <utility>

#include <xeus/xinterpreter.hpp>
#include <xeus/xrequest_context.hpp>

#include "kernel/interpreter.hpp"
#include "kernel/output_parent.hpp"

namespace py = pybind11;

namespace interp_rpc::kernel {

namespace {

struct cell_parent {
  xeus::xrequest_context request;
};

}  // namespace

void bind_cell_parent(py::module_& m) {
  py::class_<cell_parent>(m, "CellParent")
      .def(
          "run",
          [](const cell_parent& self, const py::function& fn, const py::args& args) {
            const thread_parent pinned(self.request);
            return fn(*args);
          },
          py::arg("fn"),
          "Call fn(*args) with the output of this thread belonging to the captured request.");
  m.def(
      "cell_parent",
      [] {
        return cell_parent{static_cast<interpreter&>(xeus::get_interpreter()).current_request()};
      },
      "The request the calling thread's output belongs to now (the running cell).");
}

}  // namespace interp_rpc::kernel
