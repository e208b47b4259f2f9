// The canonical info dictionaries: a cluster's peer CA makes every torrent
// an SSL torrent of that CA, and is part of its info-hash.
#include "shoal/file_torrent_info.h"

#include <catch2/catch.hpp>

#include "shoal/piece_hasher.h"

namespace shoal {
namespace {

FileEntry Entry(size_t size, uint8_t fill, uint32_t piece_size) {
  std::vector<uint8_t> data(size, fill);
  FileHashes h = HashBuffer(data.data(), data.size(), piece_size);
  FileEntry f;
  f.path = "f" + std::to_string(fill);
  f.size = size;
  f.pieces_root = h.pieces_root;
  f.piece_layer = h.piece_layer;
  return f;
}

const char kCa[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

}  // namespace

TEST_CASE("a peer CA ends every info dictionary and changes its hash", "[core][torrent]") {
  const uint32_t piece = 64 * 1024;
  FileEntry big = Entry(3 * piece + 5, 1, piece);
  const std::string plain = FileTorrentInfo(big, piece, "");
  const std::string tls = FileTorrentInfo(big, piece, kCa);
  CHECK(plain.find("ssl-cert") == std::string::npos);
  // Keys are sorted, so `ssl-cert` comes last, after `private`.
  const std::string tail =
      "7:privatei1e8:ssl-cert" + std::to_string(sizeof(kCa) - 1) + ":" + kCa + "e";
  REQUIRE(tls.size() > tail.size());
  CHECK(tls.substr(tls.size() - tail.size()) == tail);
  CHECK(tls.substr(0, plain.size() - 1) == plain.substr(0, plain.size() - 1));
  CHECK(FileTorrentInfoHash(big, piece, "") != FileTorrentInfoHash(big, piece, kCa));
  CHECK(FileTorrentInfoHash(big, piece, kCa) == FileTorrentInfoHash(big, piece, kCa));

  FileEntry a = Entry(1000, 2, piece), b = Entry(2000, 3, piece);
  auto bundle = BundleTorrentInfo({&a, &b}, piece, kCa);
  REQUIRE(bundle.ok());
  CHECK(bundle->find(std::string("8:ssl-cert")) != std::string::npos);

  Manifest m;
  m.piece_size = piece;
  m.files = {big, a, b};
  std::vector<Digest> plain_hashes = VersionTorrentHashes(m, "");
  std::vector<Digest> tls_hashes = VersionTorrentHashes(m, kCa);
  REQUIRE(plain_hashes.size() == tls_hashes.size());
  for (size_t i = 0; i < plain_hashes.size(); ++i) CHECK(plain_hashes[i] != tls_hashes[i]);
}

}  // namespace shoal
