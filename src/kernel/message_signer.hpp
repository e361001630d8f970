// The HMAC signature of Jupyter messages (the connection file's key and
// signature_scheme): the kernel signs what it sends and verifies what it
// receives, so that only a holder of the key can make it do anything.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace interp_rpc::kernel {

class message_signer {
 public:
  // scheme: "hmac-<digest>" (Jupyter uses hmac-sha256). An empty key means
  // that messages are neither signed nor checked, as the protocol says.
  // Throws std::invalid_argument for a scheme OpenSSL does not know.
  message_signer(const std::string& scheme, std::string key);
  ~message_signer();
  message_signer(const message_signer&) = delete;
  message_signer& operator=(const message_signer&) = delete;

  // The lowercase hex digest of the parts in order (header, parent header,
  // metadata, content); empty without a key. Any thread.
  std::string sign(std::span<const std::string_view> parts) const;

  // Whether signature is the signature of parts. Constant time in the
  // signature's content, so that it leaks nothing about the expected one.
  bool verify(std::string_view signature, std::span<const std::string_view> parts) const;

 private:
  struct digest;
  std::string m_key;
  std::unique_ptr<digest> p_digest;
};

}  // namespace interp_rpc::kernel
