#include "kernel/stream.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <iostream>
#include <system_error>
#include <utility>

#include "core/thread_start.hpp"
#include "kernel/interpreter.hpp"
#include "kernel/interrupter.hpp"
#include "kernel/iopub_backlog.hpp"
#include "kernel/message_json.hpp"
#include "kernel/output_parent.hpp"

namespace py = pybind11;

namespace interp_rpc::kernel {

namespace {

// Text is published once this much is buffered, without waiting for the
// flush interval: one message stays small enough for any frontend.
constexpr std::size_t max_buffered_bytes = 64 * 1024;
// How long text may wait in the buffer, as ipykernel's flush interval.
constexpr std::chrono::milliseconds flush_interval(200);
constexpr std::size_t pipe_read_size = 64 * 1024;
constexpr const char* replacement_character = "\xEF\xBF\xBD";  // U+FFFD

// Set in a child of fork(), by the handler registered with the first stream:
// a write then knows it runs in a forked child without asking for the pid,
// a system call that cost about a fifth of a print's time in the kernel.
std::atomic<bool> g_forked_child{false};

void mark_forked_child() noexcept { g_forked_child.store(true, std::memory_order_relaxed); }

bool in_forked_child() noexcept { return g_forked_child.load(std::memory_order_relaxed); }

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return;  // nowhere left to write: drop it, as a closed terminal would
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

// The length of the UTF-8 sequence that starts with `lead`, 0 if none does.
std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

bool continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// Bytes from a descriptor, as valid UTF-8 (JSON needs it): invalid bytes
// become U+FFFD; an incomplete sequence at the end stays in `bytes` for the
// next read.
std::string take_utf8(std::string& bytes) {
  std::string text;
  text.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    const std::size_t length = sequence_length(lead);
    if (length == 0) {
      text += replacement_character;
      ++i;
      continue;
    }
    std::size_t valid = 1;
    while (valid < length && i + valid < bytes.size() &&
           continuation(static_cast<unsigned char>(bytes[i + valid]))) {
      ++valid;
    }
    if (valid == length) {
      // Overlong and surrogate forms of 3 and 4 byte sequences are invalid.
      const auto second = static_cast<unsigned char>(bytes[i + 1 < bytes.size() ? i + 1 : i]);
      const bool bad = (lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F) ||
                       (lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second > 0x8F);
      if (bad) {
        text += replacement_character;
        ++i;
        continue;
      }
      text.append(bytes, i, length);
      i += length;
    } else if (i + valid == bytes.size()) {
      break;  // incomplete: the rest may come with the next read
    } else {
      text += replacement_character;
      i += valid;
    }
  }
  bytes.erase(0, i);
  return text;
}

// std::cerr and std::clog of the kernel, sent to the original descriptor: the
// kernel's own log is not the cell's output.
class fd_buffer final : public std::streambuf {
 public:
  explicit fd_buffer(int fd) : m_fd(fd) {}

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      const char byte = traits_type::to_char_type(c);
      write_all(m_fd, &byte, 1);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* data, std::streamsize size) override {
    write_all(m_fd, data, static_cast<std::size_t>(size));
    return size;
  }

 private:
  int m_fd;
};

}  // namespace

stream::stream(interpreter& interpreter, std::string name, int fd)
    : p_interpreter(&interpreter), m_name(std::move(name)), m_fd(fd) {
  static const int fork_handler_registered = ::pthread_atfork(nullptr, nullptr, mark_forked_child);
  if (fork_handler_registered != 0) {
    throw std::system_error(fork_handler_registered, std::generic_category(), "pthread_atfork");
  }
  m_wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m_wake_fd < 0) throw_errno("eventfd");
  try {
    m_thread = core::start_thread("the kernel's " + m_name + " capture thread", [this] {
      // SIGINT is for the main thread only (see interrupter.hpp).
      block_sigint_in_this_thread();
      run();
    });
  } catch (...) {
    ::close(m_wake_fd);  // no destructor runs for a constructor that throws
    throw;
  }
}

stream::~stream() {
  stop_thread();
  if (m_wake_fd >= 0) ::close(m_wake_fd);
  if (m_pipe_read >= 0) ::close(m_pipe_read);
  if (m_saved_fd >= 0) ::close(m_saved_fd);
}

py::int_ stream::write(const py::str& text) {
  // TextIOBase.write returns the number of characters written.
  py::int_ length(py::len(text));
  // Text with a lone surrogate (which UTF-8 cannot hold) is written with
  // U+FFFD in its place.
  std::string bytes = to_utf8(text);
  if (in_forked_child()) {
    // A forked child (see stream.hpp): whole lines, so that children printing
    // at once do not interleave within a line.
    m_child_line += bytes;
    if (const std::size_t end = m_child_line.rfind('\n'); end != std::string::npos) {
      write_all(m_fd, m_child_line.data(), end + 1);
      m_child_line.erase(0, end + 1);
    }
    return length;
  }
  if (p_interpreter == nullptr) {
    // The kernel is gone (detach): straight to the descriptor, without the
    // GIL and without Python's buffered stream. A daemon thread still
    // printing while Python finalizes would otherwise hold that stream's
    // lock when the final flush wants it: CPython aborts then ("could not
    // acquire lock for <_io.BufferedWriter name='<stderr>'> at interpreter
    // shutdown"). Here such a thread is only parked when it takes the GIL back.
    py::gil_scoped_release release;
    write_all(m_fd, bytes.data(), bytes.size());
    return length;
  }
  take_descriptor_texts();  // written before this text
  append(std::move(bytes));
  p_interpreter->wait_for_iopub_room();
  return length;
}

void stream::set_sibling(stream& other) noexcept { p_sibling = &other; }

void stream::append(std::string text) {
  if (text.empty() || p_interpreter == nullptr) return;
  // What the other stream holds was written before this: published first, so
  // that stdout and stderr interleave as written. Outside our lock: the
  // streams' locks are never held together.
  if (p_sibling != nullptr && p_sibling->m_has_text.load(std::memory_order_acquire)) {
    p_sibling->publish_buffered();
  }
  // Copied before the lock: the calling thread's request (a copy for threads
  // other than the main one).
  const xeus::xrequest_context& parent = p_interpreter->current_request();
  bool schedule = false;
  {
    std::lock_guard lock(m_mutex);
    if (!m_buffer.empty() && m_buffer_parent.header() != parent.header()) {
      publish_locked();
    }
    if (m_buffer.empty()) {
      m_buffer_parent = parent;
    }
    m_buffer += text;
    m_has_text.store(true, std::memory_order_release);
    if (m_buffer.size() >= max_buffered_bytes) {
      publish_locked();
    } else if (!m_flush_at) {
      m_flush_at = std::chrono::steady_clock::now() + flush_interval;
      schedule = true;
    }
  }
  if (schedule) wake();
}

void stream::publish_buffered() {
  std::lock_guard lock(m_mutex);
  publish_locked();
}

void stream::publish_locked() {
  std::string text;
  text.swap(m_buffer);
  m_flush_at.reset();
  m_has_text.store(false, std::memory_order_release);
  if (p_interpreter != nullptr && !text.empty()) {
    const thread_parent pinned(m_buffer_parent);
    p_interpreter->publish_stream(m_name, text);
  }
}

void stream::flush() {
  if (in_forked_child()) {
    write_all(m_fd, m_child_line.data(), m_child_line.size());
    m_child_line.clear();
    return;
  }
  if (p_interpreter == nullptr) return;
  // Text that C code of this thread still holds in stdio's buffer, then all
  // that the descriptor received so far: it belongs before what follows.
  std::fflush(m_fd == 1 ? stdout : stderr);
  take_descriptor_text();
  std::lock_guard lock(m_mutex);
  publish_locked();
}

void stream::take_descriptor_text() {
  std::lock_guard read_lock(m_read_mutex);
  if (m_pipe_read >= 0) read_pipe_locked();
}

void stream::take_descriptor_texts() {
  // One poll for both pipes: a write pays one system call when they are
  // empty (a print loop writes hundreds of thousands of times).
  stream* const streams[2] = {p_sibling, this};
  pollfd ready[2] = {};
  for (std::size_t i = 0; i < 2; ++i) {
    ready[i].fd = streams[i] == nullptr ? -1 : streams[i]->m_pipe_read.load();  // -1: skipped
    ready[i].events = POLLIN;
  }
  if (ready[0].fd < 0 && ready[1].fd < 0) return;
  if (::poll(ready, 2, 0) < 0) ready[0].revents = ready[1].revents = POLLIN;  // read to be sure
  for (std::size_t i = 0; i < 2; ++i) {
    if (ready[i].fd < 0) continue;
    if ((ready[i].revents & POLLIN) != 0) {
      streams[i]->take_descriptor_text();
    } else {
      // An empty pipe may be one the stream's thread has just read, whose
      // text it is adding to the buffer: that text goes first.
      std::lock_guard in_flight(streams[i]->m_read_mutex);
    }
  }
}

void stream::read_pipe_locked() {
  char chunk[pipe_read_size];
  while (true) {
    const ssize_t got = ::read(m_pipe_read, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;  // EAGAIN: nothing more for now
    m_partial.append(chunk, static_cast<std::size_t>(got));
    append(take_utf8(m_partial));
  }
}

void stream::capture_fd() {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw_errno("pipe");
  // Only the read end is non-blocking: writers (children included) block on
  // a full pipe, as they would on a slow terminal, rather than lose text.
  ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  std::fflush(m_fd == 1 ? stdout : stderr);
  m_saved_fd = ::fcntl(m_fd, F_DUPFD_CLOEXEC, 3);
  if (m_saved_fd < 0 || ::dup2(pipe_fds[1], m_fd) < 0) throw_errno("dup2");
  ::close(pipe_fds[1]);
  {
    std::lock_guard lock(m_read_mutex);
    m_pipe_read = pipe_fds[0];
  }
  if (m_fd == 2) {
    p_log_buffer = std::make_unique<fd_buffer>(m_saved_fd);
    p_previous_log_buffer = std::cerr.rdbuf(p_log_buffer.get());
    p_previous_clog_buffer = std::clog.rdbuf(p_log_buffer.get());
  }
  wake();  // the thread polls the pipe from now on
}

void stream::detach() {
  if (p_interpreter == nullptr) return;
  flush();
  stop_thread();
  if (m_saved_fd >= 0) {
    std::fflush(m_fd == 1 ? stdout : stderr);
    ::dup2(m_saved_fd, m_fd);
    std::lock_guard read_lock(m_read_mutex);
    read_pipe_locked();  // the last words of C code, before the pipe closes
  }
  {
    std::lock_guard lock(m_mutex);
    publish_locked();
  }
  if (p_log_buffer) {
    std::cerr.rdbuf(p_previous_log_buffer);
    std::clog.rdbuf(p_previous_clog_buffer);
  }
  std::lock_guard lock(m_mutex);
  p_interpreter = nullptr;
}

void stream::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t ignored = ::write(m_wake_fd, &one, sizeof one);
}

void stream::stop_thread() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  wake();
  if (m_thread.joinable()) m_thread.join();
}

void stream::run() {
  while (true) {
    int timeout_ms = -1;
    {
      std::lock_guard lock(m_mutex);
      if (m_stopping) return;
      if (m_flush_at) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            *m_flush_at - std::chrono::steady_clock::now());
        timeout_ms = static_cast<int>(std::max<std::int64_t>(0, left.count() + 1));
      }
    }
    int pipe_fd;
    {
      std::lock_guard read_lock(m_read_mutex);
      pipe_fd = m_pipe_read;
    }
    pollfd fds[2] = {{m_wake_fd, POLLIN, 0}, {pipe_fd, POLLIN, 0}};
    const int ready = ::poll(fds, pipe_fd >= 0 ? 2 : 1, timeout_ms);
    if (ready < 0 && errno != EINTR) return;
    if ((fds[0].revents & POLLIN) != 0) {
      std::uint64_t count;
      [[maybe_unused]] const ssize_t ignored = ::read(m_wake_fd, &count, sizeof count);
    }
    if (pipe_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      {
        std::lock_guard read_lock(m_read_mutex);
        read_pipe_locked();
      }
      // The descriptor's writers wait on the full pipe meanwhile (the
      // kernel stops the backlog before this thread).
      iopub_backlog::shared().wait_for_room(-1);
    }
    std::lock_guard lock(m_mutex);
    if (m_flush_at && std::chrono::steady_clock::now() >= *m_flush_at) {
      publish_locked();
    }
  }
}

void bind_stream(py::module_& m) {
  // dynamic_attr: IPython wraps a running cell's sys.stdout.write to keep its
  // output in the history, by assigning to the instance.
  py::class_<stream>(m, "Stream", "A text stream whose output goes to the notebook.",
                     py::dynamic_attr())
      .def("write", &stream::write, py::arg("text"))
      .def(
          "writelines",
          [](stream& self, const py::iterable& lines) {
            for (const py::handle line : lines) {
              self.write(py::reinterpret_borrow<py::str>(line));
            }
          },
          py::arg("lines"))
      // Without the GIL: it may wait for the stream's thread, which may wait
      // for a publish.
      .def("flush", &stream::flush, py::call_guard<py::gil_scoped_release>())
      .def("fileno", &stream::fileno)
      .def("isatty", [](const stream&) { return false; })
      .def("readable", [](const stream&) { return false; })
      .def("writable", [](const stream&) { return true; })
      .def("seekable", [](const stream&) { return false; })
      .def_property_readonly("name", [](const stream& self) { return "<" + self.name() + ">"; })
      .def_property_readonly("encoding", [](const stream&) { return "utf-8"; })
      .def_property_readonly("errors", [](const stream&) { return "strict"; })
      .def_property_readonly("mode", [](const stream&) { return "w"; })
      .def_property_readonly("closed", [](const stream&) { return false; })
      .def_property_readonly("line_buffering", [](const stream&) { return true; })
      .def_property_readonly("newlines", [](const stream&) { return py::none(); });
}

}  // namespace interp_rpc::kernel
