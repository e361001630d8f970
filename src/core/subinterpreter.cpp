#include "core/subinterpreter.hpp"

// Exported by libpython, declared only in its internal headers
// (internal/pycore_pystate.h: "Export for _interpreters module"). A worker
// marks its interpreter as running for its whole life, so that CPython
// refuses to destroy it from outside (_interpreters.destroy() raises
// "interpreter running") and is_running() tells the truth.
//
// Private API: its signature and meaning were checked against CPython 3.14
// (pystate.c: fails, with RuntimeError set, only when the interpreter already
// runs something on another thread). Another version must be checked again
// (tests/interp_rpc/pool/test_faults.py covers what it is for) before this range
// is widened.
#if PY_VERSION_HEX < 0x030E0000 || PY_VERSION_HEX >= 0x030F0000
#error "interp-rpc uses the private _PyInterpreterState_SetRunningMain, checked on CPython 3.14 only"
#endif
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

own_subinterpreter::own_subinterpreter(main_thread_state& main, bool injected_failure) {
  // The defaults of an isolated interpreter: its own GIL and object
  // allocator, no fork/exec or daemon threads, and extension modules must
  // declare that they support multiple interpreters. CPython refuses an own
  // allocator without that check, once it has allocated the interpreter's
  // state: the injected failure takes that path.
  const PyInterpreterConfig config = {
      .use_main_obmalloc = 0,
      .allow_fork = 0,
      .allow_exec = 0,
      .allow_threads = 1,
      .allow_daemon_threads = 0,
      .check_multi_interp_extensions = injected_failure ? 0 : 1,
      .gil = PyInterpreterConfig_OWN_GIL,
  };
  PyThreadState* state = nullptr;
  const PyStatus status = Py_NewInterpreterFromConfig(&state, &config);
  if (PyStatus_Exception(status) || state == nullptr) {
    // On failure the main thread state is attached again.
    m_error = status.err_msg != nullptr ? status.err_msg : "Py_NewInterpreterFromConfig failed";
    if (injected_failure) m_error += " (an injected fault)";
    if (PyErr_Occurred()) PyErr_Clear();
    return;
  }
  main.mark_detached();
  m_state = state;
  PyInterpreterState* interp = PyThreadState_GetInterpreter(state);
  m_id = PyInterpreterState_GetID(interp);
  if (_PyInterpreterState_SetRunningMain(interp) < 0) {
    // Not expected on a fresh interpreter; a worker that cannot claim its
    // interpreter must not run in it, so it fails loudly instead.
    PyObject* exc = PyErr_GetRaisedException();
    PyObject* text = exc != nullptr ? PyObject_Str(exc) : nullptr;
    const char* utf8 = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
    m_error = std::string("could not mark the interpreter as running: ") +
              (utf8 != nullptr ? utf8 : "unknown error");
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(exc);
    Py_EndInterpreter(state);  // leaves no thread state attached; `main` re-attaches
    m_state = nullptr;
    m_id = -1;
  }
}

own_subinterpreter::~own_subinterpreter() {
  if (m_state == nullptr) return;
  _PyInterpreterState_SetNotRunningMain(PyThreadState_GetInterpreter(m_state));
  Py_EndInterpreter(m_state);
}

}  // namespace interp_rpc::core
