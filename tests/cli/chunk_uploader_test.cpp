// ChunkUploader: chunks go to a real folder origin from the bytes the
// hasher read, or read again (and checked) when they did not fit.
#include "cli/chunk_uploader.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "core/fake_http_server.h"
#include "shoal/file_origin.h"
#include "shoal/piece_hasher.h"
#include "shoal/s3_origin.h"
#include "support/subprocess.h"

using namespace shoal;
using shoal::testing::TempDir;

namespace {

constexpr uint32_t kPiece = 64 << 10;

// Hashes `file` and offers every piece to `up`; returns the chunk ids.
std::vector<ChunkId> HashInto(const std::string& file, ChunkUploader& up) {
  HashOptions opts;
  opts.piece_size = kPiece;
  opts.threads = 2;
  opts.on_piece = [&up](HashedPiece& p) { up.Offer(p); };
  auto hashes = HashFiles({file}, opts);
  REQUIRE(hashes.ok());
  return FileChunkIds((*hashes)[0]);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Uploads `ids` and waits for the uploader to go idle.
Status UploadAll(ChunkUploader& up, const std::vector<ChunkId>& ids) {
  up.Upload(ids);
  while (up.Busy()) up.TakeStored(std::chrono::milliseconds(50));
  return up.status();
}

}  // namespace

TEST_CASE("chunks kept from hashing are uploaded without reading the file again", "[uploader]") {
  TempDir dir;
  testing::WriteRandomFile(dir / "model.bin", 5 * kPiece + 100, 7);
  auto origin = NewFileOrigin(dir / "origin");
  REQUIRE(origin.ok());
  ChunkUploader up(**origin, 3, 64 << 20, ChunkUploader::WhenFull::kWait);
  std::vector<ChunkId> ids = HashInto(dir / "model.bin", up);
  REQUIRE(ids.size() == 6);
  CHECK(up.TakeOffered().size() == 6);
  CHECK(up.kept_bytes() == 5 * kPiece + 100);
  REQUIRE(UploadAll(up, ids).ok());
  CHECK(up.stats().uploaded_chunks == 6);
  CHECK(up.stats().reread_bytes == 0);
  CHECK(up.kept_bytes() == 0);
  const std::string file = ReadAll(dir / "model.bin");
  for (size_t i = 0; i < ids.size(); ++i) {
    CHECK(ReadAll(dir / ("origin/" + ChunkKey(ids[i]))) == file.substr(i * kPiece, kPiece));
  }
}

TEST_CASE("chunks past the memory limit are read again and checked first", "[uploader]") {
  TempDir dir;
  testing::WriteRandomFile(dir / "model.bin", 4 * kPiece, 8);
  auto origin = NewFileOrigin(dir / "origin");
  REQUIRE(origin.ok());
  // Room for one piece, and hashing does not wait for it.
  ChunkUploader up(**origin, 2, kPiece, ChunkUploader::WhenFull::kReadAgain);
  std::vector<ChunkId> ids = HashInto(dir / "model.bin", up);
  CHECK(up.kept_bytes() == kPiece);

  SECTION("unchanged: every chunk arrives, three read again") {
    REQUIRE(UploadAll(up, ids).ok());
    CHECK(up.stats().uploaded_chunks == 4);
    CHECK(up.stats().reread_bytes == 3 * kPiece);
  }
  SECTION("changed since hashing: the upload fails and names the file") {
    testing::WriteRandomFile(dir / "model.bin", 4 * kPiece, 9);
    Status s = UploadAll(up, ids);
    REQUIRE(s.IsCorruption());
    CHECK(s.ToString().find("model.bin changed since it was hashed") != std::string::npos);
  }
}

TEST_CASE("with room for one piece, hashing waits for the uploads and reads each byte once",
          "[uploader]") {
  TempDir dir;
  testing::WriteRandomFile(dir / "model.bin", 6 * kPiece, 11);
  auto origin = NewFileOrigin(dir / "origin");
  REQUIRE(origin.ok());
  ChunkUploader up(**origin, 2, kPiece, ChunkUploader::WhenFull::kWait);
  std::atomic<bool> hashed{false};
  std::vector<ChunkId> ids;
  std::thread hasher([&] {
    ids = HashInto(dir / "model.bin", up);
    hashed = true;
  });
  // What the publish's main thread does: queue what was offered, collect
  // what was stored.
  uint64_t most_kept = 0;
  size_t stored = 0;
  while (!hashed || up.Busy()) {
    up.Upload(up.TakeOffered());
    stored += up.TakeStored(std::chrono::milliseconds(20)).size();
    most_kept = std::max(most_kept, up.kept_bytes());
  }
  hasher.join();
  up.Upload(up.TakeOffered());
  while (up.Busy()) stored += up.TakeStored(std::chrono::milliseconds(20)).size();
  stored += up.TakeStored(std::chrono::milliseconds(0)).size();
  REQUIRE(up.status().ok());
  CHECK(stored == 6);
  CHECK(up.stats().uploaded_chunks == 6);
  CHECK(up.stats().reread_bytes == 0);
  CHECK(most_kept <= kPiece);
}

TEST_CASE("an aborted upload frees a hasher waiting for room", "[uploader]") {
  TempDir dir;
  testing::WriteRandomFile(dir / "model.bin", 4 * kPiece, 13);
  auto origin = NewFileOrigin(dir / "origin");
  REQUIRE(origin.ok());
  ChunkUploader up(**origin, 2, kPiece, ChunkUploader::WhenFull::kWait);
  // Nobody plans the pieces (the tracker is gone): the second one waits.
  std::thread hasher([&] { HashInto(dir / "model.bin", up); });
  while (up.kept_bytes() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  up.Abort(Status::Unavailable("tracker gone"));
  hasher.join();  // without the abort, for ever
  CHECK(up.status().ToString().find("tracker gone") != std::string::npos);
  CHECK(up.kept_bytes() == kPiece);  // nothing kept past the limit
}

TEST_CASE("released chunks free their memory, and unknown chunks are refused", "[uploader]") {
  TempDir dir;
  testing::WriteRandomFile(dir / "model.bin", 2 * kPiece, 10);
  auto origin = NewFileOrigin(dir / "origin");
  REQUIRE(origin.ok());
  ChunkUploader up(**origin, 2, 64 << 20, ChunkUploader::WhenFull::kWait);
  std::vector<ChunkId> ids = HashInto(dir / "model.bin", up);
  up.Release(ids);
  CHECK(up.kept_bytes() == 0);
  ChunkId stranger;
  stranger.mutable_data()[0] = 1;
  Status s = UploadAll(up, {stranger});
  REQUIRE(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.ToString().find("which this checkpoint does not have") != std::string::npos);
}

TEST_CASE("a PUT the origin answers with SlowDown narrows the upload window, then succeeds",
          "[uploader]") {
  TempDir dir;
  testing::WriteRandomFile(dir / "model.bin", kPiece, 12);
  auto reply = [](const std::string& status, const std::string& body) {
    return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
  };
  shoal_test::FakeHttpServer s3(
      {reply("404 Not Found", ""),
       reply("503 Slow Down", "<Error><Code>SlowDown</Code><Message>m</Message></Error>"),
       reply("200 OK", "")});
  OriginOptions o;
  o.url = "s3://bucket/p";
  o.endpoint = s3.endpoint();
  o.access_key = "AKID";
  o.secret_key = "secret";
  o.region = "us-east-1";
  o.backoff_base_ms = 10;
  o.backoff_max_ms = 50;
  auto origin = NewS3Origin(o);
  REQUIRE(origin.ok());
  ChunkUploader up(**origin, 4, 64 << 20, ChunkUploader::WhenFull::kWait);
  std::vector<ChunkId> ids = HashInto(dir / "model.bin", up);
  Status s = UploadAll(up, ids);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(up.stats().uploaded_chunks == 1);
  CHECK(up.stats().throttled == 1);
  CHECK(s3.requests().size() == 3);  // HEAD, the refused PUT, the PUT again
}

TEST_CASE("the upload window halves when throttled and grows back one at a time",
          "[uploader][policy]") {
  UploadWindow w(8);
  CHECK(w.size() == 8);
  w.OnThrottled();
  CHECK(w.size() == 4);
  w.OnThrottled();
  w.OnThrottled();
  w.OnThrottled();
  CHECK(w.size() == 1);  // never below one
  w.OnClean();
  CHECK(w.size() == 2);
  for (int i = 0; i < 2; ++i) w.OnClean();
  CHECK(w.size() == 3);
  for (int i = 0; i < 100; ++i) w.OnClean();
  CHECK(w.size() == 8);  // never above the parallelism
}
