#include "core/worker_python.hpp"

#include <atomic>
#include <memory>
#include <new>
#include <string>

#include "core/argument_copy.hpp"
#include "core/buffer_lease.hpp"
#include "core/codes.hpp"
#include "core/fault_injection.hpp"
#include "core/packed_column.hpp"
#include "core/stoppable_items.hpp"

namespace interp_rpc::core {

namespace {

// Calls view.release(), keeping whatever exception is pending (no Python
// call may run with one set) and dropping any error release() itself raised:
// a view with derived exports refuses, and the lease count reports that.
void release_view(PyObject* view) {
  PyObject* pending = PyErr_GetRaisedException();
  py_ref released = py_ref::steal(PyObject_CallMethod(view, "release", nullptr));
  if (!released) PyErr_Clear();
  PyErr_SetRaisedException(pending);
}

py_ref read_only_view(const void* data, std::size_t size) {
  return py_ref::steal(PyMemoryView_FromMemory(const_cast<char*>(static_cast<const char*>(data)),
                                               static_cast<Py_ssize_t>(size), PyBUF_READ));
}

// Reads a (kind: int, reply: bytes, *costs: int) tuple returned by the
// worker's Python code.
// A reply is (kind, bytes, costs...), and a call's reply may end with the
// list of values it holds (held_result.hpp), given to `held`.
bool read_reply(PyObject* result, int& kind, std::string& reply, std::int64_t* costs,
                std::size_t n_costs, std::shared_ptr<held_result>* held = nullptr) {
  const auto fixed = static_cast<Py_ssize_t>(2 + n_costs);
  if (!PyTuple_Check(result) || (PyTuple_GET_SIZE(result) != fixed &&
                                 (held == nullptr || PyTuple_GET_SIZE(result) != fixed + 1))) {
    return false;
  }
  if (PyTuple_GET_SIZE(result) == fixed + 1) {
    auto values = std::make_shared<held_result>();
    if (!values->hold(PyTuple_GET_ITEM(result, fixed))) {
      values->abandon();
      values->release_if_done();
      return false;
    }
    *held = std::move(values);
  }
  PyObject* bytes = PyTuple_GET_ITEM(result, 1);
  if (!PyBytes_Check(bytes)) return false;
  kind = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(result, 0)));
  const auto size = static_cast<std::size_t>(PyBytes_GET_SIZE(bytes));
  try {
    if (fault_injection::fail_reply_copy()) throw std::bad_alloc();
    reply.assign(PyBytes_AS_STRING(bytes), size);
  } catch (const std::bad_alloc&) {
    // On the worker's thread, an escaping bad_alloc would end the process.
    kind = reply_kind_engine_error;
    reply = "out of memory: the engine could not copy the worker's " + std::to_string(size) +
            "-byte reply out of its interpreter";
    return !PyErr_Occurred();
  }
  for (std::size_t i = 0; i < n_costs; ++i) {
    costs[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(result, static_cast<Py_ssize_t>(2 + i)));
  }
  return !PyErr_Occurred();
}

}  // namespace

std::string take_python_error() {
  py_ref exc = py_ref::steal(PyErr_GetRaisedException());
  if (!exc) return "unknown error";
  std::string text;
  py_ref traceback = py_ref::steal(PyImport_ImportModule("traceback"));
  if (traceback) {
    py_ref lines = py_ref::steal(
        PyObject_CallMethod(traceback.get(), "format_exception", "O", exc.get()));
    py_ref empty = py_ref::steal(PyUnicode_FromString(""));
    py_ref joined = lines && empty ? py_ref::steal(PyUnicode_Join(empty.get(), lines.get())) : py_ref();
    if (joined) {
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(joined.get(), &size);
      if (utf8 != nullptr) text.assign(utf8, static_cast<std::size_t>(size));
    }
  }
  if (text.empty()) {
    PyErr_Clear();
    py_ref str = py_ref::steal(PyObject_Str(exc.get()));
    const char* utf8 = str ? PyUnicode_AsUTF8(str.get()) : nullptr;
    text = utf8 != nullptr ? utf8 : "unprintable error";
  }
  PyErr_Clear();
  return text;
}


worker_functions bootstrap(const pool_options& options, int& kind, std::string& reply) {
  py_ref module = py_ref::steal(PyModule_New("_interp_rpc_worker"));
  if (!module) {
    kind = reply_kind_engine_error;
    reply = take_python_error();
    return {};
  }
  PyObject* globals = PyModule_GetDict(module.get());
  py_ref filename = py_ref::steal(PyUnicode_FromString(options.bootstrap_filename.c_str()));
  py_ref code = py_ref::steal(Py_CompileString(options.bootstrap_source.c_str(),
                                               options.bootstrap_filename.c_str(), Py_file_input));
  // The worker's Python code packs its results with it (_worker/columns.py),
  // its chunk loops take their items through stoppable_items, and it copies
  // large bytes arguments with the caller's help (argument_copy.hpp).
  py_ref pack_column = py_ref::steal(new_pack_column_function());
  py_ref stoppable_items = py_ref::steal(new_stoppable_items_type());
  py_ref copy_argument = py_ref::steal(new_copy_argument_function());
  py_ref arguments_loaded = py_ref::steal(new_arguments_loaded_function());
  if (!filename || !code || !pack_column || !stoppable_items || !copy_argument ||
      !arguments_loaded ||
      PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) < 0 ||
      PyDict_SetItemString(globals, "pack_column", pack_column.get()) < 0 ||
      PyDict_SetItemString(globals, "stoppable_items", stoppable_items.get()) < 0 ||
      PyDict_SetItemString(globals, "copy_argument", copy_argument.get()) < 0 ||
      PyDict_SetItemString(globals, "arguments_loaded", arguments_loaded.get()) < 0 ||
      PyDict_SetItemString(globals, "__file__", filename.get()) < 0 ||
      PyDict_SetItemString(PyImport_GetModuleDict(), "_interp_rpc_worker", module.get()) < 0) {
    kind = reply_kind_engine_error;
    reply = take_python_error();
    return {};
  }
  py_ref ran = py_ref::steal(PyEval_EvalCode(code.get(), globals, globals));
  PyObject* setup = ran ? PyDict_GetItemString(globals, "setup") : nullptr;
  PyObject* execute = ran ? PyDict_GetItemString(globals, "execute") : nullptr;
  PyObject* after_reply = ran ? PyDict_GetItemString(globals, "after_reply") : nullptr;
  if (setup == nullptr || execute == nullptr || after_reply == nullptr ||
      !PyList_CheckExact(after_reply)) {
    kind = reply_kind_engine_error;
    reply = ran ? "the worker bootstrap defines no setup(), execute() or after_reply list"
                : take_python_error();
    return {};
  }
  py_ref config = read_only_view(options.setup_request.data(), options.setup_request.size());
  py_ref result = config ? py_ref::steal(PyObject_CallOneArg(setup, config.get())) : py_ref();
  if (config) release_view(config.get());
  if (!result || !read_reply(result.get(), kind, reply, nullptr, 0)) {
    kind = reply_kind_engine_error;
    reply = take_python_error();
    return {};
  }
  if (kind != reply_kind_ok) return {};
  return {py_ref::borrow(execute), py_ref::borrow(after_reply)};
}

namespace {

// Empties the list, which frees what only it referenced.
void clear_list(PyObject* list) {
  if (PyList_GET_SIZE(list) == 0) return;
  if (PyList_SetSlice(list, 0, PY_SSIZE_T_MAX, nullptr) < 0) PyErr_Clear();
}

}  // namespace

void release_after_reply(const worker_functions& worker) { clear_list(worker.after_reply.get()); }

void run_call(const worker_functions& worker, PyObject* lease_type, call& c, int& kind,
              std::string& reply) {
  const auto live = std::make_shared<std::atomic<int>>(0);
  py_ref request = read_only_view(c.request.data(), c.request.size());
  py_ref buffers = py_ref::steal(PyList_New(static_cast<Py_ssize_t>(c.buffers.size())));
  bool ok = request && buffers;
  for (std::size_t i = 0; ok && i < c.buffers.size(); ++i) {
    py_ref view = make_leased_view(lease_type, c.buffers[i].data, c.buffers[i].size, live);
    ok = static_cast<bool>(view);
    if (ok) PyList_SET_ITEM(buffers.get(), static_cast<Py_ssize_t>(i), view.release());
  }
  std::int64_t costs[2] = {0, 0};
  const current_call_scope running(c);
  py_ref result = ok ? py_ref::steal(PyObject_CallFunctionObjArgs(worker.execute.get(), request.get(),
                                                                  buffers.get(), nullptr))
                     : py_ref();
  // Whatever execute() did: a caller standing by stops now at the latest.
  if (c.argument_copy) c.argument_copy->finish();
  std::shared_ptr<held_result> held;
  if (!result || !read_reply(result.get(), kind, reply, costs, 2, &held)) {
    kind = reply_kind_engine_error;
    reply = take_python_error();
    if (held) {
      held->abandon();
      held->release_if_done();
      held.reset();
    }
  }
  c.timing.deserialize_ns = costs[0];
  c.timing.result_serialize_ns = costs[1];
  result = py_ref();
  // The reply's list of values is gone: what only `held` references now,
  // the worker keeps nowhere else.
  if (held) held->mark_sole_owner();
  c.held = std::move(held);
  // Invalidate the views we made, so that a view object the target kept is
  // unusable; views derived from them keep their lease alive, which we see.
  if (request) release_view(request.get());
  if (buffers) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(buffers.get()); ++i) {
      PyObject* view = PyList_GET_ITEM(buffers.get(), i);
      if (view != nullptr) release_view(view);
    }
  }
  buffers = py_ref();
  if (live->load(std::memory_order_acquire) != 0) {
    // The arguments kept for after the reply may hold a view of the
    // caller's memory: they go now, before the caller's buffers may.
    clear_list(worker.after_reply.get());
  }
  if (live->load(std::memory_order_acquire) != 0) {
    // A view may be held only by garbage awaiting the cycle collector (a
    // traceback whose frames reference it): collect before concluding that
    // the target kept it.
    PyGC_Collect();
    PyErr_Clear();
  }
  if (live->load(std::memory_order_acquire) != 0) {
    c.buffers_retained.store(true, std::memory_order_release);
  }
}


}  // namespace interp_rpc::core
