#include "tls.hpp"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <asio/ip/address.hpp>
#include <asio/ssl/error.hpp>

#include "leasehold/error.hpp"

namespace leasehold::detail {
namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& file, std::error_code ec) {
  throw Error(make_error_code(errc::invalid_argument),
              "cannot use the TLS " + what + " '" + file + "': " + ec.message());
}

}  // namespace

std::shared_ptr<asio::ssl::context> make_tls_context(const TlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    throw Error(make_error_code(errc::invalid_argument),
                "a TLS client certificate needs its private key: give both cert_file and "
                "key_file, or neither");
  }
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  std::error_code ec;
  // TLS 1.2 at least: what Redis 6+ offers, and nothing older is safe.
  context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1);
  context->set_verify_mode(asio::ssl::verify_peer);
  if (!options.ca_file.empty()) {
    context->load_verify_file(options.ca_file, ec);
    if (ec)
      refuse("CA file", options.ca_file, ec);
  } else {
    context->set_default_verify_paths(ec);
    if (ec) {
      throw Error(make_error_code(errc::invalid_argument),
                  "cannot load the system's trusted CA certificates (" + ec.message() +
                      "); give a CA file in ClientOptions::tls.ca_file");
    }
  }
  if (!options.cert_file.empty()) {
    context->use_certificate_chain_file(options.cert_file, ec);
    if (ec)
      refuse("client certificate", options.cert_file, ec);
    context->use_private_key_file(options.key_file, asio::ssl::context::pem, ec);
    if (ec || SSL_CTX_check_private_key(context->native_handle()) != 1) {
      throw Error(make_error_code(errc::invalid_argument),
                  "cannot use the TLS private key '" + options.key_file +
                      "': it must be the PEM key of the client certificate '" + options.cert_file +
                      "' (" + (ec ? ec.message() : "it belongs to another certificate") + ")");
    }
  }
  return context;
}

bool expect_server_name(SSL* ssl, const std::string& name) {
  std::error_code not_an_address;
  (void)asio::ip::make_address(name, not_an_address);
  if (!not_an_address)
    return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1;
  // No partial wildcards ("w*.example.com"): what browsers accept too.
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return SSL_set1_host(ssl, name.c_str()) == 1 && SSL_set_tlsext_host_name(ssl, name.c_str()) == 1;
}

std::string describe_tls_failure(SSL* ssl, std::error_code error) {
  if (error.category() != asio::error::get_ssl_category() &&
      error.category() != asio::ssl::error::get_stream_category())
    return {};
  const long verdict = SSL_get_verify_result(ssl);
  if (verdict != X509_V_OK)
    return std::string("the server's certificate was refused: ") +
           X509_verify_cert_error_string(verdict);
  std::string text = error.message();
  // OpenSSL's words for a peer that answered the hello with plain text.
  if (text.find("wrong version number") != std::string::npos ||
      text.find("packet length too long") != std::string::npos)
    text += "; the server may not take TLS on this port";
  return text;
}

}  // namespace leasehold::detail
