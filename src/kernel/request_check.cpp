#include "kernel/request_check.hpp"

#include <limits>
#include <string_view>
#include <vector>

namespace interp_rpc::kernel {

namespace {

enum class kind { string, boolean, integer, object, string_or_null };

struct field_rule {
  const char* name;
  kind type;
  bool required;
};

struct request_rule {
  std::string_view msg_type;
  std::vector<field_rule> fields;
  bool shell_only;  // runs Python or reads comms: only the main thread may
};

const std::vector<request_rule>& rules() {
  static const std::vector<request_rule> table{
      {"execute_request",
       {{"code", kind::string, true},
        {"silent", kind::boolean, false},
        {"store_history", kind::boolean, false},
        {"user_expressions", kind::object, false},
        {"allow_stdin", kind::boolean, false},
        {"stop_on_error", kind::boolean, false}},
       true},
      {"complete_request", {{"code", kind::string, true}, {"cursor_pos", kind::integer, false}}, true},
      {"inspect_request",
       {{"code", kind::string, true},
        {"cursor_pos", kind::integer, false},
        {"detail_level", kind::integer, false}},
       true},
      {"is_complete_request", {{"code", kind::string, true}}, true},
      {"history_request",
       {{"hist_access_type", kind::string, false},
        {"output", kind::boolean, false},
        {"raw", kind::boolean, false},
        {"session", kind::integer, false},
        {"start", kind::integer, false},
        {"stop", kind::integer, false},
        {"n", kind::integer, false},
        {"pattern", kind::string, false},
        {"unique", kind::boolean, false}},
       true},
      {"comm_info_request", {{"target_name", kind::string_or_null, false}}, true},
      {"comm_open",
       {{"comm_id", kind::string, true},
        {"target_name", kind::string, true},
        {"data", kind::object, false}},
       true},
      {"comm_msg", {{"comm_id", kind::string, true}, {"data", kind::object, false}}, true},
      {"comm_close", {{"comm_id", kind::string, true}, {"data", kind::object, false}}, true},
      {"kernel_info_request", {}, false},
      {"interrupt_request", {}, false},
      {"shutdown_request", {{"restart", kind::boolean, false}}, false},
  };
  return table;
}

const char* kind_name(kind type) {
  switch (type) {
    case kind::string:
      return "a string";
    case kind::boolean:
      return "a boolean";
    case kind::integer:
      return "an integer";
    case kind::object:
      return "an object";
    case kind::string_or_null:
      return "a string or null";
  }
  return "";
}

bool has_kind(const nl::json& value, kind type) {
  switch (type) {
    case kind::string:
      return value.is_string();
    case kind::boolean:
      return value.is_boolean();
    case kind::integer:
      // xeus reads integers as int.
      return (value.is_number_unsigned() &&
              value.get<std::uint64_t>() <= std::numeric_limits<int>::max()) ||
             (value.is_number_integer() && !value.is_number_unsigned() &&
              value.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
              value.get<std::int64_t>() <= std::numeric_limits<int>::max());
    case kind::object:
      return value.is_object();
    case kind::string_or_null:
      return value.is_string() || value.is_null();
  }
  return false;
}

std::string check_fields(const request_rule& rule, const nl::json& content) {
  for (const field_rule& field : rule.fields) {
    const auto it = content.find(field.name);
    if (it == content.end()) {
      if (field.required) {
        return std::string(rule.msg_type) + " has no '" + field.name + "'";
      }
      continue;
    }
    if (!has_kind(*it, field.type)) {
      return std::string(rule.msg_type) + ": '" + field.name + "' must be " +
             kind_name(field.type) + ", not " + it->dump(-1, ' ', false, nl::json::error_handler_t::replace);
    }
  }
  return {};
}

}  // namespace

std::string check_request(const xeus::xmessage& request, xeus::channel channel) {
  const std::string msg_type = request.header()["msg_type"].get<std::string>();
  if (msg_type == "debug_request" && channel == xeus::channel::SHELL) {
    // Served on control, where it is answered while a cell waits at a
    // breakpoint (ipykernel serves it there only, too).
    return "debug_request is served on the control channel only, not on shell";
  }
  for (const request_rule& rule : rules()) {
    if (rule.msg_type != msg_type) {
      continue;
    }
    if (rule.shell_only && channel == xeus::channel::CONTROL) {
      return msg_type + " is served on the shell channel only, not on control";
    }
    std::string problem = check_fields(rule, request.content());
    if (problem.empty() && msg_type == "execute_request" &&
        request.content().contains("user_expressions")) {
      for (const auto& [name, expression] : request.content()["user_expressions"].items()) {
        if (!expression.is_string()) {
          return "execute_request: user expression '" + name + "' must be a string";
        }
      }
    }
    if (problem.empty() && msg_type == "history_request") {
      const std::string access =
          request.content().value("hist_access_type", std::string("tail"));
      if (access != "tail" && access != "range" && access != "search") {
        return "history_request: unknown hist_access_type '" + access +
               "' (expected tail, range or search)";
      }
    }
    return problem;
  }
  return {};
}

std::string reply_type(const std::string& request_type) {
  constexpr std::string_view suffix = "_request";
  if (request_type.ends_with(suffix)) {
    return request_type.substr(0, request_type.size() - suffix.size()) + "_reply";
  }
  return request_type + "_reply";
}

}  // namespace interp_rpc::kernel
