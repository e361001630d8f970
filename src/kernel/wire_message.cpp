#include "kernel/wire_message.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace interp_rpc::kernel {

namespace {

constexpr std::string_view delimiter = "<IDS|MSG>";
// Signature, header, parent_header, metadata, content.
constexpr std::size_t frames_after_delimiter = 5;
// Deeper JSON is refused: parsing is iterative, but serializing a header
// back into a reply and converting content to Python recurse on the C++
// stack. No Jupyter message comes close to this.
constexpr int max_json_depth = 256;

std::string_view view(const zmq::message_t& frame) {
  return {frame.data<const char>(), frame.size()};
}

// The nesting depth of JSON text, brackets inside strings excluded. Only a
// bound: the parser judges whether the text is valid.
int json_depth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Parses one of the JSON frames, which must be an object; on failure, sets
// problem and returns null.
nl::json parse_object(std::string_view text, const char* name, std::string& problem) {
  if (json_depth(text) > max_json_depth) {
    problem = std::string(name) + " nests deeper than " + std::to_string(max_json_depth) + " levels";
    return nullptr;
  }
  nl::json value;
  try {
    value = nl::json::parse(text.begin(), text.end());
  } catch (const nl::json::exception&) {
    value = nl::json(nl::json::value_t::discarded);
  }
  if (value.is_discarded()) {
    problem = std::string(name) + " is not valid JSON";
    return nullptr;
  }
  if (!value.is_object()) {
    problem = std::string(name) + " is JSON " + value.type_name() + ", not an object";
    return nullptr;
  }
  return value;
}

// The header fields xeus and our kernel read; each must be a string if present.
std::string check_header(const nl::json& header) {
  for (const char* field : {"msg_id", "msg_type"}) {
    if (!header.contains(field)) {
      return std::string("the header has no ") + field;
    }
  }
  for (const char* field : {"msg_id", "msg_type", "session", "username", "version", "date"}) {
    const auto it = header.find(field);
    if (it != header.end() && !it->is_string()) {
      return std::string("the header's ") + field + " is " + it->type_name() + ", not a string";
    }
  }
  return {};
}

nl::json object_or_empty(const nl::json& value) {
  return value.is_null() ? nl::json::object() : value;
}

zmq::message_t json_frame(const nl::json& value, nl::json::error_handler_t error_handler) {
  const std::string text = object_or_empty(value).dump(-1, ' ', false, error_handler);
  return zmq::message_t(text.data(), text.size());
}

// Appends signature, header, parent_header, metadata, content and buffers.
void append_body(const xeus::xmessage_base& message, const message_signer& signer,
                 nl::json::error_handler_t error_handler, frame_list& frames) {
  std::array<zmq::message_t, 4> parts{
      json_frame(message.header(), error_handler), json_frame(message.parent_header(), error_handler),
      json_frame(message.metadata(), error_handler), json_frame(message.content(), error_handler)};
  const std::array<std::string_view, 4> views{view(parts[0]), view(parts[1]), view(parts[2]),
                                              view(parts[3])};
  const std::string signature = signer.sign(views);
  frames.emplace_back(signature.data(), signature.size());
  for (zmq::message_t& part : parts) {
    frames.push_back(std::move(part));
  }
  for (const xeus::binary_buffer& buffer : message.buffers()) {
    frames.emplace_back(buffer.data(), buffer.size());
  }
}

}  // namespace

std::variant<xeus::xmessage, malformed_message> parse_message(const frame_list& frames,
                                                              const message_signer& signer) {
  std::size_t at = 0;
  while (at < frames.size() && view(frames[at]) != delimiter) {
    ++at;
  }
  if (at == frames.size()) {
    return malformed_message{"no <IDS|MSG> delimiter among " + std::to_string(frames.size()) +
                             " frames"};
  }
  const std::size_t body = at + 1;
  if (frames.size() - body < frames_after_delimiter) {
    return malformed_message{std::to_string(frames.size() - body) +
                             " frames after the delimiter, not the 5 of signature, header, "
                             "parent_header, metadata and content"};
  }
  const std::array<std::string_view, 4> signed_parts{
      view(frames[body + 1]), view(frames[body + 2]), view(frames[body + 3]), view(frames[body + 4])};
  if (!signer.verify(view(frames[body]), signed_parts)) {
    return malformed_message{"bad signature"};
  }

  std::string problem;
  nl::json header = parse_object(signed_parts[0], "header", problem);
  nl::json parent_header = problem.empty() ? parse_object(signed_parts[1], "parent_header", problem)
                                           : nl::json();
  nl::json metadata = problem.empty() ? parse_object(signed_parts[2], "metadata", problem)
                                      : nl::json();
  nl::json content = problem.empty() ? parse_object(signed_parts[3], "content", problem)
                                     : nl::json();
  if (problem.empty()) {
    problem = check_header(header);
  }
  if (!problem.empty()) {
    return malformed_message{std::move(problem)};
  }

  xeus::xmessage::guid_list identities;
  for (std::size_t i = 0; i < at; ++i) {
    identities.emplace_back(view(frames[i]));
  }
  xeus::buffer_sequence buffers;
  for (std::size_t i = body + frames_after_delimiter; i < frames.size(); ++i) {
    const std::string_view buffer = view(frames[i]);
    buffers.emplace_back(buffer.begin(), buffer.end());
  }
  return xeus::xmessage(identities, std::move(header), std::move(parent_header),
                        std::move(metadata), std::move(content), std::move(buffers));
}

frame_list serialize_message(const xeus::xmessage& message, const message_signer& signer,
                             nl::json::error_handler_t error_handler) {
  frame_list frames;
  for (const std::string& identity : message.identities()) {
    frames.emplace_back(identity.data(), identity.size());
  }
  frames.emplace_back(delimiter.data(), delimiter.size());
  append_body(message, signer, error_handler, frames);
  return frames;
}

frame_list serialize_pub_message(const xeus::xpub_message& message, const message_signer& signer,
                                 nl::json::error_handler_t error_handler) {
  frame_list frames;
  frames.emplace_back(message.topic().data(), message.topic().size());
  frames.emplace_back(delimiter.data(), delimiter.size());
  append_body(message, signer, error_handler, frames);
  return frames;
}

}  // namespace interp_rpc::kernel
