// Several agents on loopback: pieces already held, bad data from a peer,
// chunks that arrive by another route, and chunks that leave the store.
#include <catch2/catch.hpp>

#include "p2p/p2p_test_support.h"

namespace shoal {
namespace testing {

namespace {

uint64_t Have(Agent& a, const FileTorrentId& id) {
  auto p = a.engine->Progress(id);
  return p.ok() ? p->have_pieces : 0;
}

}  // namespace

TEST_CASE("pieces the leecher's store already holds are never downloaded", "[p2p]") {
  TestFile f = MakeFile(11, (10u << 18) + 12345, 256 * 1024);  // 11 pieces
  Agent seeder, leecher;
  seeder.Seed(f);
  seeder.Add(f);
  leecher.Seed(f, 0, 6);
  FileTorrentId id = leecher.Add(f);
  REQUIRE(Have(leecher, id) == 6);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(id));
  auto p = leecher.engine->Progress(id);
  REQUIRE(p.ok());
  CHECK(p->bytes_from_peers == f.WireBytes(6));
  CHECK(leecher.engine->Stats().pieces_committed == f.chunks.size() - 6);
  CHECK(leecher.Materialized(f) == f.data);
}

TEST_CASE("after an engine restart a download resumes from the chunks in the store", "[p2p]") {
  TestFile f = MakeFile(16, 8 * 256 * 1024 + 100, 256 * 1024);  // 9 pieces
  Agent partial, full, leecher;
  partial.Seed(f, 0, 5);
  full.Seed(f);
  FileTorrentId id = partial.Add(f);
  full.Add(f);
  leecher.Add(f);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", partial.port()).ok());
  REQUIRE(Eventually([&] { return Have(leecher, id) == 5; }));

  // The daemon restarts: a new engine over the same store.
  leecher.relay->Detach();
  leecher.engine.reset();
  auto restarted = TorrentEngine::Start(EngineOptions(), *leecher.store);
  REQUIRE(restarted.ok());
  leecher.engine = std::move(*restarted);
  leecher.relay->Attach(leecher.engine.get());
  CHECK(leecher.Add(f) == id);
  CHECK(Have(leecher, id) == 5);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", full.port()).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.engine->Progress(id)->bytes_from_peers == f.WireBytes(5));
  CHECK(leecher.Materialized(f) == f.data);
}

TEST_CASE("a peer serving a corrupt chunk is caught and the file completes from a good one",
          "[p2p]") {
  TestFile f = MakeFile(12, 6 * 256 * 1024, 256 * 1024);
  Agent bad, good, leecher;
  // Piece 3 of 6: the block-hash request libtorrent 2.0.8 sends after the
  // failure stays within its bookkeeping when a peer rejects it (see
  // HashPiece in agent/p2p/chunk_piece_jobs.cpp).
  bad.SeedDamaged(f, 3);
  bad.Seed(f);  // the other pieces; the damaged one is kept
  good.Seed(f);
  bad.Add(f);
  good.Add(f);
  FileTorrentId id = leecher.Add(f);

  // Only the bad peer first: every piece but one arrives, piece 3 fails.
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", bad.port()).ok());
  REQUIRE(Eventually([&] { return leecher.engine->Stats().hash_failures > 0; }));
  CHECK_FALSE(leecher.store->Contains(f.chunks[3]));
  REQUIRE(Eventually([&] { return leecher.engine->Stats().peers_banned > 0; }));

  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", good.port()).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.Materialized(f) == f.data);
  for (const ChunkId& c : f.chunks) CHECK(leecher.store->Verify(c).ok());
  CHECK(leecher.store->Stats().chunks == f.chunks.size());
}

TEST_CASE("a chunk that arrives by another route is seeded to other peers", "[p2p]") {
  TestFile f = MakeFile(13, 5 * 256 * 1024 + 999, 256 * 1024);  // 6 pieces
  Agent middle, third;
  FileTorrentId id = middle.Add(f);
  CHECK(Have(middle, id) == 0);
  // As if fetched from the origin.
  REQUIRE(middle.store->Put(f.chunks[4], f.data.data() + 4 * f.piece_size, f.PieceBytes(4)).ok());
  REQUIRE(middle.engine->ChunkArrived(id, 4).ok());
  REQUIRE(Eventually([&] { return Have(middle, id) == 1; }));
  CHECK(middle.engine->Stats().pieces_committed == 0);  // nothing was written twice

  third.Add(f);
  REQUIRE(third.engine->ConnectPeer(id, "127.0.0.1", middle.port()).ok());
  REQUIRE(Eventually([&] { return third.store->Contains(f.chunks[4]); }));
  CHECK(Have(third, id) == 1);
  // Every other piece is one no connected peer has: the origin's to fetch.
  auto missing = third.engine->UnavailablePieces(id);
  REQUIRE(missing.ok());
  CHECK(*missing == std::vector<uint64_t>{0, 1, 2, 3, 5});

  CHECK(middle.engine->ChunkArrived(id, 2).IsUnavailable());  // not in the store: fetch it again
  CHECK(middle.engine->ChunkArrived(id, 6).code() == Status::Code::kInvalidArgument);
}

TEST_CASE("a seeder stops advertising a piece whose chunk was evicted", "[p2p]") {
  TestFile f = MakeFile(14, 8 * 256 * 1024, 256 * 1024);
  Agent seeder, leecher;
  seeder.Seed(f);
  FileTorrentId id = seeder.Add(f);
  REQUIRE(Have(seeder, id) == 8);
  REQUIRE(seeder.store->Evict(f.chunks[5]).ok());
  REQUIRE(Eventually([&] { return Have(seeder, id) == 7; }));
  CHECK(seeder.engine->Stats().evictions_applied == 1);

  leecher.Add(f);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(Eventually([&] { return Have(leecher, id) == 7; }));
  auto missing = leecher.engine->UnavailablePieces(id);
  REQUIRE(missing.ok());
  CHECK(*missing == std::vector<uint64_t>{5});
  CHECK(seeder.engine->Stats().read_failures == 0);

  // The origin's copy completes the file.
  REQUIRE(leecher.store->Put(f.chunks[5], f.data.data() + 5 * f.piece_size, f.PieceBytes(5)).ok());
  REQUIRE(leecher.engine->ChunkArrived(id, 5).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.Materialized(f) == f.data);
}

TEST_CASE("a read of a chunk evicted behind the engine's back fails without stopping the torrent",
          "[p2p]") {
  TestFile f = MakeFile(15, 6 * 256 * 1024, 256 * 1024);
  // The seeder learns of evictions only after a minute: until then it still
  // advertises the piece, and the read must fail rather than serve garbage.
  Agent seeder(1ull << 30, 60000), leecher;
  seeder.Seed(f);
  FileTorrentId id = seeder.Add(f);
  REQUIRE(seeder.store->Evict(f.chunks[2]).ok());
  CHECK(Have(seeder, id) == 6);

  leecher.Add(f);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(Eventually([&] { return Have(leecher, id) == 5; }));
  REQUIRE(Eventually([&] { return seeder.engine->Stats().read_failures > 0; }));
  CHECK_FALSE(leecher.store->Contains(f.chunks[2]));
  CHECK(leecher.engine->Stats().hash_failures == 0);
  // Both torrents are still running: the seeder keeps serving, and after the
  // failed read it stops advertising the piece on its own.
  CHECK(seeder.engine->Progress(id).ok());
  REQUIRE(Eventually([&] { return Have(seeder, id) == 5; }));
  REQUIRE(leecher.store->Put(f.chunks[2], f.data.data() + 2 * f.piece_size, f.PieceBytes(2)).ok());
  REQUIRE(leecher.engine->ChunkArrived(id, 2).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.Materialized(f) == f.data);
}

}  // namespace testing
}  // namespace shoal
