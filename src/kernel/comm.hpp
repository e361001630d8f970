// Jupyter comms for Python code: what ipywidgets and friends talk through.
//
// Python libraries reach comms through the `comm` package: comm.create_comm()
// and comm.get_comm_manager() are meant to be replaced by the kernel, which is
// what install() does. Our Comm objects wrap xeus comms, so xeus routes the
// frontend's comm_open / comm_msg / comm_close to them.
//
// Threads. xeus's comm registry (its maps of targets and comms) is read by the
// main thread when it dispatches a comm message and written whenever a comm
// is opened or destroyed, from any Python thread. The GIL guards it: Python
// holds it, and the kernel dispatches comm messages holding it (see
// shell_protocol). Our own maps are touched with the GIL only.
//
// Lifetime. xeus calls a comm's handlers through the xeus::xcomm itself, and a
// Python callback may drop the last reference to its own Comm (closing a
// widget from its button's callback). So the manager keeps every Comm that
// owns a xeus comm alive, and a closed Comm's xeus comm is destroyed (which
// unregisters it: comm_info stops listing it) at once, unless a comm handler
// is running: then when xeus's dispatch has returned (after_dispatch()).
// Closing releases the Python callbacks at once.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <pybind11/pybind11.h>
#include <xeus/xcomm.hpp>

namespace interp_rpc::kernel {

class interpreter;
class comm_manager;

// The Python class Comm.
class comm {
 public:
  comm(comm_manager& manager, xeus::xcomm xeus_comm, std::string target_name);
  comm(const comm&) = delete;
  comm& operator=(const comm&) = delete;

  void send(const pybind11::object& data, const pybind11::object& metadata,
            const pybind11::object& buffers);
  void close(const pybind11::object& data, const pybind11::object& metadata,
             const pybind11::object& buffers);
  void on_msg(pybind11::object callback);
  void on_close(pybind11::object callback);

  const std::string& comm_id() const noexcept { return m_id; }
  const std::string& target_name() const noexcept { return m_target_name; }
  bool closed() const noexcept { return m_closed; }
  pybind11::object kernel() const;

 private:
  friend class comm_manager;
  void handle_message(const xeus::xmessage& message);
  void handle_close(const xeus::xmessage& message);
  // Marks it closed and drops the Python callbacks.
  void mark_closed();

  comm_manager* p_manager;  // null once the kernel is gone
  std::optional<xeus::xcomm> m_comm;
  std::string m_id;
  std::string m_target_name;
  pybind11::object m_on_msg;
  pybind11::object m_on_close;
  bool m_closed = false;
};

class comm_manager {
 public:
  explicit comm_manager(interpreter& owner);
  comm_manager(const comm_manager&) = delete;
  comm_manager& operator=(const comm_manager&) = delete;

  // Makes comm.create_comm and comm.get_comm_manager ours. Needs the GIL.
  void install(pybind11::object kernel);

  // The kernel opens a comm to the frontend.
  pybind11::object open(const std::string& target_name, const pybind11::object& data,
                        const pybind11::object& metadata, const pybind11::object& buffers,
                        const pybind11::object& comm_id);
  // callback(comm, open_message) runs when the frontend opens a comm to target_name.
  void register_target(const std::string& target_name, pybind11::object callback);
  void unregister_target(const std::string& target_name);

  // The comm with this id, or None.
  pybind11::object get(const std::string& comm_id) const;

  // Main thread, with the GIL, once xeus has dispatched a comm message:
  // destroys what its handlers closed.
  void after_dispatch();
  // With the GIL: destroys the xeus comms of closed Comms, if no handler runs.
  void collect_closed();
  // Once the kernel's server has stopped and before xeus is destroyed, with
  // the GIL: destroys every xeus comm, gives `comm` its functions back, and
  // makes the Python objects inert.
  void detach();

  interpreter& owner() noexcept { return m_owner; }
  pybind11::object kernel() const { return m_kernel; }

 private:
  friend class comm;
  // Around a comm handler: counts it, for collect_closed().
  template <class F>
  void run_handler(const xeus::xmessage& message, F&& f);
  pybind11::object adopt(std::unique_ptr<comm> c);
  void open_from_frontend(xeus::xcomm&& xeus_comm, const xeus::xmessage& request);
  const xeus::xtarget* target(const std::string& target_name);

  interpreter& m_owner;
  pybind11::object m_kernel;  // the object comms report as their kernel
  pybind11::object m_python_manager;
  pybind11::object m_original_create_comm;
  pybind11::object m_original_get_comm_manager;
  std::map<std::string, pybind11::object> m_targets;
  std::map<const comm*, pybind11::object> m_comms;  // every comm that owns a xeus comm
  int m_handlers_running = 0;  // comm handlers on the stack (main thread)
  bool m_detached = false;
};

// Buffers for a message, from None or a list of objects with the buffer
// protocol (bytes, memoryview, numpy arrays...), copied in C order.
xeus::buffer_sequence to_buffer_sequence(const pybind11::handle& buffers);

// Defines the Python classes Comm and CommManager in module m.
void bind_comm(pybind11::module_& m);

}  // namespace interp_rpc::kernel
