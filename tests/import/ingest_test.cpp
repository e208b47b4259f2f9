// The streaming hasher reads each file once, in parallel ranges, and
// computes exactly what the folder hasher (HashFiles) computes, plus each
// file's SHA-256; it refuses a file whose size or SHA-256 disagrees with
// what its source declared.
#include <catch2/catch.hpp>
#include <mutex>
#include <set>

#include "import/file_ingest.h"
#include "import/import_source.h"
#include "shoal/origin.h"
#include "shoal/sha256.h"
#include "support/subprocess.h"

using namespace shoal;
using shoal::testing::ProcessResult;
using shoal::testing::TempDir;
using shoal::testing::WriteRandomFile;

namespace {

constexpr uint32_t kPiece = 64 << 10;

std::unique_ptr<ImportSource> FolderSource(const std::string& dir) {
  ImportSourceOptions o;
  auto s = OpenImportSource("file://" + dir, o);
  REQUIRE(s.ok());
  return std::move(s).value();
}

std::string Bytes(const std::string& path) {
  auto f = FileSource::Open(path);
  REQUIRE(f.ok());
  std::string out((*f)->size(), '\0');
  auto n = ReadFull(**f, reinterpret_cast<uint8_t*>(out.data()), out.size());
  REQUIRE(n.ok());
  return out;
}

std::string Md5Hex(const std::string& path) {
  ProcessResult r = shoal::testing::RunProcess({"/usr/bin/md5sum", path});
  REQUIRE(r.exit_code == 0);
  return r.out.substr(0, 32);
}

}  // namespace

TEST_CASE("streamed hashes equal the folder hasher's, at every size and parallelism", "[ingest]") {
  TempDir dir;
  const std::vector<size_t> sizes = {
      0, 1, kPiece - 1, kPiece, kPiece + 1, 5 * kPiece + 777, 16 << 10, 3 * kPiece};
  for (size_t i = 0; i < sizes.size(); ++i) {
    WriteRandomFile(dir / ("f" + std::to_string(i)), sizes[i], static_cast<unsigned>(i + 1));
  }
  auto source = FolderSource(dir.path());
  auto listing = source->List();
  REQUIRE(listing.ok());
  REQUIRE(listing->files.size() == sizes.size());
  std::vector<std::string> paths;
  for (const SourceFile& f : listing->files) paths.push_back(dir / f.path);
  HashOptions ho;
  ho.piece_size = kPiece;
  auto expected = HashFiles(paths, ho);
  REQUIRE(expected.ok());

  for (int parallel : {1, 3, 8}) {
    for (bool ranges : {true, false}) {
      std::vector<SourceFile> files = listing->files;
      for (SourceFile& f : files) {
        f.ranges = ranges;
        f.md5_hex = Md5Hex(dir / f.path);  // the right one: checked and passed
      }
      std::mutex mu;
      std::set<std::pair<std::string, uint64_t>> pieces;
      uint64_t piece_bytes = 0;
      IngestOptions o;
      o.piece_size = kPiece;
      o.parallel = parallel;
      o.on_piece = [&](HashedPiece& p) {
        std::lock_guard<std::mutex> lock(mu);
        CHECK(pieces.insert({*p.path, p.offset}).second);  // each piece once
        piece_bytes += p.bytes->size();
      };
      auto got = IngestFiles(*source, files, o);
      INFO("parallel " << parallel << " ranges " << ranges);
      REQUIRE(got.ok());
      uint64_t total = 0;
      for (size_t i = 0; i < files.size(); ++i) {
        INFO(files[i].path);
        const FileHashes& e = (*expected)[i];
        CHECK((*got)[i].hashes.size == e.size);
        CHECK((*got)[i].hashes.pieces_root == e.pieces_root);
        CHECK((*got)[i].hashes.piece_layer == e.piece_layer);
        const std::string bytes = Bytes(paths[i]);
        CHECK((*got)[i].sha256 == Sha256::Of(bytes.data(), bytes.size()));
        total += e.size;
      }
      CHECK(piece_bytes == total);
    }
  }
}

TEST_CASE("a declared size or SHA-256 that the bytes disagree with fails the ingest", "[ingest]") {
  TempDir dir;
  WriteRandomFile(dir / "a.bin", 3 * kPiece + 5, 7);
  auto source = FolderSource(dir.path());
  auto listing = source->List();
  REQUIRE(listing.ok());
  IngestOptions o;
  o.piece_size = kPiece;

  std::vector<SourceFile> wrong_sha = listing->files;
  wrong_sha[0].sha256 = Sha256::Of("x", 1);
  auto r = IngestFiles(*source, wrong_sha, o);
  REQUIRE(!r.ok());
  CHECK(r.status().IsCorruption());
  CHECK_THAT(r.status().ToString(), Catch::Contains("'a.bin'") && Catch::Contains("SHA-256"));

  // A declared MD5 (an S3 ETag) is checked too.
  std::vector<SourceFile> wrong_md5 = listing->files;
  wrong_md5[0].md5_hex = std::string(32, '0');
  r = IngestFiles(*source, wrong_md5, o);
  REQUIRE(!r.ok());
  CHECK_THAT(r.status().ToString(), Catch::Contains("MD5"));

  // Declared longer than it is: read by range, the source refuses the last range.
  std::vector<SourceFile> longer = listing->files;
  longer[0].size += kPiece;
  r = IngestFiles(*source, longer, o);
  REQUIRE(!r.ok());
  CHECK_THAT(r.status().ToString(), Catch::Contains("a.bin"));

  // Declared shorter, read as one stream: more bytes than declared.
  std::vector<SourceFile> shorter = listing->files;
  shorter[0].size -= 10;
  shorter[0].ranges = false;
  r = IngestFiles(*source, shorter, o);
  REQUIRE(!r.ok());
  CHECK_THAT(r.status().ToString(), Catch::Contains("more bytes than"));
}
