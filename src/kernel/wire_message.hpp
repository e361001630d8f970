// Jupyter messages on the wire, checked before anything else reads them.
//
// A message is the multipart zmq message
//   [routing identities..., "<IDS|MSG>", signature, header, parent_header,
//    metadata, content, buffers...]
// where the signature is the HMAC of the four JSON frames (message_signer).
//
// parse_message() turns frames from a socket into a xeus::xmessage, or says
// why it drops them: it counts the frames before it touches one, verifies the
// signature before it parses any JSON (whoever lacks the key gets nowhere
// near the parser), and checks that header, parent_header, metadata and
// content are objects and that the header's fields xeus reads are strings.
// Nothing from the network can make it read past a frame or throw.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include <xeus/xmessage.hpp>
#include <zmq.hpp>

#include "kernel/message_signer.hpp"

namespace interp_rpc::kernel {

using frame_list = std::vector<zmq::message_t>;

// Why a message was dropped, for the kernel's log.
struct malformed_message {
  std::string reason;
};

std::variant<xeus::xmessage, malformed_message> parse_message(const frame_list& frames,
                                                              const message_signer& signer);

// The frames of a message for a ROUTER socket (shell, control, stdin).
frame_list serialize_message(const xeus::xmessage& message, const message_signer& signer,
                             nl::json::error_handler_t error_handler);

// The frames of an IOPub message: its topic instead of identities. A null
// parent_header goes out as {}, as clients expect of every IOPub message.
frame_list serialize_pub_message(const xeus::xpub_message& message, const message_signer& signer,
                                 nl::json::error_handler_t error_handler);

}  // namespace interp_rpc::kernel
