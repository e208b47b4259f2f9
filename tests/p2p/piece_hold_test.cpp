// The hand-on: a piece the owner has just read from the origin goes first
// to the chunk's next owner; other peers get it once that owner holds it,
// or once the hold runs out.
#include <catch2/catch.hpp>

#include "p2p/p2p_test_support.h"

namespace shoal {
namespace testing {

namespace {

using Clock = std::chrono::steady_clock;

// The owner: piece 1 of `f` is in its store from the start; piece 0 arrives
// "from the origin", held for `receiver_port` on 127.0.0.1 for `hold`.
FileTorrentId OwnerWithFreshPiece(Agent& owner, const TestFile& f, uint16_t receiver_port,
                                  std::chrono::milliseconds hold) {
  owner.Seed(f, 1, 2);
  FileTorrentId id = owner.Add(f);
  REQUIRE(owner.store->Put(f.chunks[0], f.data.data(), f.PieceBytes(0)).ok());
  REQUIRE(owner.engine->HoldPiece(id, 0, {{"127.0.0.1", receiver_port}}, hold).ok());
  REQUIRE(owner.engine->ChunkArrived(id, 0).ok());
  return id;
}

}  // namespace

TEST_CASE("a fresh piece goes to the chunk's next owner before any other peer", "[p2p][hand-on]") {
  TestFile f = MakeFile(31, 2 * 256 * 1024, 256 * 1024);  // 2 pieces
  Agent owner, next, other;
  FileTorrentId id = OwnerWithFreshPiece(owner, f, next.port(), std::chrono::seconds(30));

  other.Add(f);
  REQUIRE(other.engine->ConnectPeer(id, "127.0.0.1", owner.port()).ok());
  // The other peer asks for the held piece, and waits.
  REQUIRE(Eventually([&] { return owner.engine->Stats().requests_kept > 0; }));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CHECK_FALSE(other.store->Contains(f.chunks[0]));

  // The next owner connects, as a replica order does, and is served at once;
  // then the hold ends, long before its 30 s, and the other peer gets it too.
  next.Add(f);
  const auto handed_at = Clock::now();
  REQUIRE(next.engine->ConnectPeer(id, "127.0.0.1", owner.port()).ok());
  REQUIRE(Eventually([&] { return next.store->Contains(f.chunks[0]); }));
  // If the other peer waits on: was the hold handed (the next owner's HAVE
  // seen), and were its kept requests refused?
  auto owner_holds = [&] {
    EngineStats s = owner.engine->Stats();
    return "owner: " + std::to_string(s.holds_handed) + " holds handed, " +
           std::to_string(s.requests_kept) + " requests kept, " + std::to_string(s.pieces_held) +
           " pieces held";
  };
  const bool other_got = Eventually([&] { return other.store->Contains(f.chunks[0]); });
  INFO(owner_holds());
  REQUIRE(other_got);
  REQUIRE(other.WaitComplete(id));
  CHECK(Clock::now() - handed_at < std::chrono::seconds(10));
  CHECK(other.Materialized(f) == f.data);
  EngineStats s = owner.engine->Stats();
  CHECK(s.pieces_held == 1);
  CHECK(s.holds_handed == 1);
}

TEST_CASE("a held piece reaches other peers when no next owner comes for it", "[p2p][hand-on]") {
  TestFile f = MakeFile(32, 2 * 256 * 1024, 256 * 1024);
  Agent owner, other;
  const auto start = Clock::now();
  // Held for a peer that never connects (port 9 on loopback).
  FileTorrentId id = OwnerWithFreshPiece(owner, f, 9, std::chrono::seconds(3));
  other.Add(f);
  REQUIRE(other.engine->ConnectPeer(id, "127.0.0.1", owner.port()).ok());
  REQUIRE(Eventually([&] { return other.store->Contains(f.chunks[0]); }));
  const auto waited = Clock::now() - start;
  REQUIRE(other.WaitComplete(id));
  CHECK(waited >= std::chrono::milliseconds(2500));  // not before the hold ran out...
  CHECK(waited < std::chrono::seconds(12));          // ...and soon after: it was refused, not lost
  CHECK(owner.engine->Stats().holds_handed == 0);
  CHECK(other.Materialized(f) == f.data);
}

TEST_CASE("holding a piece needs a torrent and a piece in it", "[p2p][hand-on]") {
  TestFile f = MakeFile(33, 256 * 1024, 256 * 1024);
  Agent owner;
  FileTorrentId id = owner.Add(f);
  CHECK(owner.engine->HoldPiece(id, 1, {}, std::chrono::seconds(1)).code() ==
        Status::Code::kInvalidArgument);
  FileTorrentId unknown = id;
  unknown.mutable_data()[0] ^= 1;
  CHECK(owner.engine->HoldPiece(unknown, 0, {}, std::chrono::seconds(1)).IsNotFound());
}

}  // namespace testing
}  // namespace shoal
