// TLS for rediss:// URLs: one OpenSSL context per client, shared by its connections (a cluster's
// too), and what each connection sets before its handshake.
#pragma once

#include <asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <system_error>

#include "leasehold/options.hpp"

namespace leasehold::detail {

// A client context that verifies the server against options.ca_file (or the system's trusted
// CAs) and presents options.cert_file/key_file when given. Throws Error(errc::invalid_argument)
// that names the file it could not use and why.
std::shared_ptr<asio::ssl::context> make_tls_context(const TlsOptions& options);

// Makes the handshake on `ssl` check that the certificate names `name` (a DNS name, or an IP
// address against the certificate's IP entries) and sends the name as SNI when it is not an
// address. False if OpenSSL refused the name.
bool expect_server_name(SSL* ssl, const std::string& name);

// Why a handshake or a read on `ssl` failed with `error`, for a message: the certificate check's
// verdict when that is what failed, else the TLS error. Empty for errors not of TLS.
std::string describe_tls_failure(SSL* ssl, std::error_code error);

}  // namespace leasehold::detail
