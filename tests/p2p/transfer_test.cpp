// Two agents on loopback: one seeds from its chunk store, the other downloads
// through libtorrent into its own store.
#include <catch2/catch.hpp>

#include "p2p/p2p_test_support.h"
#include "p2p/torrent_metainfo.h"

namespace shoal {
namespace testing {

TEST_CASE("a leecher downloads a multi-piece file with a tail piece from a seeder", "[p2p]") {
  // 3 MiB + 100 KiB at 256 KiB pieces: 13 pieces, the last one short and
  // not a whole number of blocks.
  TestFile f = MakeFile(1, (3u << 20) + 100 * 1024 + 17, 256 * 1024);
  REQUIRE(f.chunks.size() == 13);
  Agent seeder, leecher;
  seeder.Seed(f);
  FileTorrentId sid = seeder.Add(f);
  auto sp = seeder.engine->Progress(sid);
  REQUIRE(sp.ok());
  CHECK(sp->complete);

  FileTorrentId lid = leecher.Add(f);
  CHECK(lid == sid);
  auto before = leecher.engine->Progress(lid);
  REQUIRE(before.ok());
  CHECK(before->have_pieces == 0);
  REQUIRE(leecher.engine->ConnectPeer(lid, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(lid));

  for (const ChunkId& c : f.chunks) CHECK(leecher.store->Contains(c));
  CHECK(leecher.Materialized(f) == f.data);
  auto after = leecher.engine->Progress(lid);
  REQUIRE(after.ok());
  CHECK(after->bytes_from_peers == f.WireBytes());
  EngineStats ls = leecher.engine->Stats();
  CHECK(ls.pieces_committed == f.chunks.size());
  CHECK(ls.hash_failures == 0);
  CHECK(ls.torrents == 1);
}

TEST_CASE("a file smaller than one piece moves as its single chunk", "[p2p]") {
  // 40 KiB + 3 bytes at 1 MiB pieces: no piece layer, the chunk is named by
  // the pieces root.
  TestFile f = MakeFile(2, 40 * 1024 + 3, 1u << 20, "config.json");
  REQUIRE(f.entry.piece_layer.empty());
  REQUIRE(f.chunks.size() == 1);
  REQUIRE(f.chunks[0] == ChunkId::From(f.entry.pieces_root));
  Agent seeder, leecher;
  seeder.Seed(f);
  seeder.Add(f);
  FileTorrentId id = leecher.Add(f);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.Materialized(f) == f.data);
}

TEST_CASE("a torrent's info-hash depends only on the file's content and the piece size", "[p2p]") {
  TestFile a = MakeFile(3, 700 * 1024, 256 * 1024, "model-a/weights.bin");
  TestFile b = MakeFile(3, 700 * 1024, 256 * 1024, "other/model-b/renamed.bin");
  b.entry.mode = 0600;
  auto ma = BuildTorrentMetainfo(a.entry, a.piece_size, "");
  auto mb = BuildTorrentMetainfo(b.entry, b.piece_size, "");
  REQUIRE(ma.ok());
  REQUIRE(mb.ok());
  CHECK(ma->id == mb->id);
  CHECK(ma->info == mb->info);
  auto other_size = BuildTorrentMetainfo(a.entry, 512 * 1024, "");
  CHECK(!other_size.ok());  // the piece layer does not fit another piece size
  TestFile c = MakeFile(4, 700 * 1024, 256 * 1024);
  CHECK(BuildTorrentMetainfo(c.entry, c.piece_size, "")->id != ma->id);
}

TEST_CASE("identical files in two models share one torrent and one set of chunks", "[p2p]") {
  TestFile a = MakeFile(5, (1u << 20) + 5000, 256 * 1024, "llama-a/shard-0.bin");
  TestFile b = MakeFile(5, (1u << 20) + 5000, 256 * 1024, "llama-b/shard-0.bin");
  Agent seeder, leecher;
  seeder.Seed(a);
  seeder.Add(a);
  FileTorrentId ia = leecher.Add(a);
  FileTorrentId ib = leecher.Add(b);
  CHECK(ia == ib);
  CHECK(leecher.engine->Stats().torrents == 1);
  REQUIRE(leecher.engine->ConnectPeer(ia, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(ib));
  CHECK(leecher.store->Stats().chunks == a.chunks.size());
  CHECK(leecher.Materialized(b) == b.data);
}

TEST_CASE("a bad file entry is refused with a clear error", "[p2p]") {
  Agent agent;
  TestFile f = MakeFile(6, 600 * 1024, 256 * 1024);
  FileEntry empty;
  empty.path = "empty";
  auto r = agent.engine->AddFile(empty, 256 * 1024, "");
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
  FileEntry cut = f.entry;
  cut.piece_layer.pop_back();
  r = agent.engine->AddFile(cut, 256 * 1024, "");
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
  CHECK(agent.engine->Progress(FileTorrentId()).status().IsNotFound());
}

TEST_CASE("a removed torrent can be added again and a stopped engine refuses calls", "[p2p]") {
  TestFile f = MakeFile(7, 3 * 256 * 1024, 256 * 1024);
  Agent seeder, leecher;
  seeder.Seed(f);
  FileTorrentId id = seeder.Add(f);
  REQUIRE(seeder.engine->Remove(id).ok());
  CHECK(seeder.engine->Stats().torrents == 0);
  CHECK(seeder.engine->Progress(id).status().IsNotFound());
  CHECK(seeder.engine->Remove(id).IsNotFound());
  for (const ChunkId& c : f.chunks) CHECK(seeder.store->Contains(c));  // chunks stay

  CHECK(seeder.Add(f) == id);
  leecher.Add(f);
  REQUIRE(leecher.engine->ConnectPeer(id, "127.0.0.1", seeder.port()).ok());
  REQUIRE(leecher.WaitComplete(id));
  CHECK(leecher.engine->ConnectPeer(id, "not-an-ip", 1).code() == Status::Code::kInvalidArgument);

  leecher.relay->Detach();
  leecher.engine->Stop();
  CHECK(leecher.engine->Progress(id).status().code() == Status::Code::kUnavailable);
  CHECK(leecher.engine->AddFile(f.entry, f.piece_size, "").status().code() ==
        Status::Code::kUnavailable);
  CHECK(leecher.engine->listen_port() == 0);
}

TEST_CASE("engine options are validated", "[p2p]") {
  EngineOptions o;
  CHECK(o.Validate().ok());
  o.listen = "127.0.0.1";
  CHECK(o.Validate().code() == Status::Code::kInvalidArgument);
  o.listen = "[::1]:6881";
  CHECK(o.Validate().ok());
  o.disk_threads = 0;
  CHECK(o.Validate().code() == Status::Code::kInvalidArgument);
}

}  // namespace testing
}  // namespace shoal
