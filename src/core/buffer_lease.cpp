#include "core/buffer_lease.hpp"

#include <new>

namespace interp_rpc::core {

namespace {

struct lease_object {
  PyObject_HEAD
  const void* data;
  Py_ssize_t size;
  lease_counter* live;  // owned; counts this lease while it exists
};

int lease_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  auto* lease = reinterpret_cast<lease_object*>(self);
  // readonly=1: a request for a writable buffer fails with BufferError.
  return PyBuffer_FillInfo(view, self, const_cast<void*>(lease->data), lease->size, 1, flags);
}

void lease_dealloc(PyObject* self) {
  auto* lease = reinterpret_cast<lease_object*>(self);
  if (lease->live != nullptr) {
    (*lease->live)->fetch_sub(1, std::memory_order_acq_rel);
    delete lease->live;
  }
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyType_Slot lease_slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(lease_getbuffer)},
    {Py_tp_dealloc, reinterpret_cast<void*>(lease_dealloc)},
    {Py_tp_doc, const_cast<char*>("Read-only access to a caller's buffer for one call.")},
    {0, nullptr},
};

PyType_Spec lease_spec = {
    "interp_rpc.BufferLease",
    sizeof(lease_object),
    0,
    Py_TPFLAGS_DEFAULT,
    lease_slots,
};

}  // namespace

py_ref make_lease_type() { return py_ref::steal(PyType_FromSpec(&lease_spec)); }

py_ref make_leased_view(PyObject* lease_type, const void* data, Py_ssize_t size,
                        const lease_counter& live) {
  auto* type = reinterpret_cast<PyTypeObject*>(lease_type);
  py_ref lease = py_ref::steal(type->tp_alloc(type, 0));
  if (!lease) return {};
  auto* object = reinterpret_cast<lease_object*>(lease.get());
  object->data = data;
  object->size = size;
  object->live = new (std::nothrow) lease_counter(live);
  if (object->live == nullptr) return py_ref::steal(PyErr_NoMemory());
  live->fetch_add(1, std::memory_order_acq_rel);
  return py_ref::steal(PyMemoryView_FromObject(lease.get()));
}

}  // namespace interp_rpc::core
