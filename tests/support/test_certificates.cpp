#include "test_certificates.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace leasehold::testing {
namespace {

void run(const std::string& command) {
  if (std::system((command + " >/dev/null 2>&1").c_str()) != 0)
    throw std::runtime_error("making test certificates failed (is openssl installed?): " + command);
}

// A P-256 key and a certificate for `subject`, signed by the CA in `ca` (a path without its
// extension), or self-signed as a CA when `ca` is empty.
void make_certificate(const std::string& dir, const std::string& name, const std::string& subject,
                      const std::string& ca, const std::string& alt_names) {
  const std::string key = dir + "/" + name + ".key";
  const std::string crt = dir + "/" + name + ".crt";
  const std::string new_key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ";
  if (ca.empty()) {
    run("openssl req -x509 -days 2" + new_key + key + " -out " + crt + " -subj '/CN=" + subject +
        "'");
    return;
  }
  const std::string csr = dir + "/" + name + ".csr";
  const std::string ext = dir + "/" + name + ".ext";
  run("openssl req" + new_key + key + " -out " + csr + " -subj '/CN=" + subject + "'");
  std::ofstream(ext) << (alt_names.empty() ? std::string() : "subjectAltName=" + alt_names + "\n");
  run("openssl x509 -req -days 2 -in " + csr + " -CA " + ca + ".crt -CAkey " + ca +
      ".key -CAcreateserial -out " + crt + " -extfile " + ext);
}

}  // namespace

TestCertificates::TestCertificates() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "leasehold-certs-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  make_certificate(dir_, "ca", "leasehold test CA", "", "");
  make_certificate(dir_, "other-ca", "some other CA", "", "");
  make_certificate(dir_, "server", "localhost", dir_ + "/ca", "IP:127.0.0.1,DNS:localhost");
  make_certificate(dir_, "client", "leasehold test client", dir_ + "/ca", "");
}

TestCertificates::~TestCertificates() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::vector<std::string> TestCertificates::server_args(int tls_port,
                                                       bool client_certificates) const {
  return {"--tls-port",         std::to_string(tls_port),
          "--tls-cert-file",    server_cert(),
          "--tls-key-file",     server_key(),
          "--tls-ca-cert-file", ca_file(),
          "--tls-auth-clients", client_certificates ? "yes" : "no"};
}

}  // namespace leasehold::testing
