// sys.stdout and sys.stderr of the kernel, and the process's file descriptors
// 1 and 2: what is written to either becomes IOPub "stream" messages.
//
// Buffering, as ipykernel does it. Text accumulates and is published as one
// message per flush interval (0.2 s, from the first text buffered), or as
// soon as 64 KiB are buffered: a loop printing thousands of lines sends a few
// messages, which frontends' rate limits let through. The kernel flushes both
// streams before any other output (display data, errors, input requests), at
// the end of every request and at shutdown, and each stream publishes what
// the other holds before it takes new text, so messages keep the order in
// which they were written.
//
// Back-pressure. After each write, the writer waits while IOPub's backlog is
// full (iopub_backlog): an endless print loop runs at the frontend's pace,
// in bounded memory.
//
// Parents. Text belongs to the request of the thread that wrote it, at the
// time it wrote it (output_parent): buffered text is published with that
// parent, and a write for another parent first publishes what is buffered. A
// thread printing while the kernel is idle thus shows in the last cell, never
// in the next one.
//
// File descriptors. capture_fd() points the descriptor at a pipe that the
// stream's thread reads: subprocesses, C code, the pool's subinterpreters and
// forked children all write there, and their text shows in the cell that is
// running. A write to either Python stream first takes what both pipes hold,
// so that text written to a descriptor before a print shows before it. The kernel's own C++ log (std::cerr, std::clog) keeps going to the
// original descriptor. A forked child (multiprocessing's fork workers) has no
// kernel of its own: its writes to the Python stream go straight to the
// descriptor, hence to the pipe of the parent, which publishes them.
//
// Threads. write() is called with the GIL; the buffer has its own mutex, so
// the stream's thread never needs Python. Publishing goes through xeus, which
// is safe from any thread here (see kernel_server).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <streambuf>
#include <string>
#include <thread>

#include <pybind11/pybind11.h>
#include <xeus/xrequest_context.hpp>

namespace interp_rpc::kernel {

class interpreter;

class stream {
 public:
  // name: "stdout" or "stderr"; fd: the process's own descriptor for it.
  stream(interpreter& interpreter, std::string name, int fd);
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream();

  // The Python side; needs the GIL.
  pybind11::int_ write(const pybind11::str& text);
  // Publishes what is buffered, after reading what the descriptor holds.
  void flush();

  // The kernel's other stream (stdout's is stderr, and the reverse), whose
  // text is published before this one's (see above). Before any write.
  void set_sibling(stream& other) noexcept;

  // Redirects the descriptor into this stream (see above). Once only.
  void capture_fd();

  // Once the kernel is gone: the descriptor is restored, the thread stopped,
  // and text goes straight to the descriptor instead (the stream stays
  // sys.stdout or sys.stderr until Python has finalized). Needs the GIL.
  void detach();

  const std::string& name() const noexcept { return m_name; }
  int fileno() const noexcept { return m_fd; }

 private:
  // Adds text for the calling thread's request.
  void append(std::string text);
  // Publishes all that is buffered; the second with m_mutex held.
  void publish_buffered();
  void publish_locked();
  // Reads what the pipe holds without waiting, into the buffer: before a
  // write's text, which came after it. The second reads both streams'
  // pipes; the third with m_read_mutex held.
  void take_descriptor_text();
  void take_descriptor_texts();
  void read_pipe_locked();
  void run();
  void wake();
  void stop_thread();

  interpreter* p_interpreter;
  const std::string m_name;
  const int m_fd;

  std::mutex m_mutex;
  std::string m_buffer;                  // guarded by m_mutex
  xeus::xrequest_context m_buffer_parent;  // guarded by m_mutex
  std::optional<std::chrono::steady_clock::time_point> m_flush_at;  // guarded by m_mutex
  bool m_stopping = false;               // guarded by m_mutex
  std::atomic<bool> m_has_text{false};   // m_buffer is not empty; written with m_mutex
  stream* p_sibling = nullptr;

  std::mutex m_read_mutex;
  std::atomic<int> m_pipe_read{-1};  // the captured descriptor's pipe, set once
  int m_saved_fd = -1;      // the original descriptor, duplicated
  std::string m_partial;    // an incomplete UTF-8 sequence, read last; m_read_mutex
  int m_wake_fd = -1;       // an eventfd the thread polls with the pipe
  std::unique_ptr<std::streambuf> p_log_buffer;  // std::cerr's, to m_saved_fd
  std::streambuf* p_previous_log_buffer = nullptr;
  std::streambuf* p_previous_clog_buffer = nullptr;
  std::thread m_thread;
  // In a forked child only (with the GIL): a line not yet written.
  std::string m_child_line;
};

// Defines the Python class Stream in module m.
void bind_stream(pybind11::module_& m);

}  // namespace interp_rpc::kernel
