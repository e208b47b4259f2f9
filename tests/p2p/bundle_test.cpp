// A version's small files share one torrent: its info-hash is canonical,
// libtorrent loads it with one piece per distinct file, and it moves files
// between agents without fetching what the store already holds.
#include <algorithm>
#include <catch2/catch.hpp>

#include "p2p/bundle_metainfo.h"
#include "p2p/p2p_test_support.h"

namespace shoal {
namespace testing {

namespace {

constexpr uint32_t kPiece = 1u << 20;

// Small files of assorted sizes: tiny, one block, a few blocks, and exactly
// one piece.
std::vector<TestFile> SmallFiles() {
  std::vector<TestFile> files;
  const size_t sizes[] = {14, 1, 16384, 40 * 1024 + 3, 300000, kPiece};
  uint64_t seed = 100;
  for (size_t size : sizes) {
    files.push_back(MakeFile(seed, size, kPiece, "dir/f" + std::to_string(seed) + ".json"));
    ++seed;
  }
  return files;
}

std::vector<const FileEntry*> Entries(const std::vector<TestFile>& files) {
  std::vector<const FileEntry*> out;
  for (const TestFile& f : files) out.push_back(&f.entry);
  return out;
}

}  // namespace

TEST_CASE("a bundle's info-hash depends only on its set of distinct small files", "[p2p][bundle]") {
  std::vector<TestFile> files = SmallFiles();
  auto forward = BuildBundleMetainfo(Entries(files), kPiece, "");
  REQUIRE(forward.ok());

  // Another order, another path for one file, and one file twice.
  std::vector<TestFile> shuffled = files;
  std::reverse(shuffled.begin(), shuffled.end());
  std::swap(shuffled[1], shuffled[3]);
  shuffled[0].entry.path = "elsewhere/renamed.json";
  shuffled.push_back(files[2]);
  auto other = BuildBundleMetainfo(Entries(shuffled), kPiece, "");
  REQUIRE(other.ok());
  CHECK(other->id == forward->id);
  CHECK(other->info == forward->info);

  // One piece per distinct file, in the order of their pieces roots, each
  // as long as its file.
  REQUIRE(forward->chunks.size() == files.size());
  std::vector<std::pair<ChunkId, uint64_t>> expected;
  for (const TestFile& f : files) expected.push_back({f.chunks[0], f.data.size()});
  std::sort(expected.begin(), expected.end());
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(forward->chunks[i] == expected[i].first);
    CHECK(forward->piece_bytes[i] == expected[i].second);
  }

  // A different set is another torrent. The piece length follows the
  // files, not the version: the smallest power of two that holds the
  // largest file, at least one 16 KiB block.
  std::vector<TestFile> fewer(files.begin(), files.end() - 1);
  auto less = BuildBundleMetainfo(Entries(fewer), kPiece, "");
  REQUIRE(less.ok());
  CHECK(less->id != forward->id);
  CHECK(forward->piece_size == kPiece);
  CHECK(less->piece_size == 512 * 1024);  // 300,000 bytes is the largest left
  auto bigger = BuildBundleMetainfo(Entries(files), 2 * kPiece, "");
  REQUIRE(bigger.ok());
  CHECK(bigger->id == forward->id);
  std::vector<TestFile> tiny(files.begin(), files.begin() + 2);  // 14 and 1 bytes
  auto blocks = BuildBundleMetainfo(Entries(tiny), kPiece, "");
  REQUIRE(blocks.ok());
  CHECK(blocks->piece_size == 16 * 1024);
}

TEST_CASE("a bundle refuses a file larger than one piece", "[p2p][bundle]") {
  TestFile big = MakeFile(7, kPiece + 1, kPiece, "weights.bin");
  std::vector<const FileEntry*> files = {&big.entry};
  auto m = BuildBundleMetainfo(files, kPiece, "");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == Status::Code::kInvalidArgument);
  CHECK(m.status().message().find("weights.bin") != std::string::npos);
}

TEST_CASE("libtorrent loads a bundle with one piece per distinct file", "[p2p][bundle]") {
  std::vector<TestFile> files = SmallFiles();
  Agent agent;
  auto b = agent.engine->AddBundle(Entries(files), kPiece, "");
  REQUIRE(b.ok());
  auto p = agent.engine->Progress(b->id);
  REQUIRE(p.ok());
  CHECK(p->total_pieces == files.size());
  CHECK(p->have_pieces == 0);
  CHECK(agent.engine->Stats().torrents == 1);
}

TEST_CASE("a bundle moves small files between agents and never fetches a piece the store holds",
          "[p2p][bundle]") {
  std::vector<TestFile> files = SmallFiles();
  Agent seeder, leecher;
  for (const TestFile& f : files) seeder.Seed(f);
  auto sb = seeder.engine->AddBundle(Entries(files), kPiece, "");
  REQUIRE(sb.ok());
  auto sp = seeder.engine->Progress(sb->id);
  REQUIRE(sp.ok());
  CHECK(sp->complete);

  // The leecher holds two of the files already (from another torrent).
  leecher.Seed(files[0]);
  leecher.Seed(files[4]);
  auto lb = leecher.engine->AddBundle(Entries(files), kPiece, "");
  REQUIRE(lb.ok());
  CHECK(lb->id == sb->id);
  auto before = leecher.engine->Progress(lb->id);
  REQUIRE(before.ok());
  CHECK(before->have_pieces == 2);

  REQUIRE(leecher.engine->ConnectPeer(lb->id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(lb->id));
  for (const TestFile& f : files) {
    CHECK(leecher.store->Contains(f.chunks[0]));
    CHECK(leecher.Materialized(f) == f.data);
  }
  // Only the missing files crossed the wire, each in whole 16 KiB blocks.
  uint64_t wire = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i != 0 && i != 4) wire += files[i].WireBytes();
  }
  auto after = leecher.engine->Progress(lb->id);
  REQUIRE(after.ok());
  CHECK(after->bytes_from_peers == wire);
  EngineStats ls = leecher.engine->Stats();
  CHECK(ls.pieces_committed == files.size() - 2);
  CHECK(ls.hash_failures == 0);
}

TEST_CASE("a chunk that arrives by another route is taken by the bundle holding it",
          "[p2p][bundle]") {
  std::vector<TestFile> files = SmallFiles();
  Agent agent;
  auto b = agent.engine->AddBundle(Entries(files), kPiece, "");
  REQUIRE(b.ok());
  // File 3 arrives from elsewhere (the origin, or its own torrent).
  agent.Seed(files[3]);
  auto at = std::find(b->chunks.begin(), b->chunks.end(), files[3].chunks[0]);
  REQUIRE(at != b->chunks.end());
  REQUIRE(agent.engine->ChunkArrived(b->id, static_cast<uint64_t>(at - b->chunks.begin())).ok());
  CHECK(Eventually([&] {
    auto p = agent.engine->Progress(b->id);
    return p.ok() && p->have_pieces == 1;
  }));
}

}  // namespace testing
}  // namespace shoal
