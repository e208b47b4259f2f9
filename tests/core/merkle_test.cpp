#include "shoal/merkle.h"

#include <catch2/catch.hpp>

#include "shoal/sha256.h"

using namespace shoal;

TEST_CASE("a pad hash is the hash of two smaller pad hashes", "[merkle]") {
  REQUIRE(PadHash(0).IsZero());
  Sha256 h;
  CHECK(PadHash(1) == h.HashPair(PadHash(0), PadHash(0)));
  CHECK(PadHash(5) == h.HashPair(PadHash(4), PadHash(4)));
}

TEST_CASE("a merkle root pads odd levels with zero subtrees", "[merkle]") {
  Sha256 h;
  Digest a = h.Hash("a", 1), b = h.Hash("b", 1), c = h.Hash("c", 1);
  Digest expected = h.HashPair(h.HashPair(a, b), h.HashPair(c, PadHash(0)));
  CHECK(MerkleRoot({a, b, c}, 4) == expected);
  Digest wider = h.HashPair(expected, PadHash(2));
  CHECK(MerkleRoot({a, b, c}, 8) == wider);
  CHECK(MerkleRoot({a}, 1) == a);
}
