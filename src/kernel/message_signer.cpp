#include "kernel/message_signer.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <stdexcept>
#include <utility>

namespace interp_rpc::kernel {

namespace {

constexpr std::string_view scheme_prefix = "hmac-";

struct mac_context_deleter {
  void operator()(EVP_MAC_CTX* context) const { EVP_MAC_CTX_free(context); }
};
using mac_context = std::unique_ptr<EVP_MAC_CTX, mac_context_deleter>;

}  // namespace

// A MAC context initialized with the key once; each signature works on a copy,
// so that threads sign at the same time without a lock.
struct message_signer::digest {
  mac_context initialized;
};

message_signer::message_signer(const std::string& scheme, std::string key)
    : m_key(std::move(key)) {
  if (m_key.empty()) {
    return;
  }
  if (!scheme.starts_with(scheme_prefix)) {
    throw std::invalid_argument("unsupported signature_scheme '" + scheme +
                                "': expected hmac-<digest>, such as hmac-sha256");
  }
  std::string digest_name = scheme.substr(scheme_prefix.size());
  if (EVP_get_digestbyname(digest_name.c_str()) == nullptr) {
    throw std::invalid_argument("unsupported signature_scheme '" + scheme +
                                "': OpenSSL has no digest '" + digest_name + "'");
  }
  EVP_MAC* hmac = EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr);
  mac_context context(hmac == nullptr ? nullptr : EVP_MAC_CTX_new(hmac));
  EVP_MAC_free(hmac);  // the context keeps its own reference
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name.data(), 0),
      OSSL_PARAM_construct_end()};
  if (!context ||
      EVP_MAC_init(context.get(), reinterpret_cast<const unsigned char*>(m_key.data()),
                   m_key.size(), params) != 1) {
    throw std::runtime_error("OpenSSL could not set up " + scheme);
  }
  p_digest = std::make_unique<digest>(digest{std::move(context)});
}

message_signer::~message_signer() = default;

std::string message_signer::sign(std::span<const std::string_view> parts) const {
  if (!p_digest) {
    return {};
  }
  const mac_context context(EVP_MAC_CTX_dup(p_digest->initialized.get()));
  if (!context) {
    throw std::runtime_error("OpenSSL could not copy the HMAC context");
  }
  for (const std::string_view part : parts) {
    EVP_MAC_update(context.get(), reinterpret_cast<const unsigned char*>(part.data()),
                   part.size());
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  std::size_t length = 0;
  if (EVP_MAC_final(context.get(), mac, &length, sizeof mac) != 1) {
    throw std::runtime_error("OpenSSL could not compute the HMAC");
  }
  static constexpr char hex_digits[] = "0123456789abcdef";
  std::string hex(2 * length, '0');
  for (std::size_t i = 0; i < length; ++i) {
    hex[2 * i] = hex_digits[mac[i] >> 4];
    hex[2 * i + 1] = hex_digits[mac[i] & 0xf];
  }
  return hex;
}

bool message_signer::verify(std::string_view signature,
                            std::span<const std::string_view> parts) const {
  if (!p_digest) {
    return true;
  }
  const std::string expected = sign(parts);
  // The length of a signature is public (it is the digest's); its content is
  // compared in constant time.
  return signature.size() == expected.size() &&
         CRYPTO_memcmp(signature.data(), expected.data(), expected.size()) == 0;
}

}  // namespace interp_rpc::kernel
