#include "core/subinterpreter.hpp"

// Exported by libpython 3.14, declared only in its internal headers
// (internal/pycore_pystate.h: "Export for _interpreters module"). A worker
// marks its interpreter as running for its whole life, so that CPython
// refuses to destroy it from outside (_interpreters.destroy() raises
// "interpreter running") and is_running() tells the truth.
extern "C" {
PyAPI_FUNC(int) _PyInterpreterState_SetRunningMain(PyInterpreterState* interp);
PyAPI_FUNC(void) _PyInterpreterState_SetNotRunningMain(PyInterpreterState* interp);
}

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
  PyInterpreterState* interp = PyThreadState_GetInterpreter(state);
  m_id = PyInterpreterState_GetID(interp);
  if (_PyInterpreterState_SetRunningMain(interp) < 0) PyErr_Clear();
}

own_subinterpreter::~own_subinterpreter() {
  if (m_state == nullptr) return;
  _PyInterpreterState_SetNotRunningMain(PyThreadState_GetInterpreter(m_state));
  Py_EndInterpreter(m_state);
}

}  // namespace interp_rpc::core
