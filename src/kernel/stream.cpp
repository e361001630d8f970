#include "kernel/stream.hpp"

#include <utility>

namespace py = pybind11;

namespace interp_rpc::kernel {

namespace {

// Above this, a long line without a newline is published anyway, so that
// memory stays bounded.
constexpr std::size_t max_buffered_bytes = 64 * 1024;

}  // namespace

stream::stream(xeus::xinterpreter& interpreter, std::string name, int fd)
    : p_interpreter(&interpreter), m_name(std::move(name)), m_fd(fd) {}

py::int_ stream::write(const py::str& text) {
  // TextIOBase.write returns the number of characters written.
  py::int_ length(py::len(text));
  if (p_interpreter == nullptr) {
    py::module_::import("sys").attr(("__" + m_name + "__").c_str()).attr("write")(text);
    return length;
  }
  m_buffer += text.cast<std::string>();
  const std::size_t last_newline = m_buffer.rfind('\n');
  if (m_buffer.size() > max_buffered_bytes) {
    publish(std::exchange(m_buffer, std::string()));
  } else if (last_newline != std::string::npos) {
    std::string rest = m_buffer.substr(last_newline + 1);
    m_buffer.resize(last_newline + 1);
    publish(std::exchange(m_buffer, std::move(rest)));
  }
  return length;
}

void stream::flush() {
  if (!m_buffer.empty()) {
    publish(std::exchange(m_buffer, std::string()));
  }
}

void stream::detach() {
  flush();
  p_interpreter = nullptr;
}

void stream::publish(std::string text) {
  if (p_interpreter != nullptr) {
    p_interpreter->publish_stream(m_name, text);
  }
}

void bind_stream(py::module_& m) {
  // dynamic_attr: IPython wraps a running cell's sys.stdout.write to keep its
  // output in the history, by assigning to the instance.
  py::class_<stream>(m, "Stream", "A text stream whose output goes to the notebook.",
                     py::dynamic_attr())
      .def("write", &stream::write, py::arg("text"))
      .def(
          "writelines",
          [](stream& self, const py::iterable& lines) {
            for (const py::handle line : lines) {
              self.write(py::reinterpret_borrow<py::str>(line));
            }
          },
          py::arg("lines"))
      .def("flush", &stream::flush)
      .def("fileno", &stream::fileno)
      .def("isatty", [](const stream&) { return false; })
      .def("readable", [](const stream&) { return false; })
      .def("writable", [](const stream&) { return true; })
      .def("seekable", [](const stream&) { return false; })
      .def_property_readonly("name", [](const stream& self) { return "<" + self.name() + ">"; })
      .def_property_readonly("encoding", [](const stream&) { return "utf-8"; })
      .def_property_readonly("errors", [](const stream&) { return "strict"; })
      .def_property_readonly("mode", [](const stream&) { return "w"; })
      .def_property_readonly("closed", [](const stream&) { return false; })
      .def_property_readonly("line_buffering", [](const stream&) { return true; })
      .def_property_readonly("newlines", [](const stream&) { return py::none(); });
}

}  // namespace interp_rpc::kernel
