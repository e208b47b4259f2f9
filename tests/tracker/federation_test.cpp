// The parts of a mirror (federation/) on real files: which audit entries a
// watch reports, a version's chunks and their sizes, copying chunks between
// two origins (and refusing bytes that are not the chunk), the pacer, the
// --follow settings' checks, the upstream signature, and the registry
// waking watches on each write.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/change_signal.h"
#include "common/tracker_metrics.h"
#include "common/tracker_options.h"
#include "federation/chunk_copy.h"
#include "federation/registry_watch.h"
#include "registry/registry_store.h"
#include "shoal/file_origin.h"
#include "shoal/manifest_builder.h"
#include "shoal/manifest_codec.h"
#include "shoal/manifest_signer.h"
#include "shoal/origin.h"
#include "support/subprocess.h"
#include "tracker/registry_test_data.h"

namespace shoal::tracker {
namespace {

AuditEntry Entry(uint64_t seq, const std::string& action, const std::string& target) {
  return AuditEntry{seq, 1000 + static_cast<int64_t>(seq), "ci", "t1", action, target, ""};
}

// A manifest of `dir` with 64 KiB pieces: a file of 3.5 pieces, the same
// bytes again under another name, and a small one.
Manifest Checkpoint(const std::string& dir) {
  shoal::testing::WriteRandomFile(dir + "/a.bin", 3 * 65536 + 32768, 1);
  std::filesystem::copy_file(dir + "/a.bin", dir + "/b.bin");
  shoal::testing::WriteRandomFile(dir + "/c.json", 900, 2);
  BuildOptions o;
  o.hash.piece_size = 65536;
  o.ns = "team-a";
  o.name = "llama";
  o.created_by = "ci";
  return BuildManifest(dir, o).value();
}

// Puts every chunk of `m`, read from `dir`, into `origin`.
void PutChunks(const Manifest& m, const std::string& dir, Origin& origin) {
  for (const FileEntry& f : m.files) {
    std::ifstream in(dir + "/" + f.path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<ChunkId> ids = f.ChunkIds();
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t at = i * m.piece_size;
      const size_t n = std::min<size_t>(m.piece_size, bytes.size() - at);
      REQUIRE(
          PutChunkIfAbsent(origin, ids[i], reinterpret_cast<const uint8_t*>(bytes.data() + at), n)
              .ok());
    }
  }
}

}  // namespace

TEST_CASE("a watch reports changes to versions and tags of the namespaces asked", "[federation]") {
  const std::vector<AuditEntry> log = {
      Entry(1, "publish", "team-a/llama:00ff"),   Entry(2, "tag", "team-a/llama:prod"),
      Entry(3, "publish", "team-b/llama:00ff"),   Entry(4, "gc", "chunks"),
      Entry(5, "warm", "team-a/llama:00ff"),      Entry(6, "durable", "team-a/mistral:0a"),
      Entry(7, "delete", "team-a/llama:00ff"),    Entry(8, "publish", "no-slash"),
      Entry(9, "retention", "team-a/old:01"),     Entry(10, "token-revoke", "team-a/x:y"),
      Entry(11, "publish-failed", "team-a/x:0b"), Entry(12, "tag", "team-a/:latest"),
  };
  const std::vector<ModelEventRecord> events = ModelEventsOf(log, {"team-a"});
  std::vector<std::string> seen;
  for (const auto& e : events)
    seen.push_back(std::to_string(e.seq) + " " + e.action + " " + e.name);
  CHECK(seen == std::vector<std::string>{"1 publish llama", "2 tag llama", "6 durable mistral",
                                         "7 delete llama", "9 retention old",
                                         "11 publish-failed x"});
  CHECK(events[0].ns == "team-a");
  CHECK(events[0].at_ms == 1001);
  CHECK(ModelEventsOf(log, {"team-c"}).empty());
  CHECK(ModelEventsOf(log, {"team-a", "team-b"}).size() == 7);
}

TEST_CASE("a version's chunks are listed once each, with their sizes", "[federation]") {
  shoal::testing::TempDir tmp;
  const Manifest m = Checkpoint(tmp.path());
  const std::vector<ChunkRef> chunks = ChunksOf(m);
  // a.bin and b.bin share their 4 chunks; c.json is one more.
  REQUIRE(chunks.size() == 5);
  uint64_t total = 0;
  for (const ChunkRef& c : chunks) total += c.size;
  CHECK(total == 3 * 65536 + 32768 + 900);
  std::set<uint64_t> sizes;
  for (const ChunkRef& c : chunks) sizes.insert(c.size);
  CHECK(sizes == std::set<uint64_t>{900, 32768, 65536});
}

TEST_CASE("chunks are copied between origins, checked, indexed, and bad bytes are refused",
          "[federation]") {
  shoal::testing::TempDir tmp;
  std::filesystem::create_directories(tmp / "ckpt");
  const Manifest m = Checkpoint(tmp / "ckpt");
  auto from = NewFileOrigin(tmp / "up").value();
  auto to = NewFileOrigin(tmp / "here").value();
  PutChunks(m, tmp / "ckpt", *from);
  auto store = RegistryStore::Open(tmp / "registry").value();
  TrackerMetrics metrics;
  CopyPacer pacer(0);
  ChunkCopyDeps deps{*store, *from, *to, pacer, metrics, 3};
  std::atomic<bool> stop{false};
  const std::vector<ChunkRef> chunks = ChunksOf(m);

  SECTION("good bytes land and are indexed") {
    std::atomic<uint64_t> left{3 * 65536 + 32768 + 900};
    REQUIRE(CopyChunks(deps, chunks, stop, &left).ok());
    CHECK(left == 0);
    CHECK(metrics.follow_chunks_copied == 5);
    CHECK(metrics.follow_bytes_copied == 3 * 65536 + 32768 + 900);
    for (const ChunkRef& c : chunks) {
      CHECK(store->HasChunk(c.id).value());
      CHECK(to->Head(ChunkKey(c.id)).value().size == c.size);
    }
  }
  SECTION("a chunk upstream that is not its ID is refused and not stored") {
    const ChunkRef& bad = chunks[1];
    std::string other(bad.size, 'x');
    REQUIRE(
        from->Put(ChunkKey(bad.id), reinterpret_cast<const uint8_t*>(other.data()), other.size())
            .ok());
    Status s = CopyChunks(deps, {bad}, stop);
    CHECK(s.code() == Status::Code::kCorruption);
    CHECK_THAT(s.message(), Catch::Contains(bad.id.ToHex()));
    CHECK_THAT(s.message(), Catch::Contains("not copied"));
    CHECK(metrics.follow_chunks_refused == 1);
    CHECK(to->Head(ChunkKey(bad.id)).status().IsNotFound());
    CHECK(!store->HasChunk(bad.id).value());
  }
  SECTION("a chunk missing upstream fails the copy, naming it") {
    REQUIRE(from->Delete(ChunkKey(chunks[0].id)).ok());
    Status s = CopyChunks(deps, chunks, stop);
    CHECK(s.IsNotFound());
    CHECK_THAT(s.message(), Catch::Contains(chunks[0].id.ToHex()));
  }
  SECTION("a stopping mirror copies nothing more") {
    stop = true;
    CHECK(!CopyChunks(deps, chunks, stop).ok());
    CHECK(metrics.follow_chunks_copied == 0);
  }
}

TEST_CASE("the copy pacer spreads bytes over time", "[federation]") {
  CopyPacer unlimited(0);
  const auto t0 = std::chrono::steady_clock::now();
  unlimited.Take(1ull << 40);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  // 1 MB a second: the first 500 KB go at once, the next wait for them.
  CopyPacer paced(1000000);
  const auto t1 = std::chrono::steady_clock::now();
  paced.Take(500000);
  paced.Take(500000);
  CHECK(std::chrono::steady_clock::now() - t1 >= std::chrono::milliseconds(450));
}

TEST_CASE("a mirror's settings (follow) are checked", "[federation]") {
  FollowOptions o;
  CHECK(o.Validate().ok());  // no mirror
  CHECK(!o.Mirrors("team-a"));
  o.namespaces = {"team-a"};
  CHECK_THAT(o.Validate().message(), Catch::Contains("--follow-ns needs --follow"));
  o.upstream = "10.0.0.1:7400";
  CHECK_THAT(o.Validate().message(), Catch::Contains("read token"));
  o.token = "t";
  CHECK_THAT(o.Validate().message(), Catch::Contains("--follow-origin"));
  o.origin.url = "file:///tmp/up";
  CHECK(o.Validate().ok());
  CHECK(o.Mirrors("team-a"));
  CHECK(!o.Mirrors("team-b"));
  o.namespaces = {"*"};
  CHECK(!o.Validate().ok());
  o.namespaces = {"../x"};
  CHECK(!o.Validate().ok());
  o.namespaces = {"team-a"};
  o.parallelism = 0;
  CHECK_THAT(o.Validate().message(), Catch::Contains("--follow-parallelism"));
  o.parallelism = 4;
  o.wait_ms = 10;
  CHECK_THAT(o.Validate().message(), Catch::Contains("--follow-wait"));
}

TEST_CASE("an upstream signature verifies only with its own key and version", "[federation]") {
  shoal::testing::TempDir tmp;
  auto up = ManifestSigner::LoadOrCreate(tmp / "up.key").value();
  auto other = ManifestSigner::LoadOrCreate(tmp / "other.key").value();
  const VersionId id = ComputeVersionId("a manifest");
  UpstreamSignature u{"tracker.us:7400", up->Sign(id), up->key_id(), up->public_key(), 5};
  CHECK(u.Verify(id).ok());
  CHECK(u.Verify(ComputeVersionId("another")).code() == Status::Code::kCorruption);
  UpstreamSignature swapped = u;
  swapped.public_key = other->public_key();  // the key ID no longer names it
  CHECK_THAT(swapped.Verify(id).message(), Catch::Contains("names key"));
  swapped.signer_key_id = other->key_id();  // consistent, but not the key that signed
  CHECK(swapped.Verify(id).code() == Status::Code::kCorruption);
}

TEST_CASE("the registry keeps a mirrored version's upstream signature and wakes watches",
          "[federation]") {
  shoal::testing::TempDir tmp;
  auto store = RegistryStore::Open(tmp / "registry").value();
  ChangeSignal changes;
  store->SetChangeSignal(&changes);
  CHECK(store->AuditEnd().value() == 0);
  const uint64_t before = changes.generation();

  const Manifest m = testdata::SomeManifest(2, 1000);
  StoredVersion v = testdata::Stored(m);
  v.upstream = UpstreamSignature{"tracker.us:7400", std::string(64, 'u'), "abcd", "k", 7};
  REQUIRE(store->CommitVersion(m, v, {"latest"}, testdata::By("mirror")).value());
  CHECK(changes.generation() > before);
  CHECK(store->AuditEnd().value() == 1);
  const StoredVersion got = store->GetVersion("team-a", "llama", v.id).value();
  CHECK(got.upstream.tracker == "tracker.us:7400");
  CHECK(got.upstream.signature == std::string(64, 'u'));
  CHECK(got.upstream.signer_key_id == "abcd");
  CHECK(got.upstream.public_key == "k");
  CHECK(got.upstream.copied_at_ms == 7);
  store->SetChangeSignal(nullptr);
}

}  // namespace shoal::tracker
