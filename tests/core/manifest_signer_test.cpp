// Manifest signatures: the tracker's key signs version IDs, the signature
// verifies with its public key and with nothing else, and the key survives a
// restart.
#include "shoal/manifest_signer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "shoal/sha256.h"

using namespace shoal;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/shoal-signer-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { REQUIRE(system(("rm -rf '" + path + "'").c_str()) == 0); }
  std::string path;
};

VersionId SomeVersion(const char* text) {
  return VersionId::From(Sha256::Of(text, std::strlen(text)));
}

}  // namespace

TEST_CASE("a signed version verifies with the tracker's public key", "[signer]") {
  TempDir dir;
  auto signer = ManifestSigner::LoadOrCreate(dir.path + "/manifest.key");
  REQUIRE(signer.ok());
  const ManifestSigner& s = **signer;
  CHECK(s.public_key().size() == 32);
  CHECK(s.key_id().size() == 16);
  CHECK(s.key_id() == ManifestKeyId(s.public_key()));

  VersionId v = SomeVersion("model v1");
  std::string sig = s.Sign(v);
  CHECK(sig.size() == 64);
  CHECK(VerifyManifestSignature(v, sig, s.public_key()).ok());

  Status other = VerifyManifestSignature(SomeVersion("model v2"), sig, s.public_key());
  REQUIRE(other.IsCorruption());
  CHECK(other.message().rfind("manifest signature does not verify with tracker key " + s.key_id(),
                              0) == 0);
}

TEST_CASE("a signature fails under another key and with any flipped bit", "[signer]") {
  TempDir dir;
  auto a = ManifestSigner::LoadOrCreate(dir.path + "/a.key");
  auto b = ManifestSigner::LoadOrCreate(dir.path + "/b.key");
  REQUIRE((a.ok() && b.ok()));
  CHECK((*a)->public_key() != (*b)->public_key());
  VersionId v = SomeVersion("model v1");
  std::string sig = (*a)->Sign(v);
  CHECK(VerifyManifestSignature(v, sig, (*b)->public_key()).IsCorruption());
  for (size_t bit = 0; bit < sig.size() * 8; bit += 7) {
    std::string flipped = sig;
    flipped[bit / 8] = char(flipped[bit / 8] ^ (1 << (bit % 8)));
    CHECK(VerifyManifestSignature(v, flipped, (*a)->public_key()).IsCorruption());
  }
}

TEST_CASE("the key is created once with mode 0600 and reloaded", "[signer]") {
  TempDir dir;
  std::string path = dir.path + "/manifest.key";
  auto first = ManifestSigner::LoadOrCreate(path);
  REQUIRE(first.ok());
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::ifstream in(path);
  std::string head;
  std::getline(in, head);
  CHECK(head == "-----BEGIN PRIVATE KEY-----");

  auto again = ManifestSigner::LoadOrCreate(path);
  REQUIRE(again.ok());
  CHECK((*again)->public_key() == (*first)->public_key());
  VersionId v = SomeVersion("model v1");
  CHECK(VerifyManifestSignature(v, (*again)->Sign(v), (*first)->public_key()).ok());

  REQUIRE(chmod(path.c_str(), 0644) == 0);
  CHECK(ManifestSigner::LoadOrCreate(path).status().code() == Status::Code::kPermissionDenied);

  std::string junk = dir.path + "/junk.key";
  { std::ofstream(junk) << "not a key"; }
  REQUIRE(chmod(junk.c_str(), 0600) == 0);
  CHECK(ManifestSigner::LoadOrCreate(junk).status().IsCorruption());
}

TEST_CASE("wrong lengths are invalid arguments, not crashes", "[signer]") {
  TempDir dir;
  auto signer = ManifestSigner::LoadOrCreate(dir.path + "/manifest.key");
  REQUIRE(signer.ok());
  VersionId v = SomeVersion("model v1");
  std::string sig = (*signer)->Sign(v);
  const std::string& pub = (*signer)->public_key();
  CHECK(VerifyManifestSignature(v, sig.substr(0, 63), pub).code() ==
        Status::Code::kInvalidArgument);
  CHECK(VerifyManifestSignature(v, sig + "x", pub).code() == Status::Code::kInvalidArgument);
  CHECK(VerifyManifestSignature(v, sig, pub.substr(0, 31)).code() ==
        Status::Code::kInvalidArgument);
  CHECK(VerifyManifestSignature(v, "", "").code() == Status::Code::kInvalidArgument);
  CHECK(VerifyManifestSignature(v, std::string(64, 1), std::string(32, 7)).IsCorruption());
}
