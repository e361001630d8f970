// zmq calls as the kernel's server makes them: a signal (any thread may get
// one) never cuts a call short, and a message is received or sent whole.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include <zmq.hpp>

#include "kernel/wire_message.hpp"

namespace interp_rpc::kernel {

// Blocks until an item is ready (or the timeout, -1: none, has passed); a
// signal only makes it look again.
void poll(zmq::pollitem_t* items, std::size_t count,
          std::chrono::milliseconds timeout = std::chrono::milliseconds(-1));

bool readable(const zmq::pollitem_t& item);

// Reads one whole multipart message if one is waiting; false if none.
bool receive_frames(zmq::socket_t& socket, frame_list& frames);

// Sends all frames as one message. A signal interrupting a part makes us
// send that part again: giving up halfway would glue the next message to
// this one's first parts.
void send_frames(zmq::socket_t& socket, frame_list& frames);

// One line on stderr for a message the server does not hand on.
void log_dropped(const char* where, const std::string& reason);

}  // namespace interp_rpc::kernel
