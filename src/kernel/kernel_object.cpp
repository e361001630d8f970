#include "kernel/kernel_object.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <pybind11_json/pybind11_json.hpp>

#include "kernel/comm.hpp"
#include "kernel/interpreter.hpp"
#include "kernel/message_json.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace interp_rpc::kernel {

namespace {

struct kernel_object {
  interpreter* owner;  // null once the kernel is gone
  py::object session;
  py::object iopub_socket;
};

struct session {
  py::object kernel;  // a cycle with the kernel object, which lives as long as Python
};

// A stand-in for ipykernel's IOPub socket: what session.send() is given.
struct iopub_socket {};

interpreter& owner_of(const session& self) {
  interpreter* owner = self.kernel.cast<const kernel_object&>().owner;
  if (owner == nullptr) {
    throw std::runtime_error("the kernel has shut down");
  }
  return *owner;
}


// jupyter_client's Session takes a parent message or a parent header.
nl::json parent_header_of(const py::handle& parent, interpreter& owner) {
  if (parent.is_none()) {
    return owner.current_request().header();
  }
  const py::dict message = py::reinterpret_borrow<py::dict>(parent);
  return message.contains("header") ? pyjson::to_json(message["header"])
                                    : pyjson::to_json(message);
}

py::object send(const session& self, const py::object& stream, const py::object& msg_or_type,
                const py::object& content, const py::object& parent, const py::object& buffers,
                const py::object& metadata) {
  interpreter& owner = owner_of(self);
  if (!stream.is(self.kernel.cast<const kernel_object&>().iopub_socket)) {
    throw py::value_error("this kernel's session sends on kernel.iopub_socket only");
  }
  std::string msg_type;
  nl::json message_content;
  nl::json message_metadata;
  nl::json parent_header;
  if (py::isinstance<py::dict>(msg_or_type)) {  // a whole message
    const py::dict message = py::reinterpret_borrow<py::dict>(msg_or_type);
    const py::dict header = message["header"];
    msg_type = header["msg_type"].cast<std::string>();
    message_content = to_message_json_object(message.attr("get")("content"), "content");
    message_metadata = to_message_json_object(message.attr("get")("metadata"), "metadata");
    parent_header = parent_header_of(message.attr("get")("parent_header", parent), owner);
  } else {
    msg_type = msg_or_type.cast<std::string>();
    message_content = to_message_json_object(content, "content");
    message_metadata = to_message_json_object(metadata, "metadata");
    parent_header = parent_header_of(parent, owner);
  }
  const nl::json header = owner.publish_iopub(msg_type, parent_header, message_metadata,
                                              message_content, to_buffer_sequence(buffers));
  return pyjson::from_json(nl::json{{"header", header},
                                    {"msg_id", header.value("msg_id", "")},
                                    {"msg_type", msg_type},
                                    {"parent_header", parent_header},
                                    {"metadata", message_metadata},
                                    {"content", message_content}});
}

// IPython's shell singleton, or None before it started (IPython may still be
// importing on another thread: this never imports it).
py::object started_shell() {
  const py::dict modules = py::module_::import("sys").attr("modules");
  if (!modules.contains("IPython.core.interactiveshell")) {
    return py::none();
  }
  const py::object shell_class =
      modules["IPython.core.interactiveshell"].attr("InteractiveShell");
  return shell_class.attr("initialized")().cast<bool>() ? py::object(shell_class.attr("instance")())
                                                        : py::object(py::none());
}

}  // namespace

py::object make_kernel_object(py::module_& m, interpreter& owner) {
  py::class_<iopub_socket>(m, "IOPubSocket", "The kernel's IOPub channel, for Session.send.");
  py::class_<session>(m, "Session", "Sends messages on the kernel's IOPub channel.")
      .def(
          "send",
          [](const session& self, const py::object& stream, const py::object& msg_or_type,
             const py::object& content, const py::object& parent, const py::object&,
             const py::object& buffers, bool, const py::object&, const py::object& metadata) {
            return send(self, stream, msg_or_type, content, parent, buffers, metadata);
          },
          "stream"_a, "msg_or_type"_a, "content"_a = py::none(), "parent"_a = py::none(),
          "ident"_a = py::none(), "buffers"_a = py::none(), "track"_a = false,
          "header"_a = py::none(), "metadata"_a = py::none(),
          "Publishes a message, as jupyter_client's Session.send (ident, track and header "
          "do not apply).")
      .def_property_readonly("session",
                             [](const session& self) { return owner_of(self).session_id(); })
      .def_property_readonly("username",
                             [](const session& self) { return owner_of(self).user_name(); });
  py::class_<kernel_object>(m, "Kernel", "The kernel, as libraries see it.")
      .def(
          "get_parent",
          [](const kernel_object& self, const py::object&) {
            if (self.owner == nullptr) {
              return py::dict();
            }
            return py::dict(pyjson::from_json(self.owner->parent_message()));
          },
          "channel"_a = py::none(),
          "The request the calling thread's output belongs to, as a whole message.")
      .def_property_readonly("comm_manager",
                             [](const kernel_object&) {
                               return py::module_::import("comm").attr("get_comm_manager")();
                             })
      .def_property_readonly("shell", [](const kernel_object&) { return started_shell(); },
                             "The IPython shell, once it has started (else None).")
      .def_property_readonly(
          "execution_count",
          [](const kernel_object&) -> py::object {
            const py::object shell = started_shell();
            return shell.is_none() ? py::int_(0) : py::object(shell.attr("execution_count"));
          },
          "The number the next cell will get, as ipykernel's kernel says: the shell's.")
      .def_property_readonly(
          "io_loop",
          [](const kernel_object& self) -> py::object {
            return self.owner == nullptr ? py::object(py::none()) : self.owner->io_loop();
          },
          "The loop cells run on, as a tornado-like IOLoop (add_callback from any thread), "
          "once the shell has started (else None).")
      .def(
          "set_parent",
          [](const kernel_object& self, const py::object& ident, const py::dict& parent,
             const py::object&) {
            if (self.owner == nullptr) {
              throw std::runtime_error("the kernel has shut down");
            }
            std::vector<std::string> identities;
            if (!ident.is_none()) {
              for (const py::handle identity : ident) {
                identities.push_back(identity.cast<std::string>());
              }
            }
            self.owner->set_parent(pyjson::to_json(parent), std::move(identities));
          },
          "ident"_a, "parent"_a, "channel"_a = "shell",
          "Makes `parent` (a whole request message) the request the calling thread's output "
          "belongs to, and get_parent()'s answer, until the next request.")
      .def_readonly("session", &kernel_object::session)
      .def_readonly("iopub_socket", &kernel_object::iopub_socket);

  py::object kernel = py::cast(kernel_object{&owner, py::none(), py::none()});
  auto& state = kernel.cast<kernel_object&>();
  state.iopub_socket = py::cast(iopub_socket{});
  state.session = py::cast(session{kernel});
  return kernel;
}

void detach_kernel_object(py::handle kernel) {
  kernel.cast<kernel_object&>().owner = nullptr;
}

}  // namespace interp_rpc::kernel
