// Certificates for the TLS tests, made by the `openssl` command in a fresh temp directory (removed
// by the destructor): a CA, a server certificate it signed for 127.0.0.1 and localhost, a client
// certificate it signed, and a second CA that signed nothing here (to be distrusted by).
#pragma once

#include <string>
#include <vector>

namespace leasehold::testing {

class TestCertificates {
 public:
  TestCertificates();
  ~TestCertificates();
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;

  std::string ca_file() const { return dir_ + "/ca.crt"; }
  std::string other_ca_file() const { return dir_ + "/other-ca.crt"; }
  std::string server_cert() const { return dir_ + "/server.crt"; }
  std::string server_key() const { return dir_ + "/server.key"; }
  std::string client_cert() const { return dir_ + "/client.crt"; }
  std::string client_key() const { return dir_ + "/client.key"; }
  const std::string& dir() const { return dir_; }

  // redis-server arguments for a TLS port with these certificates; `client_certificates`: whether
  // the server asks for (and checks) a client certificate.
  std::vector<std::string> server_args(int tls_port, bool client_certificates) const;

 private:
  std::string dir_;
};

}  // namespace leasehold::testing
