#include "_core_drain.hpp"

namespace interp_rpc::binding {

namespace {

struct drain_object {
  PyObject_HEAD
  PyObject* values;  // the list; null once the end was reached
  Py_ssize_t next;
};

drain_object* as_drain(PyObject* self) { return reinterpret_cast<drain_object*>(self); }

PyObject* drain_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* values = nullptr;
  if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "drain() takes no keyword arguments");
    return nullptr;
  }
  if (PyArg_UnpackTuple(args, "drain", 1, 1, &values) == 0) return nullptr;
  if (!PyList_CheckExact(values)) {
    PyErr_Format(PyExc_TypeError, "drain() takes a list, not %T", values);
    return nullptr;
  }
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  as_drain(self)->values = Py_NewRef(values);
  as_drain(self)->next = 0;
  return self;
}

PyObject* drain_next(PyObject* self) {
  drain_object* drain = as_drain(self);
  if (drain->values == nullptr) return nullptr;
  // Read each time: the list is the map's own, but a length that changed
  // must not be read past.
  if (drain->next < PyList_GET_SIZE(drain->values)) {
    PyObject* item = PyList_GET_ITEM(drain->values, drain->next);
    PyList_SET_ITEM(drain->values, drain->next, Py_NewRef(Py_None));
    ++drain->next;
    return item;  // the list's reference, handed over
  }
  Py_CLEAR(drain->values);
  return nullptr;
}

PyObject* drain_length_hint(PyObject* self, PyObject* /*unused*/) {
  const drain_object* drain = as_drain(self);
  const Py_ssize_t left =
      drain->values == nullptr ? 0 : PyList_GET_SIZE(drain->values) - drain->next;
  return PyLong_FromSsize_t(left > 0 ? left : 0);
}

int drain_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(as_drain(self)->values);
  return 0;
}

int drain_clear(PyObject* self) {
  Py_CLEAR(as_drain(self)->values);
  return 0;
}

void drain_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  drain_clear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyMethodDef drain_methods[] = {
    {"__length_hint__", drain_length_hint, METH_NOARGS, "How many items are left."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot drain_slots[] = {
    {Py_tp_doc, const_cast<char*>("drain(values: list): an iterator over the list that puts None "
                                  "in the place of each item it returns (_core_drain.hpp).")},
    {Py_tp_new, reinterpret_cast<void*>(&drain_new)},
    {Py_tp_iter, reinterpret_cast<void*>(&PyObject_SelfIter)},
    {Py_tp_iternext, reinterpret_cast<void*>(&drain_next)},
    {Py_tp_methods, drain_methods},
    {Py_tp_traverse, reinterpret_cast<void*>(&drain_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&drain_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&drain_dealloc)},
    {0, nullptr},
};

PyType_Spec drain_spec = {
    "interp_rpc._core.drain",
    sizeof(drain_object),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    drain_slots,
};

}  // namespace

PyObject* new_drain_type() { return PyType_FromSpec(&drain_spec); }

}  // namespace interp_rpc::binding
