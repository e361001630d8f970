#include "kernel/socket_io.hpp"

#include <cerrno>
#include <iostream>

namespace interp_rpc::kernel {

void poll(zmq::pollitem_t* items, std::size_t count, std::chrono::milliseconds timeout) {
  while (true) {
    try {
      zmq::poll(items, count, timeout);
      return;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) {
        throw;
      }
    }
  }
}

bool readable(const zmq::pollitem_t& item) { return (item.revents & ZMQ_POLLIN) != 0; }

bool receive_frames(zmq::socket_t& socket, frame_list& frames) {
  frames.clear();
  while (true) {
    zmq::message_t part;
    zmq::recv_result_t got;
    try {
      // The parts of a message arrive together: only the first may be absent.
      got = socket.recv(part, frames.empty() ? zmq::recv_flags::dontwait : zmq::recv_flags::none);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) {
        continue;
      }
      throw;
    }
    if (!got) {
      return false;
    }
    const bool more = part.more();
    frames.push_back(std::move(part));
    if (!more) {
      return true;
    }
  }
}

void send_frames(zmq::socket_t& socket, frame_list& frames) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const zmq::send_flags flags =
        i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    while (true) {
      try {
        socket.send(frames[i], flags);
        break;
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) {
          throw;
        }
      }
    }
  }
}

void log_dropped(const char* where, const std::string& reason) {
  std::cerr << "interp-rpc-kernel: dropped a message on " << where << ": " << reason << std::endl;
}

}  // namespace interp_rpc::kernel
