#include "kernel/comm.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

#include <pybind11_json/pybind11_json.hpp>
#include <xeus/xguid.hpp>
#include <xeus/xinterpreter.hpp>

#include "kernel/interpreter.hpp"
#include "kernel/message_json.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace interp_rpc::kernel {

namespace {

// A message as Python kernels hand it to comm callbacks.
py::dict to_python(const xeus::xmessage& message) {
  py::list buffers;
  for (const xeus::binary_buffer& buffer : message.buffers()) {
    buffers.append(py::memoryview(py::bytes(buffer.data(), buffer.size())));
  }
  const nl::json& header = message.header();
  return py::dict("header"_a = pyjson::from_json(header),
                  "parent_header"_a = pyjson::from_json(message.parent_header()),
                  "metadata"_a = pyjson::from_json(message.metadata()),
                  "content"_a = pyjson::from_json(message.content()),
                  "buffers"_a = buffers, "msg_id"_a = header.value("msg_id", ""),
                  "msg_type"_a = header.value("msg_type", ""));
}

}  // namespace

xeus::buffer_sequence to_buffer_sequence(const py::handle& buffers) {
  xeus::buffer_sequence result;
  if (buffers.is_none()) {
    return result;
  }
  for (const py::handle item : buffers) {
    // bytes, bytearray, memoryview, numpy arrays: anything with a buffer, in
    // C order (a strided view is copied into one).
    const py::object contiguous = py::reinterpret_steal<py::object>(
        PyMemoryView_GetContiguous(item.ptr(), PyBUF_READ, 'C'));
    if (!contiguous) {
      throw py::error_already_set();
    }
    const Py_buffer* view = PyMemoryView_GET_BUFFER(contiguous.ptr());
    const auto* bytes = static_cast<const char*>(view->buf);
    result.emplace_back(bytes, bytes + view->len);
  }
  return result;
}

/**** comm ****/

comm::comm(comm_manager& manager, xeus::xcomm xeus_comm, std::string target_name)
    : p_manager(&manager),
      m_comm(std::move(xeus_comm)),
      m_id(std::string(m_comm->id())),
      m_target_name(std::move(target_name)) {
  m_comm->on_message([this](xeus::xmessage message) { handle_message(message); });
  m_comm->on_close([this](xeus::xmessage message) { handle_close(message); });
}

void comm::send(const py::object& data, const py::object& metadata, const py::object& buffers) {
  if (m_closed || !m_comm) {
    return;
  }
  m_comm->send(to_message_json_object(metadata, "metadata"), to_message_json_object(data, "data"), to_buffer_sequence(buffers));
}

void comm::close(const py::object& data, const py::object& metadata, const py::object& buffers) {
  if (m_closed || !m_comm) {
    return;
  }
  m_comm->close(to_message_json_object(metadata, "metadata"), to_message_json_object(data, "data"), to_buffer_sequence(buffers));
  mark_closed();
  p_manager->collect_closed();
}

void comm::on_msg(py::object callback) {
  if (!m_closed) m_on_msg = std::move(callback);
}

void comm::on_close(py::object callback) {
  if (!m_closed) m_on_close = std::move(callback);
}

void comm::mark_closed() {
  m_closed = true;
  m_on_msg = py::none();
  m_on_close = py::none();
}

py::object comm::kernel() const { return p_manager ? p_manager->kernel() : py::none(); }

// xeus calls these on the main thread, without the GIL; Python threads may
// close the comm or change its callbacks meanwhile, under the GIL.
void comm::handle_message(const xeus::xmessage& message) {
  py::gil_scoped_acquire gil;
  if (m_closed || !m_on_msg || m_on_msg.is_none()) {
    return;
  }
  // A copy: the callback may replace itself (or close the comm).
  const py::object callback = m_on_msg;
  p_manager->run_handler(message, [&] { callback(to_python(message)); });
}

void comm::handle_close(const xeus::xmessage& message) {
  py::gil_scoped_acquire gil;
  if (m_closed) {
    return;
  }
  const py::object callback = m_on_close;
  mark_closed();
  if (callback && !callback.is_none()) {
    p_manager->run_handler(message, [&] { callback(to_python(message)); });
  }
}

/**** comm_manager ****/

comm_manager::comm_manager(interpreter& owner) : m_owner(owner) {}

void comm_manager::install(py::object kernel) {
  m_kernel = std::move(kernel);
  m_python_manager = py::cast(this, py::return_value_policy::reference);
  py::module_ comm_package = py::module_::import("comm");
  m_original_create_comm = comm_package.attr("create_comm");
  m_original_get_comm_manager = comm_package.attr("get_comm_manager");
  comm_package.attr("create_comm") = py::cpp_function(
      [this](const std::string& target_name, const py::object& data, const py::object& metadata,
             const py::object& buffers, const py::object& comm_id, const py::kwargs&) {
        return open(target_name, data, metadata, buffers, comm_id);
      },
      "target_name"_a = "", "data"_a = py::none(), "metadata"_a = py::none(),
      "buffers"_a = py::none(), "comm_id"_a = py::none());
  comm_package.attr("get_comm_manager") =
      py::cpp_function([this] { return m_python_manager; });
}

py::object comm_manager::open(const std::string& target_name, const py::object& data,
                              const py::object& metadata, const py::object& buffers,
                              const py::object& comm_id) {
  if (m_detached) {
    throw std::runtime_error("the kernel has shut down: no comm can be opened");
  }
  const xeus::xguid id =
      comm_id.is_none() ? xeus::new_xguid() : xeus::xguid(comm_id.cast<std::string>());
  xeus::xcomm xeus_comm(target(target_name), id);
  xeus_comm.open(to_message_json_object(metadata, "metadata"), to_message_json_object(data, "data"), to_buffer_sequence(buffers));
  return adopt(std::make_unique<comm>(*this, std::move(xeus_comm), target_name));
}

void comm_manager::register_target(const std::string& target_name, py::object callback) {
  if (m_detached) {
    return;
  }
  m_targets.insert_or_assign(target_name, std::move(callback));
  target(target_name);
}

void comm_manager::unregister_target(const std::string& target_name) {
  // The xeus target stays: comms already opened on it point to it.
  m_targets.erase(target_name);
}

const xeus::xtarget* comm_manager::target(const std::string& target_name) {
  auto& xeus_manager = m_owner.comm_manager();
  if (const xeus::xtarget* existing = xeus_manager.target(target_name)) {
    return existing;
  }
  // Comms opened by the kernel need a xeus target too, even when no Python
  // callback is registered for the frontend to open comms on it.
  xeus_manager.register_comm_target(
      target_name, [this](xeus::xcomm&& xeus_comm, xeus::xmessage request) {
        open_from_frontend(std::move(xeus_comm), request);
      });
  return xeus_manager.target(target_name);
}

void comm_manager::open_from_frontend(xeus::xcomm&& xeus_comm, const xeus::xmessage& request) {
  const std::string target_name = request.content().value("target_name", "");
  py::gil_scoped_acquire gil;
  auto callback = m_targets.find(target_name);
  if (callback == m_targets.end()) {
    // Nobody listens on this target (any more): tell the frontend, as the
    // protocol asks for an unknown target.
    xeus_comm.close(nl::json::object(), nl::json::object(), {});
    return;
  }
  py::object target_callback = callback->second;
  py::object python_comm = adopt(std::make_unique<comm>(*this, std::move(xeus_comm), target_name));
  run_handler(request, [&] { target_callback(python_comm, to_python(request)); });
}

template <class F>
void comm_manager::run_handler(const xeus::xmessage& message, F&& f) {
  struct count {
    int& running;
    explicit count(int& r) : running(r) { ++running; }
    ~count() { --running; }
  } counted(m_handlers_running);
  m_owner.run_for_request(message, std::forward<F>(f));
}

py::object comm_manager::get(const std::string& comm_id) const {
  for (const auto& [key, python_comm] : m_comms) {
    if (key->comm_id() == comm_id && !key->closed()) {
      return python_comm;
    }
  }
  return py::none();
}

void comm_manager::after_dispatch() {
  if (!m_detached) {
    collect_closed();
  }
}

py::object comm_manager::adopt(std::unique_ptr<comm> c) {
  const comm* key = c.get();
  py::object python_comm = py::cast(std::move(c));
  m_comms.emplace(key, python_comm);
  return python_comm;
}

void comm_manager::collect_closed() {
  if (m_handlers_running > 0) {
    return;  // after_dispatch() will
  }
  for (auto it = m_comms.begin(); it != m_comms.end();) {
    if (it->first->closed()) {
      it->second.cast<comm&>().m_comm.reset();
      it = m_comms.erase(it);
    } else {
      ++it;
    }
  }
}

void comm_manager::detach() {
  m_detached = true;
  for (auto& [key, python_comm] : m_comms) {
    comm& c = python_comm.cast<comm&>();
    c.m_comm.reset();
    c.m_closed = true;
    c.p_manager = nullptr;
  }
  m_comms.clear();
  m_targets.clear();
  if (m_original_create_comm) {
    py::module_ comm_package = py::module_::import("comm");
    comm_package.attr("create_comm") = m_original_create_comm;
    comm_package.attr("get_comm_manager") = m_original_get_comm_manager;
  }
  m_original_create_comm = py::object();
  m_original_get_comm_manager = py::object();
  m_python_manager = py::object();
  m_kernel = py::object();
}

/**** Python classes ****/

void bind_comm(py::module_& m) {
  py::class_<comm>(m, "Comm", "A Jupyter comm, opened by the kernel or by the frontend.")
      .def("send", &comm::send, "data"_a = py::none(), "metadata"_a = py::none(),
           "buffers"_a = py::none())
      .def(
          "close",
          [](comm& self, const py::object& data, const py::object& metadata,
             const py::object& buffers, bool) { self.close(data, metadata, buffers); },
          "data"_a = py::none(), "metadata"_a = py::none(), "buffers"_a = py::none(),
          "deleting"_a = false)
      .def("on_msg", &comm::on_msg, "callback"_a)
      .def("on_close", &comm::on_close, "callback"_a)
      .def_property_readonly("comm_id", &comm::comm_id)
      .def_property_readonly("target_name", &comm::target_name)
      .def_property_readonly("kernel", &comm::kernel)
      .def_property_readonly("primary", [](const comm&) { return true; })
      .def_property_readonly("_closed", &comm::closed);

  py::class_<comm_manager>(m, "CommManager", "The kernel's registry of comm targets.")
      .def(
          "register_target",
          [](comm_manager& self, const std::string& target_name, py::object callback) {
            // The comm package also accepts a dotted name to import.
            if (py::isinstance<py::str>(callback)) {
              callback = py::module_::import("traitlets").attr("import_item")(callback);
            }
            self.register_target(target_name, std::move(callback));
          },
          "target_name"_a, "f"_a)
      .def(
          "unregister_target",
          [](comm_manager& self, const std::string& target_name, const py::object&) {
            self.unregister_target(target_name);
          },
          "target_name"_a, "f"_a = py::none())
      .def("get_comm", &comm_manager::get, "comm_id"_a,
           "The open comm with this id, or None.");
}

}  // namespace interp_rpc::kernel
