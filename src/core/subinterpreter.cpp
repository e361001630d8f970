#include "core/subinterpreter.hpp"

namespace interp_rpc::core {

main_thread_state::main_thread_state(PyInterpreterState* main_interp)
    : m_state(PyThreadState_New(main_interp)) {
  PyEval_RestoreThread(m_state);
}

main_thread_state::~main_thread_state() {
  if (!m_attached) PyEval_RestoreThread(m_state);
  PyThreadState_Clear(m_state);
  PyThreadState_DeleteCurrent();
}

own_subinterpreter::own_subinterpreter(main_thread_state& main) {
  // The defaults of an isolated interpreter: its own GIL and object
  // allocator, no fork/exec or daemon threads, and extension modules must
  // declare that they support multiple interpreters.
  const PyInterpreterConfig config = {
      .use_main_obmalloc = 0,
      .allow_fork = 0,
      .allow_exec = 0,
      .allow_threads = 1,
      .allow_daemon_threads = 0,
      .check_multi_interp_extensions = 1,
      .gil = PyInterpreterConfig_OWN_GIL,
  };
  PyThreadState* state = nullptr;
  const PyStatus status = Py_NewInterpreterFromConfig(&state, &config);
  if (PyStatus_Exception(status) || state == nullptr) {
    // On failure the main thread state is attached again.
    m_error = status.err_msg != nullptr ? status.err_msg : "Py_NewInterpreterFromConfig failed";
    if (PyErr_Occurred()) PyErr_Clear();
    return;
  }
  main.mark_detached();
  m_state = state;
  m_id = PyInterpreterState_GetID(PyThreadState_GetInterpreter(state));
}

own_subinterpreter::~own_subinterpreter() {
  if (m_state != nullptr) Py_EndInterpreter(m_state);
}

}  // namespace interp_rpc::core
