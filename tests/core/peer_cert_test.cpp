// Peer certificates: the cluster CA issues agent certificates that verify
// against it and against nothing else, only within their validity window, and
// that carry exactly what libtorrent matches on (SAN DNS:"*", CN = agent ID).
// The CA key and certificate persist in a folder and are guarded like every
// other secret.
#include "shoal/peer_cert.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include "shoal/openssl_ptr.h"
#include "shoal/utc_time.h"

using namespace shoal;

namespace {

constexpr int64_t kMinuteMs = 60 * 1000;
constexpr int64_t kHourMs = 60 * kMinuteMs;
constexpr int64_t kDayMs = 24 * kHourMs;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/shoal-peer-cert-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { REQUIRE(system(("rm -rf '" + path + "'").c_str()) == 0); }
  std::string path;
};

X509Ptr ParseX509(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), int(pem.size())));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  REQUIRE(cert != nullptr);
  return cert;
}

std::unique_ptr<PeerCa> NewCa(const char* name, int64_t now_ms = NowMs()) {
  auto ca = PeerCa::Create(name, now_ms, 365 * kDayMs);
  REQUIRE(ca.ok());
  return std::move(*ca);
}

PeerKey NewKey() {
  auto key = GeneratePeerKey();
  REQUIRE(key.ok());
  return *key;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

// Runs a shell command, returning its exit code and its combined output.
std::pair<int, std::string> Run(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  int status = pclose(pipe);
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), output};
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("an issued peer certificate verifies against its CA", "[peer_cert]") {
  auto ca = NewCa("test CA");
  PeerKey key = NewKey();
  CHECK(Contains(key.private_key_pem, "-----BEGIN PRIVATE KEY-----"));
  CHECK(Contains(key.public_key_pem, "-----BEGIN PUBLIC KEY-----"));

  const int64_t now = NowMs();
  auto issued = ca->Issue(key.public_key_pem, "agent-7", now, kHourMs);
  REQUIRE(issued.ok());
  CHECK(issued->not_before_ms == (now - 5 * kMinuteMs) / 1000 * 1000);
  CHECK(issued->not_after_ms == (now + kHourMs) / 1000 * 1000);

  auto verified = VerifyPeerCert(issued->cert_pem, ca->cert_pem(), now);
  REQUIRE(verified.ok());
  CHECK(*verified == issued->not_after_ms);
  auto not_after = CertNotAfterMs(issued->cert_pem);
  REQUIRE(not_after.ok());
  CHECK(*not_after == issued->not_after_ms);
  CHECK(CertMatchesKey(issued->cert_pem, key.private_key_pem));
}

TEST_CASE("a peer certificate carries SAN DNS:* and the agent ID as CN", "[peer_cert]") {
  auto ca = NewCa("test CA");
  PeerKey key = NewKey();
  auto issued = ca->Issue(key.public_key_pem, "agent-7", NowMs(), kHourMs);
  REQUIRE(issued.ok());
  X509Ptr cert = ParseX509(issued->cert_pem);

  char cn[128];
  REQUIRE(X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn,
                                    sizeof(cn)) > 0);
  CHECK(std::string(cn) == "agent-7");

  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  REQUIRE(names != nullptr);
  REQUIRE(sk_GENERAL_NAME_num(names) == 1);
  const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, 0);
  REQUIRE(name->type == GEN_DNS);
  std::string dns(reinterpret_cast<const char*>(ASN1_STRING_get0_data(name->d.dNSName)),
                  size_t(ASN1_STRING_length(name->d.dNSName)));
  GENERAL_NAMES_free(names);
  CHECK(dns == "*");

  CHECK(X509_check_ca(cert.get()) == 0);
  CHECK((X509_get_extended_key_usage(cert.get()) & (XKU_SSL_SERVER | XKU_SSL_CLIENT)) ==
        (XKU_SSL_SERVER | XKU_SSL_CLIENT));
  CHECK(X509_get_signature_nid(cert.get()) == NID_ecdsa_with_SHA256);
  X509Ptr ca_cert = ParseX509(ca->cert_pem());
  CHECK(X509_check_issued(ca_cert.get(), cert.get()) == X509_V_OK);
  CHECK(X509_check_ca(ca_cert.get()) != 0);
  CHECK(X509_get_key_usage(cert.get()) == (KU_DIGITAL_SIGNATURE | KU_KEY_AGREEMENT));
  const ASN1_OCTET_STRING* aki = X509_get0_authority_key_id(cert.get());
  const ASN1_OCTET_STRING* ski = X509_get0_subject_key_id(ca_cert.get());
  REQUIRE((aki != nullptr && ski != nullptr));
  CHECK(ASN1_OCTET_STRING_cmp(aki, ski) == 0);

  // Serials are random and fit in 128 bits.
  auto again = ca->Issue(key.public_key_pem, "agent-7", NowMs(), kHourMs);
  REQUIRE(again.ok());
  X509Ptr other = ParseX509(again->cert_pem);
  CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(cert.get()), X509_get0_serialNumber(other.get())) !=
        0);
  BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert.get()), nullptr);
  CHECK(BN_num_bits(serial) <= 128);
  BN_free(serial);
}

TEST_CASE("an expired peer certificate is refused", "[peer_cert]") {
  auto ca = NewCa("test CA", NowMs() - kDayMs);
  PeerKey key = NewKey();
  const int64_t now = NowMs();
  auto issued = ca->Issue(key.public_key_pem, "agent-7", now - 2 * kHourMs, kHourMs);
  REQUIRE(issued.ok());
  auto verified = VerifyPeerCert(issued->cert_pem, ca->cert_pem(), now);
  REQUIRE(!verified.ok());
  CHECK(verified.status().code() == Status::Code::kPermissionDenied);
  CHECK(Contains(verified.status().message(), "expired"));
  // Still good a minute before it ran out.
  CHECK(VerifyPeerCert(issued->cert_pem, ca->cert_pem(), now - kHourMs - kMinuteMs).ok());
}

TEST_CASE("a peer certificate is not valid before its time, less five minutes of skew",
          "[peer_cert]") {
  auto ca = NewCa("test CA", NowMs() - kDayMs);
  PeerKey key = NewKey();
  const int64_t now = NowMs();
  auto future = ca->Issue(key.public_key_pem, "agent-7", now + kHourMs, kHourMs);
  REQUIRE(future.ok());
  auto verified = VerifyPeerCert(future->cert_pem, ca->cert_pem(), now);
  REQUIRE(!verified.ok());
  CHECK(verified.status().code() == Status::Code::kPermissionDenied);
  CHECK(Contains(verified.status().message(), "not yet valid"));

  auto current = ca->Issue(key.public_key_pem, "agent-7", now, kHourMs);
  REQUIRE(current.ok());
  CHECK(VerifyPeerCert(current->cert_pem, ca->cert_pem(), now - 4 * kMinuteMs).ok());
  CHECK(Contains(
      VerifyPeerCert(current->cert_pem, ca->cert_pem(), now - 6 * kMinuteMs).status().message(),
      "not yet valid"));
}

TEST_CASE("a peer certificate from a foreign CA is refused", "[peer_cert]") {
  auto ours = NewCa("our CA");
  auto foreign = NewCa("our CA");  // the same name does not make it ours
  PeerKey key = NewKey();
  auto issued = foreign->Issue(key.public_key_pem, "agent-7", NowMs(), kHourMs);
  REQUIRE(issued.ok());
  auto verified = VerifyPeerCert(issued->cert_pem, ours->cert_pem(), NowMs());
  REQUIRE(!verified.ok());
  CHECK(verified.status().code() == Status::Code::kPermissionDenied);
  CHECK(Contains(verified.status().message(), "not signed by this CA"));

  // Nor may the CA certificate itself pose as a peer's.
  CHECK(VerifyPeerCert(ours->cert_pem(), ours->cert_pem(), NowMs()).status().code() ==
        Status::Code::kPermissionDenied);
}

TEST_CASE("a malformed key, subject or lifetime is an invalid argument", "[peer_cert]") {
  auto ca = NewCa("test CA");
  PeerKey key = NewKey();
  const int64_t now = NowMs();
  auto code = [&](std::string_view pem, std::string_view subject, int64_t ttl) {
    return ca->Issue(pem, subject, now, ttl).status().code();
  };
  const auto kInvalid = Status::Code::kInvalidArgument;
  CHECK(code("not a key", "agent-7", kHourMs) == kInvalid);
  CHECK(code("", "agent-7", kHourMs) == kInvalid);
  std::string truncated = key.public_key_pem.substr(0, key.public_key_pem.size() / 2);
  CHECK(code(truncated, "agent-7", kHourMs) == kInvalid);
  CHECK(code(key.private_key_pem, "agent-7", kHourMs) == kInvalid);

  EVP_PKEY* ed = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  REQUIRE(ed != nullptr);
  BioPtr bio(BIO_new(BIO_s_mem()));
  REQUIRE(PEM_write_bio_PUBKEY(bio.get(), ed) == 1);
  EVP_PKEY_free(ed);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  std::string ed_pem(data, size_t(len));
  CHECK(code(ed_pem, "agent-7", kHourMs) == kInvalid);

  CHECK(code(key.public_key_pem, "", kHourMs) == kInvalid);
  CHECK(code(key.public_key_pem, std::string(65, 'a'), kHourMs) == kInvalid);
  CHECK(code(key.public_key_pem, std::string("agent\0x", 7), kHourMs) == kInvalid);
  CHECK(code(key.public_key_pem, "agent-7", 0) == kInvalid);
  CHECK(code(key.public_key_pem, "agent-7", -kHourMs) == kInvalid);
  CHECK(ca->Issue(key.public_key_pem, std::string(64, 'a'), now, kHourMs).ok());

  CHECK(PeerCa::Create("", now, kHourMs).status().code() == kInvalid);
  CHECK(PeerCa::Create("CA", now, 0).status().code() == kInvalid);
  CHECK(VerifyPeerCert("junk", ca->cert_pem(), now).status().code() == kInvalid);
  CHECK(CertNotAfterMs("junk").status().code() == kInvalid);
}

TEST_CASE("the peer CA is created once in its folder and reloaded", "[peer_cert]") {
  TempDir dir;
  auto first = PeerCa::LoadOrCreate(dir.path);
  REQUIRE(first.ok());
  const std::string key_path = dir.path + "/peer-ca.key";
  const std::string cert_path = dir.path + "/peer-ca.pem";
  struct stat st;
  REQUIRE(stat(key_path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(stat(cert_path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  std::ifstream in(key_path);
  std::string head;
  std::getline(in, head);
  CHECK(head == "-----BEGIN PRIVATE KEY-----");

  X509Ptr cert = ParseX509((*first)->cert_pem());
  char cn[128];
  REQUIRE(X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn,
                                    sizeof(cn)) > 0);
  CHECK(std::string(cn).rfind("Shoal peer CA ", 0) == 0);
  CHECK(std::string(cn).size() == std::string("Shoal peer CA ").size() + 16);
  auto not_after = CertNotAfterMs((*first)->cert_pem());
  REQUIRE(not_after.ok());
  CHECK(*not_after > NowMs() + 9 * 365 * kDayMs);

  auto again = PeerCa::LoadOrCreate(dir.path);
  REQUIRE(again.ok());
  CHECK((*again)->cert_pem() == (*first)->cert_pem());
  // The reloaded CA signs with the same key.
  PeerKey key = NewKey();
  auto issued = (*again)->Issue(key.public_key_pem, "agent-7", NowMs(), kHourMs);
  REQUIRE(issued.ok());
  CHECK(VerifyPeerCert(issued->cert_pem, (*first)->cert_pem(), NowMs()).ok());
}

TEST_CASE("a peer CA key readable by others is refused", "[peer_cert]") {
  TempDir dir;
  REQUIRE(PeerCa::LoadOrCreate(dir.path).ok());
  REQUIRE(chmod((dir.path + "/peer-ca.key").c_str(), 0644) == 0);
  CHECK(PeerCa::LoadOrCreate(dir.path).status().code() == Status::Code::kPermissionDenied);
}

TEST_CASE("half a peer CA, or a mismatched pair, is refused", "[peer_cert]") {
  TempDir dir;
  auto ca = PeerCa::LoadOrCreate(dir.path);
  REQUIRE(ca.ok());
  const std::string key_path = dir.path + "/peer-ca.key";
  const std::string cert_path = dir.path + "/peer-ca.pem";
  std::string key_pem;
  {
    std::ifstream in(key_path);
    key_pem.assign(std::istreambuf_iterator<char>(in), {});
  }

  REQUIRE(unlink(key_path.c_str()) == 0);
  auto only_cert = PeerCa::LoadOrCreate(dir.path);
  CHECK(only_cert.status().code() == Status::Code::kInvalidArgument);
  CHECK(Contains(only_cert.status().message(), key_path));
  CHECK(Contains(only_cert.status().message(), "does not"));

  REQUIRE(unlink(cert_path.c_str()) == 0);
  WriteFile(key_path, key_pem);
  REQUIRE(chmod(key_path.c_str(), 0600) == 0);
  auto only_key = PeerCa::LoadOrCreate(dir.path);
  CHECK(only_key.status().code() == Status::Code::kInvalidArgument);
  CHECK(Contains(only_key.status().message(), cert_path));

  WriteFile(cert_path, NewCa("another CA")->cert_pem());
  CHECK(PeerCa::LoadOrCreate(dir.path).status().IsCorruption());
}

TEST_CASE("a certificate matches its own private key only", "[peer_cert]") {
  auto ca = NewCa("test CA");
  PeerKey mine = NewKey();
  PeerKey other = NewKey();
  auto issued = ca->Issue(mine.public_key_pem, "agent-7", NowMs(), kHourMs);
  REQUIRE(issued.ok());
  CHECK(CertMatchesKey(issued->cert_pem, mine.private_key_pem));
  CHECK_FALSE(CertMatchesKey(issued->cert_pem, other.private_key_pem));
  CHECK_FALSE(CertMatchesKey(issued->cert_pem, "junk"));
  CHECK_FALSE(CertMatchesKey("junk", mine.private_key_pem));
}

TEST_CASE("the openssl command line accepts an issued certificate for TLS", "[peer_cert]") {
  TempDir dir;
  auto ca = PeerCa::LoadOrCreate(dir.path);
  REQUIRE(ca.ok());
  PeerKey key = NewKey();
  auto issued = (*ca)->Issue(key.public_key_pem, "agent-7", NowMs(), kHourMs);
  REQUIRE(issued.ok());
  WriteFile(dir.path + "/leaf.pem", issued->cert_pem);
  const std::string ca_file = dir.path + "/peer-ca.pem";
  for (const char* purpose : {"sslserver", "sslclient"}) {
    auto [code, output] = Run("openssl verify -x509_strict -purpose " + std::string(purpose) +
                              " -CAfile '" + ca_file + "' '" + dir.path + "/leaf.pem'");
    INFO(output);
    CHECK(code == 0);
    CHECK(Contains(output, "leaf.pem: OK"));
  }

  WriteFile(dir.path + "/foreign.pem", NewCa("foreign CA")->cert_pem());
  auto [code, output] =
      Run("openssl verify -CAfile '" + dir.path + "/foreign.pem' '" + dir.path + "/leaf.pem'");
  INFO(output);
  CHECK(code != 0);
}

TEST_CASE("one CA issues from many threads at once", "[peer_cert]") {
  auto ca = NewCa("test CA");
  PeerKey key = NewKey();
  const int64_t now = NowMs();
  std::vector<std::vector<std::string>> certs(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < certs.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto issued = ca->Issue(key.public_key_pem, "agent-" + std::to_string(t), now, kHourMs);
        certs[t].push_back(issued.ok() ? issued->cert_pem : "");
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& list : certs) {
    for (const std::string& pem : list) CHECK(VerifyPeerCert(pem, ca->cert_pem(), now).ok());
  }
}
