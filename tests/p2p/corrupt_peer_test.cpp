// A seeder whose chunk files are damaged on disk while it runs, as in the
// agent test "a corrupt seeder is caught...": it must find the damage itself
// and stop offering those pieces rather than send bytes that fail the hash.
// With Debian's libtorrent 2.0.8 a v2 piece that fails on the receiving
// side can crash the receiver (see HashPiece in agent/p2p/chunk_piece_jobs.cpp;
// deploy/libtorrent/ patches it, and hostile_peer_test.cpp checks that), so
// no bad piece may leave a Shoal peer.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "p2p/p2p_test_support.h"

namespace shoal {
namespace testing {

namespace {

// Flips two bytes in the middle of the chunk's file, behind the store's back.
void DamageChunkFile(Agent& a, const ChunkId& id) {
  std::string hex = id.ToHex();
  std::string path =
      a.dir.path() + "/cache/chunks/" + hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex;
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  off_t size = ::lseek(fd, 0, SEEK_END);
  REQUIRE(size >= 2);
  const char junk[2] = {'\x5a', '\xa5'};
  REQUIRE(::pwrite(fd, junk, sizeof(junk), size / 2) == static_cast<ssize_t>(sizeof(junk)));
  ::close(fd);
}

// The seeder stores and seeds `f`, then every chunk file is damaged; the
// leecher, connected both ways as agents are, finds no good source and
// gets the chunks "from the origin" (store + ChunkArrived, as the pull job
// does).
void PullFromDamagedSeeder(const TestFile& f) {
  Agent bad, leecher;
  bad.Seed(f);
  FileTorrentId id = bad.Add(f);
  for (const ChunkId& c : f.chunks) DamageChunkFile(bad, c);
  leecher.Add(f);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", bad.port()).ok());
  REQUIRE(bad.engine->ConnectPeer(id, "127.0.0.1", leecher.port()).ok());

  // The seeder drops each damaged chunk when a peer first asks for it, and
  // stops advertising the piece.
  REQUIRE(Eventually([&] { return bad.store->Stats().corrupt_dropped > 0; }));
  REQUIRE(Eventually([&] { return bad.engine->Stats().evictions_applied > 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  for (uint64_t i = 0; i < f.chunks.size(); ++i) {
    if (leecher.store->Contains(f.chunks[i])) continue;
    REQUIRE(
        leecher.store->Put(f.chunks[i], f.data.data() + i * f.piece_size, f.PieceBytes(i)).ok());
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool complete = false;
  while (!complete && std::chrono::steady_clock::now() < deadline) {
    for (uint64_t i = 0; i < f.chunks.size(); ++i)
      REQUIRE(leecher.engine->ChunkArrived(id, i).ok());
    complete = leecher.WaitComplete(id, std::chrono::milliseconds(500));
  }
  REQUIRE(complete);
  CHECK(leecher.Materialized(f) == f.data);
  // No bad byte reached the leecher.
  CHECK(leecher.engine->Stats().hash_failures == 0);
  CHECK(leecher.engine->Stats().write_failures == 0);
}

}  // namespace

TEST_CASE("a seeder drops a single-piece chunk damaged on disk instead of serving it", "[p2p]") {
  // One piece: had a bad copy reached the leecher, libtorrent 2.0.8 would
  // dereference null on the first peer that rejected its block-hash request.
  PullFromDamagedSeeder(MakeFile(21, 40 * 1024 + 3, 1u << 20, "config.json"));
}

TEST_CASE("a seeder drops the damaged chunks of a large file instead of serving them", "[p2p]") {
  // 40 pieces of 256 KiB: the block indices of later pieces pass 512, where
  // libtorrent 2.0.8 would write past its bookkeeping on such a rejection.
  PullFromDamagedSeeder(MakeFile(22, 40 * 256 * 1024 + 5000, 256 * 1024));
}

}  // namespace testing
}  // namespace shoal
