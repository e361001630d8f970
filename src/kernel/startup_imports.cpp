#include "kernel/startup_imports.hpp"

#include <string>

namespace py = pybind11;
using namespace pybind11::literals;

namespace interp_rpc::kernel {

namespace {

constexpr const char* terminal_embed = "IPython.terminal.embed";

// The real IPython.terminal.embed, imported on first use: the stand-in
// leaves sys.modules, and the real module takes its place as the package's
// attribute and, for embed, as IPython.embed.
py::object load_terminal_embed(const py::object& stand_in) {
  const py::dict modules = py::module_::import("sys").attr("modules");
  if (modules.contains(terminal_embed) && py::object(modules[terminal_embed]).is(stand_in)) {
    PyDict_DelItemString(modules.ptr(), terminal_embed);
  }
  py::object real = py::module_::import("importlib").attr("import_module")(terminal_embed);
  py::setattr(modules["IPython.terminal"], "embed", real);
  const py::object ipython = modules["IPython"];
  if (py::getattr(ipython, "embed", py::none()).is(py::getattr(stand_in, "embed"))) {
    py::setattr(ipython, "embed", real.attr("embed"));
  }
  return real;
}

}  // namespace

void stand_in_for_terminal_embed() {
  const py::dict modules = py::module_::import("sys").attr("modules");
  if (modules.contains(terminal_embed)) {
    return;
  }
  py::object stand_in = py::module_::import("types").attr("ModuleType")(
      terminal_embed,
      "Stands in for IPython's terminal front end, which this kernel does not use: "
      "the real module is imported the first time anything of it is used.");
  // The functions hold the module: it lives as long as the kernel (one
  // small module), and a function kept by the user never outlives it.
  const py::object handle = stand_in;
  // PEP 562: a module's __getattr__ answers the names it does not have. The
  // import system asks a module for dunder names it may lack (`__path__`,
  // to tell a package): those are not a use, and do not import anything.
  stand_in.attr("__getattr__") = py::cpp_function(
      [handle](const std::string& name) -> py::object {
        if (name.starts_with("__") && name.ends_with("__")) {
          throw py::attribute_error("module '" + std::string(terminal_embed) +
                                    "' has no attribute '" + name + "'");
        }
        return py::getattr(load_terminal_embed(handle), name.c_str());
      },
      "name"_a);
  // `from .terminal.embed import embed` in IPython/__init__.py takes this at
  // once; a call then hands over to the real one. (A C++ function adds no
  // Python frame: embed() still finds its caller's frame one level up.)
  stand_in.attr("embed") = py::cpp_function(
      [handle](const py::args& args, const py::kwargs& kwargs) {
        return load_terminal_embed(handle).attr("embed")(*args, **kwargs);
      });
  modules[terminal_embed] = stand_in;
}

void bind_terminal_embed_stand_in() {
  const py::dict modules = py::module_::import("sys").attr("modules");
  if (!modules.contains(terminal_embed) || !modules.contains("IPython.terminal")) {
    return;
  }
  const py::object package = modules["IPython.terminal"];
  if (!py::hasattr(package, "embed")) {
    py::setattr(package, "embed", modules[terminal_embed]);
  }
}

void lend_jedi_to_the_completer() {
  const py::dict modules = py::module_::import("sys").attr("modules");
  if (!modules.contains("IPython.core.completer")) {
    return;
  }
  const py::object completer = modules["IPython.core.completer"];
  if (py::hasattr(completer, "jedi")) {
    return;  // it was imported after all (a cell's import came first)
  }
  py::object stand_in = py::module_::import("types").attr("ModuleType")(
      "jedi", "Stands in for jedi in IPython's completer until it is used.");
  // As IPython's completer sets jedi up when it imports it.
  stand_in.attr("__getattr__") = py::cpp_function(
      [completer](const std::string& name) -> py::object {
        if (name.starts_with("__") && name.ends_with("__")) {
          throw py::attribute_error("module 'jedi' has no attribute '" + name + "'");
        }
        const py::module_ jedi = py::module_::import("jedi");
        py::module_::import("jedi.api.helpers");
        py::module_::import("jedi.api.classes");
        jedi.attr("settings").attr("case_insensitive_completion") = false;
        py::setattr(completer, "jedi", jedi);
        return py::getattr(jedi, name.c_str());
      },
      "name"_a);
  py::setattr(completer, "jedi", stand_in);
}

bool kept_out_of_startup(std::string_view module) {
  return module == "jedi" || module.starts_with("jedi.");
}

}  // namespace interp_rpc::kernel
