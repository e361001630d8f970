// Signed requests whose content xeus would misread.
//
// xeus reads request fields with nlohmann::json's value() and operator[]: a
// field of the wrong type throws inside a handler (the request then gets no
// reply at all, and an execute request leaves the kernel "busy" forever), a
// missing field read through a const operator[] is undefined behaviour (a
// comm_open without target_name), and an unknown hist_access_type yields a
// null reply. check_request() says what is wrong before xeus sees the
// request; the server then answers it with an error reply instead.
#pragma once

#include <string>

#include <xeus/xmessage.hpp>
#include <xeus/xserver.hpp>

namespace interp_rpc::kernel {

// The problem with a request arriving on `channel`, or an empty string if
// xeus may handle it. Requests of types we do not know pass: xeus ignores
// them with a log line.
std::string check_request(const xeus::xmessage& request, xeus::channel channel);

// The msg_type of the reply to a request: execute_request -> execute_reply;
// comm_open -> comm_open_reply for messages the protocol gives no reply.
std::string reply_type(const std::string& request_type);

}  // namespace interp_rpc::kernel
