// Large bytes, bytearray and str values of a reply, lent by the worker rather
// than pickled into it.
//
// Pickling a 16 MiB bytes result, copying the pickle out of the worker's
// interpreter, into a Python bytes object and out of the pickle again made
// four copies of it. A reply instead names such values (exact bytes,
// bytearray or str, large: the worker's wire module decides) by their place
// in a list that the worker keeps alive; the caller builds each value in its
// own interpreter straight from the worker's memory, one copy, and the
// worker lets go of them afterwards.
//
// Nothing may change a value between the worker's return and the caller's
// copy. bytes and str are immutable. A bytearray is not: one that the
// worker's code can still reach (a global buffer reused by the next call)
// is copied aside before the worker runs anything else (mark_sole_owner),
// and the caller copies from that snapshot.
//
// Moving instead of copying. A large value that only this object still
// references (the worker kept none: `mark_sole_owner`) has nothing else
// reading it, and it is released right after the caller's read. So the
// caller's read moves its whole pages into the new object (mremap), rather
// than copying them: no copy, and none of the page faults that a fresh
// 256 MiB buffer costs. It falls back to a copy whenever the kernel refuses,
// or the two buffers do not sit at the same offset in their pages.
//
// Lifetime. The worker owns the objects: only its thread, with its GIL,
// releases them (release_if_done), once the caller has copied them or the
// call was dropped without being read. A worker that ends first (the pool
// closing, the worker dying) copies what was not taken yet into memory this
// object owns (detach), so the caller never reads freed memory.
#pragma once

#include <Python.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/shared_copy.hpp"

namespace interp_rpc::core {

class held_result {
 public:
  enum class value_type { bytes, bytearray, str };

  // Worker thread, its GIL held: holds each item of `values`, which must be
  // exact bytes, bytearray or str objects. Returns false (a Python error
  // set) if one is not.
  bool hold(PyObject* values);
  // Worker thread, before the call completes: what to do once the values
  // are copied or abandoned (wake the worker, so that it releases them).
  void when_done(std::function<void()> done) { m_when_done = std::move(done); }

  // Worker thread, its GIL held, once the reply that listed the values is
  // gone, before the worker runs anything else: notes which values only
  // this object references now, which the caller's read may then move
  // rather than copy, and copies aside each bytearray that the worker's
  // code can still reach (and so change).
  void mark_sole_owner();

  // Worker thread: whether a value is large enough that the caller's copy
  // is worth sharing (shared_copy.hpp).
  bool worth_helping();
  // Worker thread, its GIL released, with nothing else to do: takes a share
  // of the caller's copy, if it starts before `deadline_ns` and `leave()`
  // stays false (shared_copy::stand_by). Returns whether it helped.
  bool help_copy(std::int64_t deadline_ns, const std::function<bool()>& leave,
                 std::int64_t poll_ns, std::int64_t spin_ns) {
    return m_copy.stand_by(deadline_ns, leave, poll_ns, spin_ns);
  }

  // Pages moved rather than copied by every read so far (for tests).
  static std::uint64_t pages_moved() noexcept;

  // Caller, its own interpreter's GIL held: a new list of the values,
  // built from the worker's memory. Once per call (a second time, or after
  // abandon(), is an error); null with a Python error set then, or if
  // memory runs out, or the values were lost.
  PyObject* copy_out();

  // Any thread: the call was dropped without its reply being read.
  void abandon() noexcept;

  // Worker thread, its GIL held: releases the values once copied or
  // abandoned. Returns whether it did (then this object holds nothing of
  // the worker's any more).
  bool release_if_done();

  // Worker thread, its GIL held, as the worker ends: keeps a copy of what
  // the caller has not taken yet, then releases the values.
  void detach();

  held_result() = default;
  held_result(const held_result&) = delete;
  held_result& operator=(const held_result&) = delete;
  ~held_result() = default;  // the worker released its objects already

 private:
  struct piece {
    value_type type = value_type::bytes;
    const void* data = nullptr;
    Py_ssize_t length = 0;  // bytes, or code points of `kind` bytes each
    int kind = 1;           // a str's PyUnicode_KIND
    Py_UCS4 max_char = 0;   // a str's largest code point, for PyUnicode_New
    std::string kept;       // its copy: the worker ended first, or could change it
    bool movable = false;   // only we reference it (mark_sole_owner): its pages may move
  };

  PyObject* copy_out_locked();
  // Copies a piece into `kept` and reads it from there; false without memory.
  static bool keep_copy(piece& p) noexcept;
  void release_objects();

  std::mutex m_mutex;
  std::vector<piece> m_pieces;
  std::vector<PyObject*> m_objects;  // the worker's strong references
  bool m_done = false;               // copied out, or abandoned
  const char* m_lost = nullptr;      // why the values are gone: no memory for a copy
  std::function<void()> m_when_done;
  // The caller's copies, which the worker may share.
  shared_copy m_copy;
};

}  // namespace interp_rpc::core
