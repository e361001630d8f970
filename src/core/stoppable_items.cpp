#include "core/stoppable_items.hpp"

namespace interp_rpc::core {

namespace {

struct stoppable_object {
  PyObject_HEAD
  PyObject* items;  // an iterator over the items; null once done
  PyObject* stopped;  // the exception type raised at a stop
  Py_buffer flag;  // flag.obj is null when no buffer is held
  Py_ssize_t next_index;
};

stoppable_object* as_stoppable(PyObject* self) {
  return reinterpret_cast<stoppable_object*>(self);
}

// The flag is written by the caller, in another interpreter's thread or in
// another process, while this reads it: an atomic load, relaxed, since the
// byte orders nothing else.
bool is_set(const Py_buffer& flag) {
  return __atomic_load_n(static_cast<const unsigned char*>(flag.buf), __ATOMIC_RELAXED) != 0;
}

PyObject* stoppable_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* items = nullptr;
  PyObject* flag = nullptr;
  PyObject* stopped = nullptr;
  Py_ssize_t first_index = 0;
  if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "stoppable_items() takes no keyword arguments");
    return nullptr;
  }
  if (PyArg_ParseTuple(args, "OOOn:stoppable_items", &items, &flag, &stopped, &first_index) == 0) {
    return nullptr;
  }
  if (PyExceptionClass_Check(stopped) == 0) {
    PyErr_Format(PyExc_TypeError, "stoppable_items(): stopped must be an exception class, not %T",
                 stopped);
    return nullptr;
  }
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  stoppable_object* it = as_stoppable(self);
  it->flag.obj = nullptr;
  if (PyObject_GetBuffer(flag, &it->flag, PyBUF_SIMPLE) < 0) {
    Py_DECREF(self);
    return nullptr;
  }
  if (it->flag.len < 1) {
    PyErr_SetString(PyExc_ValueError, "stoppable_items(): the flag is an empty buffer");
    Py_DECREF(self);
    return nullptr;
  }
  it->items = PyObject_GetIter(items);
  if (it->items == nullptr) {
    Py_DECREF(self);
    return nullptr;
  }
  it->stopped = Py_NewRef(stopped);
  it->next_index = first_index;
  return self;
}

PyObject* stoppable_next(PyObject* self) {
  stoppable_object* it = as_stoppable(self);
  if (it->items == nullptr) return nullptr;
  if (is_set(it->flag)) {
    PyErr_Format(it->stopped, "the map was stopped before item %zd", it->next_index);
    return nullptr;
  }
  PyObject* item = Py_TYPE(it->items)->tp_iternext(it->items);
  if (item == nullptr) {
    Py_CLEAR(it->items);  // at the end, or an error the items raised
    return nullptr;
  }
  ++it->next_index;
  return item;
}

int stoppable_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(as_stoppable(self)->items);
  Py_VISIT(as_stoppable(self)->stopped);
  Py_VISIT(as_stoppable(self)->flag.obj);
  return 0;
}

int stoppable_clear(PyObject* self) {
  stoppable_object* it = as_stoppable(self);
  Py_CLEAR(it->items);
  Py_CLEAR(it->stopped);
  if (it->flag.obj != nullptr) PyBuffer_Release(&it->flag);
  return 0;
}

void stoppable_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  stoppable_clear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyType_Slot stoppable_slots[] = {
    {Py_tp_doc, const_cast<char*>("stoppable_items(items, flag, stopped, first_index): the items, "
                                  "until the flag's first byte is set (core/stoppable_items.hpp).")},
    {Py_tp_new, reinterpret_cast<void*>(&stoppable_new)},
    {Py_tp_iter, reinterpret_cast<void*>(&PyObject_SelfIter)},
    {Py_tp_iternext, reinterpret_cast<void*>(&stoppable_next)},
    {Py_tp_traverse, reinterpret_cast<void*>(&stoppable_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&stoppable_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&stoppable_dealloc)},
    {0, nullptr},
};

PyType_Spec stoppable_spec = {
    "interp_rpc.stoppable_items",
    sizeof(stoppable_object),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    stoppable_slots,
};

}  // namespace

PyObject* new_stoppable_items_type() { return PyType_FromSpec(&stoppable_spec); }

}  // namespace interp_rpc::core
