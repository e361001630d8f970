#include "kernel/debugger.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <mutex>
#include <system_error>
#include <utility>

#include <pybind11/pybind11.h>
#include <pybind11_json/pybind11_json.hpp>

#include "kernel/interpreter.hpp"
#include "kernel/message_json.hpp"

namespace py = pybind11;

namespace interp_rpc::kernel {

struct debugger::event_channel {
  std::mutex mutex;
  interpreter* owner = nullptr;  // null once the debugger is gone; guarded by mutex
  nl::json parent_header = nl::json::object();  // guarded by mutex
};

namespace {

constexpr std::size_t frame_length_size = 4;

// A DAP error response to `request`, which may be anything a client sent.
nl::json error_response(const nl::json& request, const std::string& problem) {
  nl::json seq = 0;
  nl::json command = "";
  if (request.is_object()) {
    if (request.contains("seq") && request["seq"].is_number_integer()) {
      seq = request["seq"];
    }
    if (request.contains("command") && request["command"].is_string()) {
      command = request["command"];
    }
  }
  return {{"type", "response"}, {"seq", 0},         {"request_seq", seq}, {"success", false},
          {"command", command}, {"message", problem}, {"body", nl::json::object()}};
}

void write_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw std::system_error(errno, std::generic_category(), "sending to the debugger thread");
    }
    sent += static_cast<std::size_t>(n);
  }
}

std::string frame(const nl::json& body) {
  const std::string text = body.dump(-1, ' ', false, nl::json::error_handler_t::replace);
  const auto length = static_cast<std::uint32_t>(text.size());
  std::string bytes(frame_length_size, '\0');
  for (std::size_t i = 0; i < frame_length_size; ++i) {
    bytes[i] = static_cast<char>((length >> (8 * (frame_length_size - 1 - i))) & 0xff);
  }
  return bytes + text;
}

}  // namespace

debugger::debugger(interpreter& interpreter)
    : m_interpreter(interpreter), p_events(std::make_shared<event_channel>()) {
  p_events->owner = &interpreter;
  // Called on the control thread only, which has stopped before xeus
  // destroys this debugger.
  interpreter.set_before_interrupt([this](bool stopping) { before_interrupt(stopping); });
}

debugger::~debugger() {
  {
    std::lock_guard lock(p_events->mutex);
    p_events->owner = nullptr;
  }
  if (m_fd >= 0) {
    ::close(m_fd);  // the Python side's thread reads the end of it, and ends
  }
}

nl::json debugger::process_request_impl(const nl::json& header, const nl::json& message) {
  {
    std::lock_guard lock(p_events->mutex);
    p_events->parent_header = header;
  }
  if (!message.is_object() || !message.contains("command") || !message["command"].is_string()) {
    return error_response(message, "a debug_request's content is a DAP request, with a string "
                                   "'command'");
  }
  if (!m_started) {
    try {
      start_python_side();
    } catch (const std::exception& e) {
      return error_response(message, std::string("the kernel's debugger cannot start: ") +
                                         e.what());
    }
  }
  nl::json reply;
  try {
    reply = exchange("request", message, reply_timeout_ms);
  } catch (const std::exception& e) {
    return error_response(message, std::string("the kernel's debugger failed: ") + e.what());
  }
  if (reply.is_null()) {
    return error_response(message, "the kernel's debugger did not answer in " +
                                       std::to_string(reply_timeout_ms / 1000) + " s");
  }
  return reply;
}

void debugger::start_python_side() {
  // JupyterLab's first debugInfo comes while IPython is still imported.
  m_interpreter.wait_for_startup_import();
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::system_error(errno, std::generic_category(), "socketpair");
  }
  py::gil_scoped_acquire gil;
  try {
    const std::shared_ptr<event_channel> events = p_events;
    const py::cpp_function publish([events](const py::dict& event) {
      std::lock_guard lock(events->mutex);
      if (events->owner != nullptr) {
        events->owner->publish_iopub("debug_event", events->parent_header, nl::json::object(),
                                     to_message_json(event, "debug_event"), {});
      }
    });
    // The Python side owns fds[1] from here on, even if it then fails.
    py::module_::import("interp_rpc_kernel.debugger").attr("start")(fds[1], publish);
  } catch (py::error_already_set& e) {
    ::close(fds[0]);
    throw std::runtime_error(to_utf8(py::str(e.value())));
  }
  m_fd = fds[0];
  m_started = true;
}

void debugger::before_interrupt(bool stopping) {
  if (!m_started) {
    return;
  }
  try {
    exchange("kernel", stopping ? "stop" : "interrupt", release_timeout_ms);
  } catch (const std::exception&) {
    // The interrupt goes on regardless; the cell's end releases what is left
    // (resume_threads_left_stopped).
  }
}

nl::json debugger::exchange(const char* key, const nl::json& value, int timeout_ms) {
  const std::uint64_t id = m_next_id++;
  write_all(m_fd, frame({{"id", id}, {key, value}}));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    // A whole frame already read?
    while (m_received.size() >= frame_length_size) {
      std::uint32_t length = 0;
      for (std::size_t i = 0; i < frame_length_size; ++i) {
        length = (length << 8) | static_cast<unsigned char>(m_received[i]);
      }
      if (m_received.size() < frame_length_size + length) {
        break;
      }
      nl::json body = nl::json::parse(m_received.substr(frame_length_size, length));
      m_received.erase(0, frame_length_size + length);
      if (body.value("id", std::uint64_t{0}) == id) {
        return std::move(body["reply"]);
      }
      // The reply to a request that gave up waiting: dropped.
    }
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining.count() <= 0) {
      return nullptr;
    }
    pollfd item{m_fd, POLLIN, 0};
    const int ready = ::poll(&item, 1, static_cast<int>(remaining.count()));
    if (ready < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "waiting for the debugger thread");
    }
    if (ready <= 0) {
      continue;
    }
    char buffer[65536];
    const ssize_t got = ::recv(m_fd, buffer, sizeof buffer, 0);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      // The thread is gone; the next request starts another.
      ::close(m_fd);
      m_fd = -1;
      m_started = false;
      m_received.clear();
      throw std::runtime_error("its thread ended");
    }
    m_received.append(buffer, static_cast<std::size_t>(got));
  }
}

xeus::xkernel::debugger_builder make_debugger_builder(interpreter& interpreter) {
  return [&interpreter](xeus::xcontext&, const xeus::xkernel_configuration&, const std::string&,
                        const std::string&, const nl::json&) {
    return std::unique_ptr<xeus::xdebugger>(new debugger(interpreter));
  };
}

}  // namespace interp_rpc::kernel
