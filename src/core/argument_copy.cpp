#include "core/argument_copy.hpp"

#include <algorithm>
#include <cstring>

#include "core/clock.hpp"

namespace interp_rpc::core {

namespace {

// The call this worker thread runs (current_call_scope).
thread_local call* t_current_call = nullptr;

// How long a caller stands by for the worker's copy: time for an idle worker
// to take the call, unpickle what comes before the argument and allocate its
// copy. A worker still busy with an earlier call is not waited for longer.
constexpr std::int64_t stand_by_ns = 2'000'000;
// It spins this long first (a sleeping helper wakes too late to share a copy
// that starts at once), then sleeps, looking whether the call ended this
// often (the worker's copy wakes it at once).
constexpr std::int64_t stand_by_spin_ns = 300'000;
constexpr std::int64_t stand_by_poll_ns = 100'000;

PyObject* copy_argument_call(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "copy_argument(kind, buffer) takes 2 arguments");
    return nullptr;
  }
  const bool to_bytes = args[0] == reinterpret_cast<PyObject*>(&PyBytes_Type);
  if (!to_bytes && args[0] != reinterpret_cast<PyObject*>(&PyByteArray_Type)) {
    PyErr_SetString(PyExc_TypeError, "copy_argument(kind, buffer): kind must be bytes or bytearray");
    return nullptr;
  }
  Py_buffer view;
  if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) return nullptr;
  PyObject* copy = to_bytes ? PyBytes_FromStringAndSize(nullptr, view.len)
                            : PyByteArray_FromStringAndSize(nullptr, view.len);
  if (copy != nullptr) {
    char* dst = to_bytes ? PyBytes_AS_STRING(copy) : PyByteArray_AS_STRING(copy);
    const auto* src = static_cast<const char*>(view.buf);
    const auto n = static_cast<std::size_t>(view.len);
    call* c = t_current_call;
    if (c != nullptr && c->argument_copy) {
      c->argument_copy->copy(dst, src, n);
    } else if (n > 0) {
      std::memcpy(dst, src, n);
    }
  }
  PyBuffer_Release(&view);
  return copy;
}

PyObject* arguments_loaded_call(PyObject* /*module*/, PyObject* /*unused*/) {
  call* c = t_current_call;
  if (c != nullptr && c->argument_copy) c->argument_copy->finish();
  Py_RETURN_NONE;
}

PyMethodDef copy_argument_def = {
    "copy_argument",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&copy_argument_call)),
    METH_FASTCALL,
    "copy_argument(kind, buffer) -> a new bytes or bytearray holding a copy of the buffer, "
    "made with the waiting caller's help (core/argument_copy.hpp)."};

PyMethodDef arguments_loaded_def = {
    "arguments_loaded", &arguments_loaded_call, METH_NOARGS,
    "arguments_loaded(): the call's arguments are loaded; a caller standing by to help copy "
    "them stops (core/argument_copy.hpp)."};

}  // namespace

current_call_scope::current_call_scope(call& c) noexcept : m_previous(t_current_call) {
  t_current_call = &c;
}

current_call_scope::~current_call_scope() { t_current_call = m_previous; }

PyObject* new_copy_argument_function() { return PyCFunction_New(&copy_argument_def, nullptr); }

PyObject* new_arguments_loaded_function() {
  return PyCFunction_New(&arguments_loaded_def, nullptr);
}

bool worth_sharing_argument(Py_ssize_t size) noexcept {
  return size >= 0 && static_cast<std::size_t>(size) >= shared_copy_threshold;
}

void stand_by_for_arguments(call& c, std::int64_t limit_ns) {
  if (!c.argument_copy || c.done()) return;
  const std::int64_t wait = limit_ns < 0 ? stand_by_ns : std::min(limit_ns, stand_by_ns);
  c.argument_copy->stand_by(now_ns() + wait, [&c] { return c.done(); }, stand_by_poll_ns,
                            stand_by_spin_ns);
}

}  // namespace interp_rpc::core
