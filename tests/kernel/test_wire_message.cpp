// The checks a message passes before xeus reads it. Hostile frames are also
// thrown at a running kernel by tests/kernel/test_hostile_messages.py; here
// each rule is pinned down on its own.
#include <doctest/doctest.h>

#include <array>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kernel/message_signer.hpp"
#include "kernel/request_check.hpp"
#include "kernel/wire_message.hpp"

namespace kernel = interp_rpc::kernel;

namespace {

const kernel::message_signer signer("hmac-sha256", "secret");

kernel::frame_list frames_of(const std::vector<std::string>& texts) {
  kernel::frame_list frames;
  for (const std::string& text : texts) {
    frames.emplace_back(text.data(), text.size());
  }
  return frames;
}

// A signed request: identity, delimiter, signature and the four JSON parts.
std::vector<std::string> signed_request(const std::string& header, const std::string& content,
                                        const std::string& parent = "{}") {
  const std::array<std::string_view, 4> parts{header, parent, "{}", content};
  return {"client", "<IDS|MSG>", signer.sign(parts), header, parent, "{}", content};
}

const std::string execute_header =
    R"({"msg_id":"m1","msg_type":"execute_request","session":"s","username":"u","version":"5.4","date":""})";

std::string rejection(const std::vector<std::string>& texts) {
  auto parsed = kernel::parse_message(frames_of(texts), signer);
  if (auto* malformed = std::get_if<kernel::malformed_message>(&parsed)) {
    return malformed->reason;
  }
  return {};
}

std::string problem_of(const std::string& header, const std::string& content,
                       xeus::channel channel = xeus::channel::SHELL) {
  auto parsed = kernel::parse_message(frames_of(signed_request(header, content)), signer);
  REQUIRE(std::holds_alternative<xeus::xmessage>(parsed));
  return kernel::check_request(std::get<xeus::xmessage>(parsed), channel);
}

std::string header_of(const std::string& msg_type) {
  return R"({"msg_id":"m1","msg_type":")" + msg_type + R"(","session":"s","username":"u"})";
}

}  // namespace

TEST_CASE("a signed request is parsed with its identities and buffers") {
  std::vector<std::string> texts = signed_request(execute_header, R"({"code":"1+1"})");
  texts.push_back("buffer");
  auto parsed = kernel::parse_message(frames_of(texts), signer);
  REQUIRE(std::holds_alternative<xeus::xmessage>(parsed));
  const auto& message = std::get<xeus::xmessage>(parsed);
  CHECK(message.identities() == std::vector<std::string>{"client"});
  CHECK(message.content()["code"] == "1+1");
  REQUIRE(message.buffers().size() == 1);
  CHECK(std::string(message.buffers()[0].begin(), message.buffers()[0].end()) == "buffer");
}

TEST_CASE("truncated frame lists are refused before anything is read") {
  CHECK(rejection({}) == "no <IDS|MSG> delimiter among 0 frames");
  CHECK(rejection({"<IDS|MSG>", "x"}).starts_with("1 frames after the delimiter"));
  CHECK(rejection({"id", "no delimiter"}).starts_with("no <IDS|MSG> delimiter"));
  std::vector<std::string> four = signed_request(execute_header, "{}");
  four.pop_back();
  CHECK(rejection(four).starts_with("4 frames after the delimiter"));
}

TEST_CASE("a missing, short, long or wrong signature is refused") {
  std::vector<std::string> texts = signed_request(execute_header, R"({"code":"1"})");
  const std::string good = texts[2];
  for (const std::string& bad : {std::string(), good.substr(0, 10), good + "00",
                                 std::string(good.size(), 'a'), std::string("\0\0", 2)}) {
    texts[2] = bad;
    CHECK(rejection(texts) == "bad signature");
  }
  texts[2] = good;
  texts[6] = R"({"code":"2"})";  // content changed after signing
  CHECK(rejection(texts) == "bad signature");
}

TEST_CASE("signed frames must be JSON objects with a well-typed header") {
  CHECK(rejection(signed_request("not json", "{}")) == "header is not valid JSON");
  CHECK(rejection(signed_request(execute_header, "[1]")) == "content is JSON array, not an object");
  CHECK(rejection(signed_request(execute_header, "{}", "null")) ==
        "parent_header is JSON null, not an object");
  CHECK(rejection(signed_request(R"({"msg_id":"m"})", "{}")) == "the header has no msg_type");
  CHECK(rejection(signed_request(R"({"msg_id":"m","msg_type":7})", "{}")) ==
        "the header's msg_type is number, not a string");
  CHECK(rejection(signed_request(execute_header, "{\"code\":\"\xff\"}")) ==
        "content is not valid JSON");
  const std::string deep = std::string(300, '[') + std::string(300, ']');
  CHECK(rejection(signed_request(execute_header, R"({"a":)" + deep + "}")) ==
        "content nests deeper than 256 levels");
  // Brackets inside strings are text, not nesting.
  CHECK(rejection(signed_request(execute_header, R"({"code":")" + deep + R"("})")).empty());
}

TEST_CASE("without a key nothing is signed or checked") {
  const kernel::message_signer open("hmac-sha256", "");
  const std::array<std::string_view, 4> parts{"{}", "{}", "{}", "{}"};
  CHECK(open.sign(parts).empty());
  CHECK(open.verify("anything", parts));
}

TEST_CASE("an unknown signature scheme is a clear error") {
  CHECK_THROWS_WITH(kernel::message_signer("hmac-nope", "k"),
                    doctest::Contains("OpenSSL has no digest 'nope'"));
  CHECK_THROWS_WITH(kernel::message_signer("sha256", "k"), doctest::Contains("hmac-<digest>"));
}

TEST_CASE("what we send parses back, and a null parent header goes out as {}") {
  xeus::xmessage reply({"client"}, {{"msg_id", "r"}, {"msg_type", "execute_reply"}}, nullptr,
                       nl::json::object(), {{"status", "ok"}}, {{'a', 'b'}});
  kernel::frame_list frames =
      kernel::serialize_message(reply, signer, nl::json::error_handler_t::strict);
  auto parsed = kernel::parse_message(frames, signer);
  REQUIRE(std::holds_alternative<xeus::xmessage>(parsed));
  CHECK(std::get<xeus::xmessage>(parsed).parent_header() == nl::json::object());

  xeus::xpub_message welcome("", {{"msg_id", "w"}, {"msg_type", "iopub_welcome"}}, nullptr,
                             nl::json::object(), {{"subscription", ""}}, {});
  const kernel::frame_list pub =
      kernel::serialize_pub_message(welcome, signer, nl::json::error_handler_t::strict);
  REQUIRE(pub.size() == 7);
  CHECK(pub[4].to_string() == "{}");
}

TEST_CASE("requests xeus would misread are named with their problem") {
  CHECK(problem_of(execute_header, R"({"code":"1"})").empty());
  CHECK(problem_of(execute_header, R"({"code":1})") ==
        "execute_request: 'code' must be a string, not 1");
  CHECK(problem_of(execute_header, R"({})") == "execute_request has no 'code'");
  CHECK(problem_of(execute_header, R"({"code":"1","silent":"yes"})") ==
        "execute_request: 'silent' must be a boolean, not \"yes\"");
  CHECK(problem_of(execute_header, R"({"code":"1","user_expressions":{"a":1}})") ==
        "execute_request: user expression 'a' must be a string");
  CHECK(problem_of(header_of("comm_open"), R"({"comm_id":"c","data":{}})") ==
        "comm_open has no 'target_name'");
  CHECK(problem_of(header_of("history_request"), R"({"hist_access_type":"tail","n":null})") ==
        "history_request: 'n' must be an integer, not null");
  CHECK(problem_of(header_of("history_request"), R"({"hist_access_type":"everything"})")
            .starts_with("history_request: unknown hist_access_type 'everything'"));
  CHECK(problem_of(header_of("complete_request"), R"({"code":"x","cursor_pos":4294967296})") ==
        "complete_request: 'cursor_pos' must be an integer, not 4294967296");
  CHECK(problem_of(header_of("debug_request"), "{}") ==
        "debug_request is served on the control channel only, not on shell");
  CHECK(problem_of(header_of("no_such_request"), "{}").empty());  // xeus logs and ignores it
}

TEST_CASE("requests that run Python are refused on the control channel") {
  CHECK(problem_of(execute_header, R"({"code":"1"})", xeus::channel::CONTROL) ==
        "execute_request is served on the shell channel only, not on control");
  CHECK(problem_of(header_of("interrupt_request"), "{}", xeus::channel::CONTROL).empty());
  CHECK(problem_of(header_of("kernel_info_request"), "{}", xeus::channel::CONTROL).empty());
  // The debugger answers any content, with a DAP error response if need be.
  CHECK(problem_of(header_of("debug_request"), "{}", xeus::channel::CONTROL).empty());
}

TEST_CASE("reply types") {
  CHECK(kernel::reply_type("execute_request") == "execute_reply");
  CHECK(kernel::reply_type("comm_open") == "comm_open_reply");
}
