// Manifests: canonical round trips, and hostile input refused with a clear
// message before anything unbounded is allocated.
#include "shoal/manifest.h"

#include <capnp/message.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "shoal/manifest_codec.h"
#include "shoal/piece_hasher.h"
#include "shoal/proto/manifest.capnp.h"
#include "shoal/sha256.h"

using namespace shoal;

namespace {

constexpr uint32_t kPiece = 65536;

FileEntry MakeFile(const std::string& path, uint64_t size, uint32_t seed) {
  std::string data(size, '\0');
  std::mt19937 rng(seed);
  for (char& c : data) c = static_cast<char>(rng());
  FileHashes h = HashBuffer(reinterpret_cast<const uint8_t*>(data.data()), size, kPiece);
  FileEntry f;
  f.path = path;
  f.size = size;
  f.mode = 0644;
  f.pieces_root = h.pieces_root;
  f.piece_layer = h.piece_layer;
  return f;
}

Manifest ValidManifest() {
  Manifest m;
  m.ns = "team-a";
  m.name = "llama-ft";
  m.created_by = "trainer@team-a";
  m.created_at_ms = 1795977747380;
  m.piece_size = kPiece;
  m.labels = {{"epoch", "3"}, {"git/sha", "abc123"}};
  m.files = {MakeFile("model-00001.safetensors", 3 * kPiece + 77, 1),
             MakeFile("config.json", 900, 2), MakeFile("tokenizer/empty.txt", 0, 3)};
  m.empty_dirs = {"logs"};
  return m;
}

// Encodes a manifest as canonical bytes without validating it first, the way
// a hostile client could send it straight to the RPC.
std::string EncodeUnchecked(const std::function<void(proto::Manifest::Builder)>& fill) {
  capnp::MallocMessageBuilder b;
  auto root = b.initRoot<proto::Manifest>();
  root.setFormatVersion(1);
  root.setNamespace("team-a");
  root.setName("m");
  root.setPieceSize(kPiece);
  fill(root);
  auto words = capnp::canonicalize(root.asReader());
  return std::string(reinterpret_cast<const char*>(words.asBytes().begin()),
                     words.asBytes().size());
}

std::string ErrorOf(const Manifest& m) {
  Result<std::string> enc = EncodeManifest(m);
  REQUIRE_FALSE(enc.ok());
  return enc.status().ToString();
}

std::string DecodeError(const std::string& bytes) {
  Result<Manifest> dec = DecodeManifest(bytes);
  REQUIRE_FALSE(dec.ok());
  return dec.status().ToString();
}

}  // namespace

TEST_CASE("a manifest survives encode and decode unchanged", "[manifest]") {
  Manifest m = ValidManifest();
  m.parent = VersionId::From(Sha256::Of("parent", 6));
  Result<std::string> bytes = EncodeManifest(m);
  REQUIRE(bytes.ok());
  Result<Manifest> back = DecodeManifest(*bytes);
  REQUIRE(back.ok());
  m.Canonicalize();
  CHECK(*back == m);
  CHECK(back->files[1].piece_layer.size() == 4);
  // Re-encoding the decoded manifest gives the same bytes, so the same ID.
  Result<std::string> again = EncodeManifest(*back);
  REQUIRE(again.ok());
  CHECK(ComputeVersionId(*again) == ComputeVersionId(*bytes));
}

TEST_CASE("the version id does not depend on the order files were listed in", "[manifest]") {
  Manifest a = ValidManifest();
  Manifest b = a;
  std::reverse(b.files.begin(), b.files.end());
  std::reverse(b.labels.begin(), b.labels.end());
  CHECK(ComputeVersionId(*EncodeManifest(a)) == ComputeVersionId(*EncodeManifest(b)));
  b.labels[0].value = "4";
  CHECK(ComputeVersionId(*EncodeManifest(a)) != ComputeVersionId(*EncodeManifest(b)));
}

TEST_CASE("hostile paths are refused with the reason", "[manifest][hostile]") {
  struct Case {
    std::string path;
    std::string reason;
  };
  std::vector<Case> cases = {
      {"/etc/passwd", "is absolute"},
      {"../escape", "contains '..'"},
      {"a/../../b", "contains '..'"},
      {"a//b", "empty component"},
      {"a/b/", "empty component"},
      {"./a", "contains '.'"},
      {std::string("a\0b", 3), "contains NUL"},
      {"a\\b", "backslash"},
      {"a\nb", "control character"},
      {std::string(5000, 'x'), "longer than 4096"},
      {std::string(300, 'x'), "longer than 255"},
      {"bad\xff\xfeutf8", "not valid UTF-8"},
  };
  for (const Case& c : cases) {
    Manifest m = ValidManifest();
    m.files[0].path = c.path;
    INFO("path " << c.path);
    CHECK_THAT(ErrorOf(m), Catch::Contains(c.reason));
  }
}

TEST_CASE("hostile manifests are refused with the reason", "[manifest][hostile]") {
  SECTION("duplicate paths") {
    Manifest m = ValidManifest();
    m.files.push_back(m.files[0]);
    CHECK_THAT(ErrorOf(m), Catch::Contains("duplicate path 'model-00001.safetensors'"));
  }
  SECTION("a file that is also a folder of another file") {
    Manifest m = ValidManifest();
    m.files.push_back(MakeFile("config.json/inner", 10, 9));
    CHECK_THAT(ErrorOf(m), Catch::Contains("'config.json' is both a file"));
  }
  SECTION("size disagrees with the piece count") {
    Manifest m = ValidManifest();
    m.files[0].size += kPiece;  // now needs 5 piece hashes, has 4
    CHECK_THAT(ErrorOf(m), Catch::Contains("has 4 piece hashes, but its size"));
  }
  SECTION("a piece layer on a file of one piece") {
    Manifest m = ValidManifest();
    m.files[1].piece_layer.push_back(ChunkId());
    CHECK_THAT(ErrorOf(m), Catch::Contains("needs 0"));
  }
  SECTION("a piece layer that does not hash to the pieces root") {
    Manifest m = ValidManifest();
    m.files[0].piece_layer[2] = ChunkId::From(Sha256::Of("x", 1));
    CHECK_THAT(ErrorOf(m), Catch::Contains("does not hash to its pieces root"));
  }
  SECTION("piece size out of range or not a power of two") {
    for (uint32_t bad : {8192u, 128u << 20, 100000u, 0u}) {
      Manifest m = ValidManifest();
      m.piece_size = bad;
      CHECK_THAT(ErrorOf(m), Catch::Contains("must be a power of two from 16 KiB to 64 MiB"));
    }
  }
  SECTION("an empty file with a pieces root") {
    Manifest m = ValidManifest();
    m.files[2].pieces_root = m.files[1].pieces_root;
    CHECK_THAT(ErrorOf(m), Catch::Contains("is empty but has a pieces root"));
  }
  SECTION("bad namespace and model names") {
    for (const std::string& bad : std::vector<std::string>{
             "", "Team", "a/b", "-x", std::string(200, 'a'), std::string("a\0", 2)}) {
      Manifest m = ValidManifest();
      m.ns = bad;
      CHECK_THAT(ErrorOf(m), Catch::Contains("namespace"));
    }
  }
  SECTION("too many labels, and a duplicate label") {
    Manifest m = ValidManifest();
    for (int i = 0; i < 70; ++i) m.labels.push_back({"k" + std::to_string(i), "v"});
    CHECK_THAT(ErrorOf(m), Catch::Contains("the limit is 64"));
    m = ValidManifest();
    m.labels.push_back({"epoch", "4"});
    CHECK_THAT(ErrorOf(m), Catch::Contains("label 'epoch' appears twice"));
  }
  SECTION("mode bits beyond permissions") {
    Manifest m = ValidManifest();
    m.files[0].mode = 04755;
    CHECK_THAT(ErrorOf(m), Catch::Contains("mode bits beyond 0777"));
  }
}

TEST_CASE("hostile bytes are refused before the decoder allocates for them",
          "[manifest][hostile]") {
  SECTION("garbage and truncation") {
    CHECK_THAT(DecodeError(""), Catch::Contains("not a whole number of 8-byte words"));
    CHECK_THAT(DecodeError("1234567"), Catch::Contains("not a whole number"));
    std::string good = *EncodeManifest(ValidManifest());
    CHECK_THAT(DecodeError(good.substr(0, good.size() / 2)), Catch::Contains("manifest"));
    std::string garbage(4096, '\xa5');
    CHECK_FALSE(DecodeManifest(garbage).ok());
  }
  SECTION("oversized input") {
    std::string huge(ManifestLimits::kMaxEncodedBytes + 8, '\0');
    CHECK_THAT(DecodeError(huge), Catch::Contains("the limit is 64 MiB"));
  }
  SECTION("a file count over the limit") {
    std::string bytes = EncodeUnchecked([](proto::Manifest::Builder r) {
      auto files = r.initFiles(static_cast<unsigned>(ManifestLimits::kMaxFiles + 1));
      for (unsigned i = 0; i < files.size(); ++i) files[i].setPath("f" + std::to_string(i));
    });
    CHECK_THAT(DecodeError(bytes), Catch::Contains("the limit is 200000"));
  }
  SECTION("a list of empty elements that costs nothing to send and much to read") {
    std::string bytes = EncodeUnchecked([](proto::Manifest::Builder r) { r.initFiles(1u << 20); });
    CHECK(bytes.size() < 1024);
    CHECK_THAT(DecodeError(bytes), Catch::Contains("traversal limit"));
  }
  SECTION("a piece layer that is not whole hashes") {
    std::string bytes = EncodeUnchecked([](proto::Manifest::Builder r) {
      auto f = r.initFiles(1)[0];
      f.setPath("a");
      f.setSize(3 * kPiece);
      f.initPieceLayer(33);
    });
    CHECK_THAT(DecodeError(bytes), Catch::Contains("not a whole number of hashes"));
  }
  SECTION("an unknown format version") {
    std::string bytes = EncodeUnchecked([](proto::Manifest::Builder r) { r.setFormatVersion(9); });
    CHECK_THAT(DecodeError(bytes), Catch::Contains("format version 9 is not supported"));
  }
  SECTION("unsorted files, as a non-canonical encoder would send them") {
    Manifest m = ValidManifest();
    std::string bytes = EncodeUnchecked([&](proto::Manifest::Builder r) {
      auto files = r.initFiles(2);
      for (unsigned i = 0; i < 2; ++i) {
        const FileEntry& f = m.files[i];  // model-... before config.json
        files[i].setPath(f.path);
        files[i].setSize(f.size);
        files[i].setMode(f.mode);
        files[i].setPiecesRoot(kj::arrayPtr(f.pieces_root.data(), 32));
        if (!f.piece_layer.empty()) {
          auto l = files[i].initPieceLayer(static_cast<unsigned>(f.piece_layer.size() * 32));
          for (size_t p = 0; p < f.piece_layer.size(); ++p) {
            std::memcpy(l.begin() + p * 32, f.piece_layer[p].data(), 32);
          }
        }
      }
    });
    CHECK_THAT(DecodeError(bytes), Catch::Contains("canonical (sorted) order"));
  }
  SECTION("a traversal path sent straight to the decoder") {
    std::string bytes = EncodeUnchecked([](proto::Manifest::Builder r) {
      auto f = r.initFiles(1)[0];
      f.setPath("../../etc/shadow");
      f.setSize(0);
    });
    CHECK_THAT(DecodeError(bytes), Catch::Contains("contains '..'"));
  }
}

TEST_CASE("bytes that decode are the only bytes of their manifest", "[manifest][hostile]") {
  // A bit no field uses (the padding after a file's mode, say) passes
  // Cap'n Proto's canonical check; accepted, it would give the same
  // manifest another version ID. Every one-bit change is refused or is
  // that manifest's own encoding.
  const std::string good = *EncodeManifest(ValidManifest());
  int decoded = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bytes = good;
      bytes[i] = static_cast<char>(bytes[i] ^ (1 << bit));
      Result<Manifest> m = DecodeManifest(bytes);
      if (!m.ok()) continue;
      ++decoded;
      Result<std::string> again = EncodeManifest(*m);
      REQUIRE(again.ok());
      INFO("byte " << i << ", bit " << bit);
      CHECK(ComputeVersionId(*again).ToHex() == ComputeVersionId(bytes).ToHex());
    }
  }
  CHECK(decoded > 0);  // some changes (a mode bit, a byte of a hash) are other valid manifests
}

TEST_CASE("an empty checkpoint is a valid manifest", "[manifest]") {
  Manifest m = ValidManifest();
  m.files.clear();
  m.empty_dirs = {"a", "b/c"};
  Result<std::string> bytes = EncodeManifest(m);
  REQUIRE(bytes.ok());
  Result<Manifest> back = DecodeManifest(*bytes);
  REQUIRE(back.ok());
  CHECK(back->empty_dirs == m.empty_dirs);
  CHECK(back->TotalBytes() == 0);
}
